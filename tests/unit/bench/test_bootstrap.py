"""Stdlib-only tests of bench/lib/bootstrap.py, both of its uses: rows compared with the first
(`bootstrap.py ROW.json ROW.json`) and models compared per unit of latency (`--model NAME
EVAL.json LATENCY.txt`). Brier skill against the uniform answer, intervals that hold the point
estimate and are reproducible, a paired difference of a row with itself, records told apart by
question, only the records every row has compared, the per-second columns.
Run: python3 -S -m unittest tests.unit.bench.test_bootstrap
"""
import contextlib
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench" / "lib"))  # bench/ is scripts, not a package
import bootstrap  # noqa: E402


def rec(i: int, probs: dict, gold: str, qid: str = "q") -> dict:
    """A record as bench/measure/evaluate.py writes it (metrics.record with id and qid)."""
    return {"task": "t", "id": str(i), "qid": qid, "kind": "choice", "probabilities": probs,
            "gold_key": gold, "top_key": max(probs, key=probs.get)}


def run(*argv) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bootstrap.main([*argv, "--resamples", "50"])
    return out.getvalue()


class Measures(unittest.TestCase):
    def test_uniform_has_no_skill_and_perfect_has_all(self):
        uniform = [rec(i, {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}, "a") for i in range(4)]
        perfect = [rec(i, {"a": 1.0, "b": 0.0}, "a") for i in range(4)]
        self.assertAlmostEqual(bootstrap.skill(uniform)["brier_skill"], 0.0)
        self.assertAlmostEqual(bootstrap.skill(uniform)["chance"], 1 / 3)
        self.assertAlmostEqual(bootstrap.skill(perfect)["brier_skill"], 1.0)

    def test_intervals_hold_the_estimate_and_repeat(self):
        records = [rec(i, {"a": 0.7, "b": 0.3}, "a" if i % 3 else "b", qid)
                   for i in range(60) for qid in ("x", "y")]
        bands = bootstrap.intervals(records, 300)
        point = bootstrap.skill(records)
        for m in ("accuracy", "brier", "brier_skill"):
            self.assertLessEqual(bands[m][0], point[m])
            self.assertGreaterEqual(bands[m][1], point[m])
        self.assertEqual(bands, bootstrap.intervals(records, 300))
        self.assertNotEqual(bands, bootstrap.intervals(records, 300, seed=1))
        self.assertEqual(bands["order_sensitivity"], (None, None))

    def test_information_needs_both_intervals_above_zero(self):
        """The default profile's rule: a row that is right and confident most of the time gives
        information; the uniform answer (skill 0, accuracy at chance) and a row right more
        often than chance but over-confident when wrong (skill below 0) do not."""
        sure = [rec(i, {"a": 0.8, "b": 0.2}, "a" if i % 5 else "b") for i in range(80)]
        uniform = [rec(i, {"a": 0.5, "b": 0.5}, "a" if i % 2 else "b") for i in range(80)]
        rash = [rec(i, {"a": 1.0, "b": 0.0}, "a" if i % 3 else "b") for i in range(80)]
        self.assertAlmostEqual(bootstrap.skill(sure)["over_chance"], 0.3)
        self.assertTrue(bootstrap.informative(bootstrap.intervals(sure, 200)))
        self.assertFalse(bootstrap.informative(bootstrap.intervals(uniform, 200)))
        self.assertGreater(bootstrap.intervals(rash, 200)["over_chance"][0], 0)
        self.assertFalse(bootstrap.informative(bootstrap.intervals(rash, 200)))

    def test_paired_with_itself_is_zero(self):
        records = [rec(i, {"a": 0.6, "b": 0.4}, "a" if i % 2 else "b") for i in range(20)]
        d = bootstrap.paired(records, records, 100)
        self.assertEqual(d["n"], 20)
        self.assertEqual(d["accuracy"], (0.0, 0.0, 0.0))

    def test_questions_of_one_decision_are_told_apart(self):
        """Two questions of a decision with the same gold answer are two records, not one."""
        records = [rec(0, {"a": 0.9, "b": 0.1}, "a", "x"), rec(0, {"a": 0.2, "b": 0.8}, "a", "y")]
        self.assertEqual(bootstrap.paired(records, records, 10)["n"], 2)
        self.assertEqual([len(r) for r in bootstrap.shared([records, records])], [2, 2])


