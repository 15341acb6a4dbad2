"""bench/parity/trace.py answers from a tape (--replay, no vLLM): the default corpus case on
the text profile's tape is answered, the module sequence it shows (--show) enters at the
pipeline and reaches the step modules in pipeline.STEPS' order, its counts are the sequence's,
and no request missed the tape.
Run: python3 -S -m unittest tests.unit.answers.test_trace_replay
"""
import re
import subprocess
import sys
import unittest

from onepass import pipeline
from tests.support.paths import FAST_PROFILE, ROOT
from tests.support.replay_engine import FIXTURES, tape_path


class TestTraceFromATape(unittest.TestCase):
    def run_trace(self, *extra):
        done = subprocess.run([sys.executable, "-S", str(ROOT / "bench" / "parity" / "trace.py"),
                               "--root", str(ROOT), "--replay",
                               str(tape_path(FIXTURES, FAST_PROFILE)), *extra],
                              capture_output=True, text=True, timeout=120, cwd=ROOT)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        return done.stdout

    def counts(self, out: str) -> dict:
        return {k: int(v) for k, v in re.findall(r"^(stops|distinct modules|returns) (\d+)$",
                                                 out, re.M)}

    def test_the_default_case_is_answered_and_counted(self):
        out = self.run_trace("--show")
        self.assertRegex(out, r"case s1_mixed_kinds \(/v1/systemone\) via \S+: answered")
        self.assertIn("0 misses", out)
        n = self.counts(out)
        shown = re.findall(r"^ *\d+ (onepass\S*)(   <- return)?$", out, re.M)
        sequence = [m for m, _ in shown]
        self.assertEqual(sequence[0], "onepass.pipeline")  # entered at Pipeline.decide
        steps = [step.__module__ for step in pipeline.STEPS]  # onepass.steps.parse, ...
        first_visits = list(dict.fromkeys(m for m in sequence if m in steps))
        self.assertEqual(first_visits, steps, out)  # each step's module, in the steps' order
        self.assertEqual((n["stops"], n["distinct modules"], n["returns"]),
                         (len(sequence), len(set(sequence)), sum(bool(r) for _, r in shown)))

    def test_passing_counts_fewer_stops(self):
        every, passing = self.counts(self.run_trace()), self.counts(self.run_trace("--passing"))
        self.assertLess(passing["stops"], every["stops"])
        self.assertGreater(passing["stops"], 0)


if __name__ == "__main__":
    unittest.main()
