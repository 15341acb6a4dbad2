"""Stdlib tests of the overload bench's accounting (bench/measure/overload.py): goodput counts
answers received in time only, and the wasted share is the engine tokens of every request whose
answer nobody received, joined from the access log by request id.
Run: python3 -m unittest tests.unit.bench.test_overload
"""
import json
import sys
import tempfile
import unittest
from pathlib import Path

from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "bench" / "measure"))
import overload  # noqa: E402


def result(rid, status, seconds, in_time, retry_after=False):
    return {"id": rid, "status": status, "seconds": seconds, "in_time": in_time,
            "retry_after": retry_after}


class TestAccounting(unittest.TestCase):
    def test_goodput_and_waste(self):
        results = [result("ovl-t-0", 200, 1.0, True), result("ovl-t-1", 200, 2.0, True),
                   result("ovl-t-2", 200, 6.0, False),  # answered after its client left
                   result("ovl-t-3", 529, 0.01, False, True), result("ovl-t-4", 504, 5.0, False),
                   result("ovl-t-5", 0, 5.0, False)]
        tokens = {"ovl-t-0": 100, "ovl-t-1": 100, "ovl-t-2": 100, "ovl-t-3": 0,
                  "ovl-t-4": 50, "ovl-t-5": 150}
        row = overload.summary(results, tokens, seconds=2.0, rate=3.0)
        self.assertEqual((row["in_time"], row["goodput_per_s"]), (2, 1.0))
        self.assertEqual((row["late"], row["refused"], row["refused_with_retry_after"],
                          row["deadline_504"], row["gave_up"]), (1, 1, 1, 1, 1))
        self.assertEqual((row["engine_tokens"], row["wasted_tokens"]), (500, 300))
        self.assertEqual(row["wasted_share"], 0.6)
        self.assertEqual(row["unlogged"], 0)

    def test_tokens_are_joined_from_this_runs_log_lines(self):
        lines = ["INFO other line", '2026 INFO {"ts": 1, "request_id": "ovl-r1-1x-0", '
                 '"status": 200, "engine_tokens": 42}',
                 '{"ts": 1, "request_id": "ovl-r0-1x-0", "engine_tokens": 7}',  # another run
                 '{"ts": 1, "request_id": "ovl-r1-1x-1", "status": 499, "engine_tokens": 9}']
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write("\n".join(lines) + "\n")
        self.addCleanup(Path(f.name).unlink)
        self.assertEqual(overload.tokens_by_id(f.name, "r1-1x"),
                         {"ovl-r1-1x-0": 42, "ovl-r1-1x-1": 9})

    def test_each_body_is_a_new_state(self):
        self.assertNotEqual(json.loads(overload.body(1))["state"],
                            json.loads(overload.body(2))["state"])


if __name__ == "__main__":
    unittest.main()
