"""Stdlib-only tests of admission (onepass/edge/admission.py): the key check's outcomes (off,
missing: 403, wrong: 401) and the in-flight slots (the cap, closing on SIGTERM, the drain's
wait). The schemes over HTTP are tested in test_security.py (test_auth_schemes).
Run: python3 -S -m unittest tests.unit.edge.test_admission
"""
import threading
import time
import unittest

from onepass.edge import admission
from onepass.errors import AuthInvalid, AuthMissing


class TestAuth(unittest.TestCase):
    def test_no_key_accepts_anything(self):
        """authorized: with auth off any header, or none, passes."""
        for header in (None, "", "Basic x", "Bearer wrong"):
            self.assertTrue(admission.authorized("", header), header)

    def test_missing_is_403_and_wrong_is_401(self):
        """check_auth: no header raises AuthMissing (403), a wrong one AuthInvalid (401)."""
        for header, error, status in ((None, AuthMissing, 403), ("", AuthMissing, 403),
                                      ("Bearer", AuthInvalid, 401),
                                      ("Token k-1", AuthInvalid, 401)):
            with self.assertRaises(error, msg=header) as ctx:
                admission.check_auth("k-1", header)
            self.assertEqual(ctx.exception.status, status)
        self.assertIsNone(admission.check_auth("k-1", "BEARER k-1 "))  # scheme any case, padded


class TestSlots(unittest.TestCase):
    def test_at_most_limit_in_flight(self):
        """take: True up to the limit, then False until one is given back."""
        slots = admission.Slots(2)
        self.assertEqual([slots.take() for _ in range(3)], [True, True, False])
        slots.give()
        self.assertTrue(slots.take())
        self.assertEqual(slots.busy, 2)

    def test_closing_refuses_new_work_and_waits_for_the_busy(self):
        """close_and_wait: nothing taken after it; it returns 0 once the busy one is given."""
        slots = admission.Slots(4)
        slots.take()
        threading.Timer(0.05, slots.give).start()
        started = time.monotonic()
        self.assertEqual(slots.close_and_wait(5.0), 0)
        self.assertLess(time.monotonic() - started, 4.0)
        self.assertFalse(slots.take())

    def test_the_drain_gives_up_at_its_timeout(self):
        """close_and_wait: with requests still in flight at the timeout, it returns their count."""
        slots = admission.Slots(4)
        slots.take(), slots.take()
        self.assertEqual(slots.close_and_wait(0.05), 2)


if __name__ == "__main__":
    unittest.main()
