"""Stdlib-only tests of bench/bootstrap.py: Brier skill against the uniform answer, intervals
that hold the point estimate and are reproducible, a paired difference of a model with itself.
Run: python3 -S -m unittest tests.unit.bench.test_bootstrap
"""
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))  # bench/ is scripts, not a package
import bootstrap  # noqa: E402


def rec(i: int, probs: dict, gold: str, qid: str = "q") -> dict:
    return {"task": "t", "id": str(i), "qid": qid, "kind": "choice", "probabilities": probs,
            "gold_key": gold, "top_key": max(probs, key=probs.get)}


class BootstrapTest(unittest.TestCase):
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
        self.assertEqual(bands["order_sensitivity"], (None, None))

    def test_paired_with_itself_is_zero(self):
        records = [rec(i, {"a": 0.6, "b": 0.4}, "a" if i % 2 else "b") for i in range(20)]
        d = bootstrap.paired(records, records, 100)
        self.assertEqual(d["n"], 20)
        self.assertEqual(d["accuracy"], (0.0, 0.0, 0.0))


if __name__ == "__main__":
    unittest.main()
