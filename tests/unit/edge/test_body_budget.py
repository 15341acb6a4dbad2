"""Stdlib-only tests of the body budget (onepass/edge/body_budget.py): bytes held by every
request's body together, a wait for room bounded per request and then a retryable 529, a claim
larger than the budget going alone, requests that hold bytes going before those that hold none,
a small claim going past a large one, no deadlock when every holder waits to grow, and
everything returned on release.
Run: python3 -S -m unittest tests.unit.edge.test_body_budget
"""
import threading
import time
import unittest

from onepass import inflight
from onepass.edge.body_budget import Budget
from onepass.errors import DeadlineExceeded, Overloaded


def later(fn, *args) -> threading.Thread:
    """fn(*args) on a thread, started; its exception (if any) kept on the thread as `error`."""
    def run():
        try:
            fn(*args)
        except Overloaded as e:
            thread.error = e
    thread = threading.Thread(target=run, daemon=True)
    thread.error = None
    thread.start()
    return thread


def waiting(budget: Budget, n: int) -> None:
    """Until n holds wait for room (a test's threads have reached their take)."""
    deadline = time.monotonic() + 5
    while budget.waiting < n:
        if time.monotonic() > deadline:
            raise AssertionError(f"{budget.waiting} holds wait, not {n}")
        time.sleep(0.005)


class TestBudget(unittest.TestCase):
    def test_room_is_taken_and_given_back(self):
        budget = Budget(100, wait_s=1.0)
        a, b = budget.hold(), budget.hold()
        a.take(60)
        b.take(40)
        self.assertEqual((budget.used, a.held, b.held), (100, 60, 40))
        a.resize(10)  # smaller: returned at once
        self.assertEqual((budget.used, a.held), (50, 10))
        a.release()
        b.release()
        b.release()  # twice is harmless
        self.assertEqual(budget.used, 0)

    def test_a_wait_for_room_ends_when_room_is_given(self):
        budget = Budget(100, wait_s=5.0)
        first, second = budget.hold(), budget.hold()
        first.take(80)
        thread = later(second.take, 50)
        waiting(budget, 1)
        self.assertEqual(second.held, 0)
        first.release()
        thread.join(5)
        self.assertEqual((thread.error, second.held, budget.used), (None, 50, 50))

    def test_no_room_in_time_is_a_retryable_529(self):
        """The wait is bounded per request (all its takes together): then Overloaded with
        retry-after-ms, holding nothing more than before."""
        budget = Budget(100, wait_s=0.2)
        budget.hold().take(90)
        late = budget.hold()
        started = time.monotonic()
        with self.assertRaises(Overloaded) as ctx:
            late.take(20)
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertEqual((ctx.exception.status, ctx.exception.retry_after_ms), (529, 1000))
        self.assertIn("100 bytes", ctx.exception.message)
        self.assertEqual((late.held, budget.used, budget.waiting), (0, 90, 0))

    def test_the_requests_deadline_bounds_its_wait(self):
        """A deadline sooner than the budget's wait ends the wait at the deadline with a 504
        (no work was started); a later one leaves the budget's 529."""
        budget = Budget(100, wait_s=5.0)
        budget.hold().take(90)
        with inflight.request("r1", time.monotonic() + 0.2):
            started = time.monotonic()
            with self.assertRaises(DeadlineExceeded) as ctx:
                budget.hold().take(20)
            self.assertLess(time.monotonic() - started, 1.0)
        self.assertIn("body budget", ctx.exception.message)
        short = Budget(100, wait_s=0.2)
        short.hold().take(90)
        with inflight.request("r2", time.monotonic() + 30):
            with self.assertRaises(Overloaded):
                short.hold().take(20)
        self.assertEqual((budget.waiting, short.waiting), (0, 0))

    def test_a_claim_larger_than_the_budget_goes_alone(self):
        budget = Budget(100, wait_s=5.0)
        small, big = budget.hold(), budget.hold()
        small.take(10)
        thread = later(big.take, 500)
        waiting(budget, 1)
        small.release()
        thread.join(5)
        self.assertEqual((thread.error, big.held), (None, 500))
        big.take(50)  # alone, it may grow further
        self.assertEqual(budget.used, 550)

    def test_a_request_holding_bytes_goes_before_newcomers(self):
        """Room given back goes first to a request that holds bytes and needs more (finishing,
        it frees them) rather than to one that holds none, even one waiting longer: the room a
        holder waits for is kept from newcomers."""
        budget = Budget(100, wait_s=1.0)
        blocker, growing, newcomer = budget.hold(), budget.hold(), budget.hold()
        blocker.take(60)
        growing.take(30)
        new = later(newcomer.take, 65)
        waiting(budget, 1)
        grow = later(growing.take, 65)
        waiting(budget, 2)
        blocker.release()  # room for one of the two 65s
        grow.join(5)
        new.join(5)
        self.assertEqual((grow.error, growing.held), (None, 95))
        self.assertIsInstance(new.error, Overloaded)
        self.assertEqual(newcomer.held, 0)

    def test_a_small_claim_goes_past_a_large_one_that_waits(self):
        """A normal decision's small claim is not kept behind a large claim that does not fit
        (that one waits for room, at most its wait)."""
        budget = Budget(100, wait_s=5.0)
        blocker, large, small = budget.hold(), budget.hold(), budget.hold()
        blocker.take(90)
        thread = later(large.take, 50)
        waiting(budget, 1)
        small.take(5)
        self.assertEqual((small.held, large.held, budget.used), (5, 0, 95))
        blocker.release()
        thread.join(5)
        self.assertEqual((thread.error, large.held, budget.used), (None, 50, 55))

    def test_when_every_holder_waits_to_grow_the_longest_waiting_goes_ahead(self):
        """Two requests each holding 50 of 100 and each needing 30 more would wait for each
        other until both time out: the first to wait goes ahead, past the budget, and goes on
        alone as it takes more (not the two in turns, each a piece further past it); the other
        follows once it is given back."""
        budget = Budget(100, wait_s=5.0)
        first, second = budget.hold(), budget.hold()
        first.take(50)
        second.take(50)
        thread = later(first.take, 30)
        waiting(budget, 1)
        self.assertEqual(first.held, 50)  # the other may still give room back
        later_one = later(second.take, 30)
        thread.join(5)
        self.assertEqual((thread.error, first.held, budget.used), (None, 80, 130))
        first.take(30)  # it goes on alone; the other still waits
        time.sleep(0.05)
        self.assertEqual((second.held, budget.used), (50, 160))  # over by one request only
        first.release()
        later_one.join(5)
        self.assertEqual((later_one.error, second.held, budget.used), (None, 80, 80))


if __name__ == "__main__":
    unittest.main()
