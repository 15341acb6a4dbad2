"""Stdlib-only tests of the request record (onepass/steps/record.py): a record starts with only
what the request brought, a step's replace leaves the record it was given as it was, and `own`
counts the first reads.
Run: python3 -S -m unittest tests.unit.steps.test_record
"""
import unittest
from dataclasses import FrozenInstanceError, fields, replace

from onepass.steps.record import Record


class TestRecord(unittest.TestCase):
    def test_a_new_record_holds_only_what_the_request_brought(self):
        r = Record(None, "adapter", b"{}", {"h": "v"}, "hold")
        given = {"serving", "adapter", "raw", "headers", "hold"}
        for f in fields(Record):
            if f.name not in given:
                with self.subTest(field=f.name):
                    self.assertIn(getattr(r, f.name), (None, (), frozenset(), {}))

    def test_frozen_so_a_step_returns_a_new_record(self):
        r = Record(raw=b"{}")
        with self.assertRaises(FrozenInstanceError):
            r.raw = b"[]"
        later = replace(r, response={"ok": True})
        self.assertEqual((r.response, later.response, later.raw), (None, {"ok": True}, b"{}"))

    def test_own_counts_the_questions_with_a_first_read(self):
        self.assertEqual(Record(position=(0, None, 1, None)).own, 2)
        self.assertEqual(Record().own, 0)

    def test_starts_are_not_shared_between_records(self):
        self.assertIsNot(Record().starts, Record().starts)


if __name__ == "__main__":
    unittest.main()
