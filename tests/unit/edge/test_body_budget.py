"""Stdlib-only tests of the body budget (onepass/edge/body_budget.py): bytes held by every
request's body together, a wait for room bounded per request and then a retryable 529, a hold
past a share in the lane beside the budget, requests that hold bytes going before those that
hold none, a small claim going past a large one, no deadlock when every holder waits to grow,
each source address's share (a new claim past it refused at once, a growing one waiting for its
own requests' room), the lane's holds one per address and within the budget's size together
(one slow upload keeps no other address's large body out), a request's waits bounded together
(not by the time since its first claim: a body is claimed piece by piece as it arrives), a
hold's claims shared by threads, and everything returned on release. The tests of the
budget's order give every hold one source and that source the whole budget.
Run: python3 -S -m unittest tests.unit.edge.test_body_budget
"""
import threading
import time
import unittest
from types import SimpleNamespace

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
        budget = Budget(100, wait_s=1.0, per_source=100)
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
        budget = Budget(100, wait_s=5.0, per_source=100)
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
        budget = Budget(100, wait_s=0.2, per_source=100)
        budget.hold().take(90)
        late = budget.hold()
        refused = later(late.take, 20)
        refused.join(10)  # a guard: an unbounded wait never ends (no one gives room back)
        self.assertFalse(refused.is_alive())
        self.assertIsInstance(refused.error, Overloaded)
        ctx = SimpleNamespace(exception=refused.error)
        self.assertEqual((ctx.exception.status, ctx.exception.retry_after_ms), (529, 1000))
        self.assertIn("100 bytes", ctx.exception.message)
        self.assertEqual((late.held, budget.used, budget.waiting), (0, 90, 0))

    def test_the_requests_deadline_bounds_its_wait(self):
        """A deadline sooner than the budget's wait ends the wait at the deadline with a 504
        (no work was started); a later one leaves the budget's 529."""
        budget = Budget(100, wait_s=5.0, per_source=100)
        budget.hold().take(90)
        with inflight.request("r1", time.monotonic() + 0.2):
            with self.assertRaises(DeadlineExceeded) as ctx:  # the wait's end would be a 529
                budget.hold().take(20)
        self.assertIn("body budget", ctx.exception.message)
        short = Budget(100, wait_s=0.2, per_source=100)
        short.hold().take(90)
        with inflight.request("r2", time.monotonic() + 30):
            with self.assertRaises(Overloaded):
                short.hold().take(20)
        self.assertEqual((budget.waiting, short.waiting), (0, 0))

    def test_a_hold_past_a_share_goes_to_the_lane_beside_the_budget(self):
        """A claim past an address's share (here the whole budget) takes the lane at once,
        beside the budget, its bytes out of it, so normal claims go on; a second such claim
        waits for the lane (a 529 past its wait); a lane hold resized to a share or less is
        back in the budget and the lane is free."""
        budget = Budget(100, wait_s=5.0, per_source=100)
        small, big, other = budget.hold(), budget.hold(), budget.hold()
        small.take(10)
        big.take(5)
        big.take(500)  # at once: past the share, beside the budget
        self.assertEqual((big.held, budget.used, budget.lane), (505, 10, big))
        small.take(80)  # the budget is the normal requests'
        short = Budget(100, wait_s=0.1, per_source=100)
        first, second = short.hold(), short.hold()
        first.take(200)
        with self.assertRaises(Overloaded) as ctx:
            second.take(150)
        self.assertIn("one at a time", ctx.exception.message)
        thread = later(other.take, 300)
        waiting(budget, 1)
        big.resize(40)  # back in the budget, over it by at most a share
        thread.join(5)
        self.assertEqual((thread.error, budget.lane, budget.used), (None, other, 130))
        other.release(), big.release(), small.release()
        self.assertEqual((budget.used, budget.lane, budget.holders), (0, None, 0))

    def test_the_lane_holds_one_request_per_address_and_others_beside_it(self):
        """Issue 67: one slow upload in the lane (past a share of 30) kept every other large
        body out for its whole upload. Now another address's large hold joins the lane at
        once; a second from the same address waits (529 past its wait, reason its address);
        past the lane's room (the budget's size) a newcomer waits, and only the oldest hold
        grows past it; out of the lane, the room is another's."""
        budget = Budget(100, wait_s=0.1, per_source=30)
        slow, other = budget.hold("a"), budget.hold("b")
        slow.take(40)
        other.take(50)  # at once, beside the slow one
        self.assertEqual((budget.lane_holds, budget.lane_used, budget.used),
                         ([slow, other], 90, 0))
        with self.assertRaises(Overloaded) as ctx:
            budget.hold("a").take(35)
        self.assertIn("your address", ctx.exception.message)
        with self.assertRaises(Overloaded):
            budget.hold("c").take(35)  # 125 of the lane's 100
        with self.assertRaises(Overloaded):
            other.take(20)  # not the oldest: within the lane's room only
        slow.take(100)  # the oldest grows alone past it
        self.assertEqual((slow.held, other.held, budget.lane_used), (140, 50, 190))
        third = budget.hold("c")
        thread = later(third.take, 35)
        waiting(budget, 1)
        slow.release()
        thread.join(5)
        self.assertEqual((thread.error, budget.lane_holds, budget.lane_used),
                         (None, [other, third], 85))
        other.release(), third.release()
        self.assertEqual((budget.lane_holds, budget.lane_used, budget.used), ([], 0, 0))

    def test_waits_are_bounded_together_not_from_the_first_claim(self):
        """A body claimed as it arrives takes many times over its upload: a piece that waits
        long after the first claim still gets the request's whole wait (it was refused at
        once once `wait_s` had passed since the first claim); the waits add up to at most
        `wait_s`."""
        budget = Budget(100, wait_s=0.3, per_source=100)
        upload, blocker = budget.hold(), budget.hold()
        upload.take(10)
        time.sleep(0.4)  # the upload goes on, waiting for nothing
        blocker.take(85)
        thread = later(upload.take, 10)  # waits for room
        waiting(budget, 1)
        blocker.resize(70)
        thread.join(5)
        self.assertEqual((thread.error, upload.held), (None, 20))
        self.assertGreater(upload.patience, 0)
        upload.patience = 0.0  # its waits used up: no room now is a 529 at once
        with self.assertRaises(Overloaded):
            upload.take(20)

    def test_a_holds_claims_are_shared_by_threads(self):
        """shared: a request's image fetches claim on one hold at once, one take at a time;
        once one is refused every later claim is refused the same way (the others stop)."""
        budget = Budget(100, wait_s=0.05, per_source=100)
        hold = budget.hold()
        hold.take(10)
        claim = hold.shared()
        threads = [threading.Thread(target=claim, args=(5,)) for _ in range(8)]
        [t.start() for t in threads]
        [t.join(5) for t in threads]
        self.assertEqual((hold.held, budget.used), (50, 50))
        blocker = budget.hold()
        blocker.take(45)
        with self.assertRaises(Overloaded) as first:
            claim(20)
        blocker.release()  # room again: a refused request claims nothing more
        with self.assertRaises(Overloaded) as again:
            claim(1)
        self.assertIs(again.exception, first.exception)
        self.assertEqual(hold.held, 50)

    def test_a_request_holding_bytes_goes_before_newcomers(self):
        """Room given back goes first to a request that holds bytes and needs more (finishing,
        it frees them) rather than to one that holds none, even one waiting longer: the room a
        holder waits for is kept from newcomers."""
        budget = Budget(100, wait_s=1.0, per_source=100)
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
        budget = Budget(100, wait_s=5.0, per_source=100)
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
        budget = Budget(100, wait_s=5.0, per_source=100)
        first, second = budget.hold(), budget.hold()
        first.take(50)
        second.take(50)
        thread = later(first.take, 30)
        waiting(budget, 1)
        self.assertEqual(first.held, 50)  # the other may still give room back
        later_one = later(second.take, 30)
        thread.join(5)
        self.assertEqual((thread.error, first.held, budget.used), (None, 80, 130))
        first.release()
        later_one.join(5)
        self.assertEqual((later_one.error, second.held, budget.used), (None, 80, 80))


