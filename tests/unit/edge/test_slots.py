"""Stdlib-only tests of the in-flight slots (onepass/edge/slots.py): the server's cap, each
source address's share, closing on SIGTERM and the drain's wait. Over HTTP, with a second
loopback address as the other source: tests/live/test_hostile_clients_live.py.
Run: python3 -S -m unittest tests.unit.edge.test_slots
"""
import threading
import unittest

from onepass.edge import slots
from onepass.edge.slots import CLOSED, FULL, SOURCE, Slots


class TestShare(unittest.TestCase):
    def test_a_quarter_unless_asked_never_past_the_whole(self):
        self.assertEqual(slots.share(64, 0), 16)
        self.assertEqual(slots.share(3, 0), 1)  # at least the floor
        self.assertEqual(slots.share(256, 0, floor=100), 100)
        self.assertEqual(slots.share(64, 40), 40)
        self.assertEqual(slots.share(64, 500), 64)


class TestSlots(unittest.TestCase):
    def test_at_most_limit_in_flight(self):
        """take: None (taken) up to the limit, then FULL until one is given back."""
        s = Slots(2, per_source=2)
        self.assertEqual([s.take() for _ in range(3)], [None, None, FULL])
        s.give()
        self.assertIsNone(s.take())
        self.assertEqual(s.busy, 2)

    def test_a_source_past_its_share_is_refused_and_others_are_not(self):
        """With a share of 2 of 4: a third from one address is SOURCE (its own refusal, not
        FULL), another address still takes slots; refusal() says the same without taking."""
        s = Slots(4, per_source=2)
        self.assertEqual([s.take("a"), s.take("a"), s.take("a")], [None, None, SOURCE])
        self.assertEqual(s.refusal("a"), SOURCE)
        self.assertIsNone(s.refusal("b"))
        self.assertEqual([s.take("b"), s.take("b")], [None, None])
        self.assertEqual(s.take("c"), FULL)
        s.give("a")
        self.assertIsNone(s.take("a"))
        self.assertEqual((s.busy, dict(s.held)), (4, {"a": 2, "b": 2}))

    def test_the_default_share_is_a_quarter(self):
        s = Slots(64)
        self.assertEqual([s.take("x") for _ in range(17)].count(None), 16)

    def test_closing_refuses_new_work_and_waits_for_the_busy(self):
        """close_and_wait: nothing taken after it; it returns 0 once the busy one is given."""
        s = Slots(4)
        s.take()
        threading.Timer(0.05, s.give).start()
        got = []
        closing = threading.Thread(target=lambda: got.append(s.close_and_wait(600)), daemon=True)
        closing.start()
        closing.join(10)  # a guard: not woken by the give, it would wait its 600 s
        self.assertEqual(got, [0])
        self.assertEqual(s.take(), CLOSED)

    def test_the_drain_gives_up_at_its_timeout(self):
        """close_and_wait: with requests still in flight at the timeout, it returns their count."""
        s = Slots(4, per_source=4)
        s.take(), s.take()
        self.assertEqual(s.close_and_wait(0.05), 2)


if __name__ == "__main__":
    unittest.main()