class CommandLine(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name: str, text: str) -> str:
        path = Path(self.dir.name) / name
        path.write_text(text)
        return str(path)

    def row(self, name: str, records: list) -> str:
        return self.write(name, json.dumps({"records": records}))

    def latency(self, name: str, p50_ms: float) -> str:
        """What bench/measure/latency.py prints: a text line, then each case's JSON line."""
        lines = [f"(b) four questions: shim p50 {p50_ms} ms",
                 json.dumps({"case": "(a) one choice", "shim_p50_ms": 1.0}),
                 json.dumps({"case": "b: four questions", "shim_p50_ms": p50_ms})]
        return self.write(name, "\n".join(lines) + "\n")

    def test_rows_compared_with_the_first(self):
        """`bootstrap.py ROW.json ROW.json`: a row per file, named by its path, computed on the
        records both have; the second against the first, paired; no latency columns."""
        base = [rec(i, {"a": 0.6, "b": 0.4}, "a") for i in range(10)]
        worse = [rec(i, {"a": 0.4, "b": 0.6}, "a") for i in range(12)]  # two more decisions
        first, second = self.row("first.json", base), self.row("second.json", worse)
        out = run(first, second)
        self.assertIn("10 records in every row", out)
        self.assertIn(f"| {first} | 10 | 1.000 [1.000, 1.000] |", out)
        self.assertIn(f"| {second} | 10 | 0.000 [0.000, 0.000] |", out)
        self.assertNotIn("p50", out)
        self.assertIn(f"{second} minus {first} on 10 paired questions: accuracy "
                      "-1.000 [-1.000, -1.000]", out)

    def test_models_per_unit_of_latency(self):
        """`--model NAME EVAL.json LATENCY.txt`: the case's p50 and the skill per second."""
        perfect = [rec(i, {"a": 1.0, "b": 0.0}, "a") for i in range(8)]
        uniform = [rec(i, {"a": 0.5, "b": 0.5}, "b") for i in range(8)]
        out = run("--model", "fast", self.row("p.json", perfect), self.latency("p.txt", 500),
                  "--model", "slow", self.row("u.json", uniform), self.latency("u.txt", 2000))
        self.assertIn("| p50 ms (b) | Brier skill / s | accuracy over chance / s |", out)
        # perfect: skill 1, accuracy 1 over chance 0.5, per 0.5 s
        self.assertRegex(out, r"\| fast \| 8 \| .* \| 500 \| 2\.0000 \| 1\.0000 \|\n")
        # uniform: skill 0; ties go to the first key, so accuracy 0 here: (0 - 0.5) / 2 s
        self.assertRegex(out, r"\| slow \| 8 \| .* \| 2,000 \| 0\.0000 \| -0\.2500 \|\n")
        self.assertIn("slow minus fast on 8 paired questions: accuracy -1.000", out)

    def test_rows_and_models_together(self):
        """ROW.json rows come first (the base); a row without a latency file shows dashes."""
        records = [rec(i, {"a": 0.7, "b": 0.3}, "a") for i in range(6)]
        base = self.row("base.json", records)
        out = run(base, "--model", "m", self.row("m.json", records), self.latency("m.txt", 1000))
        self.assertIn(f"| {base} | 6 |", out)
        self.assertRegex(out, rf"\| {base} \| 6 \| .* \| - \| - \| - \|\n")
        self.assertIn(f"m minus {base} on 6 paired questions: accuracy +0.000 [+0.000, +0.000]",
                      out)

    def test_a_latency_file_without_the_case_is_an_error(self):
        records = [rec(0, {"a": 1.0, "b": 0.0}, "a")]
        with self.assertRaises(SystemExit) as stop, contextlib.redirect_stdout(io.StringIO()):
            bootstrap.main(["--model", "m", self.row("m.json", records),
                            self.latency("m.txt", 10), "--case", "c"])
        self.assertIn("no case 'c'", str(stop.exception.code))

    def test_no_row_is_a_usage_error(self):
        with self.assertRaises(SystemExit) as stop, contextlib.redirect_stderr(io.StringIO()):
            bootstrap.main([])
        self.assertEqual(stop.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