class TestShare(unittest.TestCase):
    def test_a_source_past_its_share_is_refused_or_waits_for_its_own(self):
        """A share of 30 of 100: a source's new claim past it is a 529 at once naming the
        address's share (retry-after-ms) while another source's is taken; a source's request
        that needs more once its body is in waits for that source's own to give room back
        (529 past the wait). One request past the share goes to the lane instead."""
        budget = Budget(100, wait_s=5.0, per_source=30)
        a1, a2, b = budget.hold("a"), budget.hold("a"), budget.hold("b")
        a1.take(20)
        refused = later(a2.take, 20)
        refused.join(budget.wait_s / 2)  # a guard: refused at once, not at the wait's end
        self.assertFalse(refused.is_alive())
        ctx = SimpleNamespace(exception=refused.error)
        self.assertIn("your address", ctx.exception.message)
        self.assertIsNotNone(ctx.exception.retry_after_ms)
        b.take(20)  # another source: at once
        a2.take(5)
        thread = later(a2.take, 15)  # growing past the share: waits for its own
        waiting(budget, 1)
        a1.resize(10)  # its own source gives room back
        thread.join(5)
        self.assertEqual((thread.error, dict(budget.by_source)), (None, {"a": 30, "b": 20}))
        short = Budget(100, wait_s=0.1, per_source=30)
        s1, s2 = short.hold("a"), short.hold("a")
        s1.take(20), s2.take(5)
        with self.assertRaises(Overloaded):
            s2.take(10)  # never given back: a 529 past the wait
        s1.release(), s2.release()
        s1.take(60)  # past its share: in the lane, beside the budget
        self.assertEqual((dict(short.by_source), short.lane, s1.held), ({}, s1, 60))
        s1.release()
        a1.release(), a2.release(), b.release()
        self.assertEqual((budget.used, dict(budget.by_source), short.used), (0, {}, 0))

    def test_a_sources_held_back_growth_keeps_no_room_from_others(self):
        """Room a grower waits for is kept from newcomers, unless its own source's share
        holds it back: then another source's newcomer goes at once."""
        budget = Budget(100, wait_s=5.0, per_source=30)
        a1, a2, b = budget.hold("a"), budget.hold("a"), budget.hold("b")
        a1.take(10), a2.take(10)
        thread = later(a2.take, 15)  # past its source's share while a1 holds bytes
        waiting(budget, 1)
        b.take(50)  # waiting, it would get a 529 past the wait: nothing gives room back meanwhile
        a1.release()  # now alone in its source: it grows once the budget has room
        b.release()
        thread.join(5)
        self.assertEqual((thread.error, a2.held), (None, 25))
        a2.release()

    def test_when_every_request_of_a_source_waits_to_grow_the_oldest_goes_on(self):
        """Two requests of one address each hold 15 of its 30 and each needs 10 more: neither
        would give room back, so the first to wait goes past the share; the other follows once
        it is given back."""
        budget = Budget(100, wait_s=5.0, per_source=30)
        first, second = budget.hold("a"), budget.hold("a")
        first.take(15), second.take(15)
        grow_first = later(first.take, 10)
        waiting(budget, 1)
        grow_second = later(second.take, 10)
        grow_first.join(5)
        self.assertEqual((grow_first.error, first.held, budget.by_source["a"]), (None, 25, 40))
        first.release()
        grow_second.join(5)
        self.assertEqual((grow_second.error, second.held), (None, 25))
        second.release()
        self.assertEqual((budget.used, dict(budget.holders_by)), (0, {}))

    def test_the_default_share_is_a_quarter(self):
        self.assertEqual(Budget(128 << 20, wait_s=1.0).per_source, 32 << 20)


if __name__ == "__main__":
    unittest.main()
