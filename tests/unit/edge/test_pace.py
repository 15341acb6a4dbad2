"""Stdlib tests of the expected time to answer (onepass/edge/pace.py), on a clock the test moves.
Run: python3 -m unittest tests.unit.edge.test_pace
"""
import random
import threading
import unittest

from onepass.edge.pace import Pace
from onepass.errors import DeadlineExceeded


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class TestPace(unittest.TestCase):
    def setUp(self):
        self.clock = Clock()
        self.pace = Pace(weight=0.5, clock=self.clock)

    def answer(self, seconds):
        with self.pace.timed():
            self.clock.now += seconds

    def test_nothing_answered_expects_nothing(self):
        self.assertEqual(self.pace.expected_s(), 0.0)
        self.assertIsNone(self.pace.share)

    def test_a_lone_decision_is_its_own_share(self):
        self.answer(2.0)
        self.assertAlmostEqual(self.pace.share, 2.0)
        self.assertAlmostEqual(self.pace.expected_s(), 2.0)  # nothing in flight: share x 1

    def test_two_side_by_side_share_the_engine(self):
        # both run the same 2 s together: each had 2 s of latency beside a mean of 2 decisions,
        # so each is 1 s of work; a third admitted beside two running is expected to take 3 s
        first, second = self.pace.timed(), self.pace.timed()
        first.__enter__()
        second.__enter__()
        self.clock.now += 2.0
        first.__exit__(None, None, None)
        second.__exit__(None, None, None)
        self.assertAlmostEqual(self.pace.share, 1.0)
        running = [self.pace.timed() for _ in range(2)]  # kept: a dropped one would exit
        for run in running:
            run.__enter__()
        self.assertAlmostEqual(self.pace.expected_s(), 3.0)

    def test_a_failure_is_no_sample(self):
        self.answer(2.0)
        with self.assertRaises(ValueError):
            with self.pace.timed():
                self.clock.now += 50.0
                raise ValueError("a 4xx or an engine error says nothing of the engine's pace")
        self.assertAlmostEqual(self.pace.share, 2.0)
        self.assertEqual(self.pace.busy, 0)

    def test_the_average_moves_by_its_weight(self):
        self.answer(2.0)
        self.answer(4.0)
        self.assertAlmostEqual(self.pace.share, 3.0)  # 2 + 0.5 x (4 - 2)

    def test_the_margin_settles_where_one_in_twenty_runs_over(self):
        # the share held at 1 s (weight 0): lone decisions of 0.5 to 1.5 s, uniform, whose 95th
        # percentile is 1.45 s; expected_s is then the time 95 % of them finish by
        pace = Pace(weight=0.0, clock=self.clock)
        self.pace = pace
        self.answer(1.0)
        rng = random.Random(3)
        for _ in range(4000):
            self.answer(rng.uniform(0.5, 1.5))
        self.assertAlmostEqual(pace.margin, 1.45, delta=0.08)
        self.assertAlmostEqual(pace.expected_s(), pace.margin)

    def test_a_decision_stopped_at_its_deadline_raises_the_margin(self):
        self.answer(1.0)
        before = self.pace.margin
        with self.assertRaises(DeadlineExceeded):
            with self.pace.timed():
                self.clock.now += 0.1
                raise DeadlineExceeded()
        self.assertGreater(self.pace.margin, before)
        self.assertAlmostEqual(self.pace.share, 1.0)  # no answer: no sample of the share

    def test_threads_leave_it_balanced(self):
        pace = Pace()
        def run():
            for _ in range(200):
                with pace.timed():
                    pass
        threads = [threading.Thread(target=run) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(pace.busy, 0)


if __name__ == "__main__":
    unittest.main()


class TestPerCost(unittest.TestCase):
    """The estimate per token of work: one client's long decisions do not make another's
    cheap one expected long (server.too_late refuses at the expected time)."""

    def setUp(self):
        self.clock = Clock()
        self.pace = Pace(weight=0.5, clock=self.clock)

    def answer(self, seconds, cost=None):
        with self.pace.timed() as timing:
            timing.cost = cost
            self.clock.now += seconds

    def test_a_cheap_decision_is_expected_at_its_own_cost(self):
        for _ in range(5):
            self.answer(10.0, cost=100_000)  # one client's long decisions
        long, cheap = self.pace.expected_s(100_000), self.pace.expected_s(1_000)
        self.assertAlmostEqual(long, self.pace.expected_s())  # the average is the long one
        self.assertAlmostEqual(cheap / long, 1_000 / 100_000)  # per cost, not per decision
        self.assertAlmostEqual(self.pace.least_s() / long, 64 / 100_000)

    def test_the_rate_is_seconds_per_token_beside_the_others(self):
        self.answer(2.0, cost=500)
        self.assertAlmostEqual(self.pace.rate, 2.0 / 500)
        with self.pace.timed() as timing:  # priced, and running: itself among the busy
            timing.cost = 500
            self.assertAlmostEqual(self.pace.expected_s(500, running=True),
                                   self.pace.expected_s(500) / 2)
            self.clock.now += 1.0

    def test_a_price_is_never_extrapolated_upward(self):
        """After small decisions, a large one is expected at the average decision's time, not
        at the small ones' rate times its price (their fixed part would make it look long)."""
        for _ in range(5):
            self.answer(1.0, cost=1_000)
        self.assertAlmostEqual(self.pace.expected_s(50_000), self.pace.expected_s())
        self.assertAlmostEqual(self.pace.expected_s(500) * 2, self.pace.expected_s())

    def test_unpriced_decisions_keep_the_average(self):
        self.answer(2.0)
        self.assertIsNone(self.pace.rate)
        self.assertAlmostEqual(self.pace.least_s(), self.pace.expected_s())

    def test_a_deadline_is_judged_by_the_requests_own_cost(self):
        """After one client's 10 s decisions, another's request with 1 s left is not refused
        at its slot (unpriced), nor priced cheap at its turn; priced as long as those, it is
        (529, before its first read)."""
        from onepass import inflight
        from onepass.errors import Overloaded
        for _ in range(5):
            self.answer(10.0, cost=100_000)
        call = inflight.Call("cheap")
        call.limit(1.0)
        self.pace.check(call)  # at its slot (server.entered), before its turn
        with self.pace.timed(call) as priced:  # its turn: the fit step prices it
            priced(1_000)
            with self.assertRaises(Overloaded):
                priced(100_000)
