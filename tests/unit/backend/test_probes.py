"""The start-up check that label log-probs come from fp32 logits (backend/probes.py)."""
import random
import unittest

from onepass.backend import probes
from onepass.decision import ReadResult


class Reads:
    """An engine stand-in that answers each read with the given log-probs (no HTTP)."""

    def __init__(self, make):
        self.make = make

    def read(self, read):
        return ReadResult(tuple(self.make(len(read.label_token_ids))), 100, 0)

    def map(self, fn, items):
        return [fn(i) for i in items]


class FullPrecision(unittest.TestCase):
    def setUp(self):
        from onepass import config
        _, self.profile = config.load_profile("serve_config.json", "")
        self.labels = probes.LabelSet(choice=[(chr(65 + i), 100 + i) for i in range(26)],
                                      noul=[("Yes", 1), ("No", 2)],
                                      score=[(str(i), 10 + i) for i in range(10)])

    def test_bf16_logits_are_refused_and_fp32_ones_pass(self):
        rng = random.Random(7)
        bf16 = lambda n: [round(rng.uniform(-8, -1) * 64) / 64 - 0.3141 for _ in range(n)]  # noqa: E731
        fp32 = lambda n: [rng.uniform(-8, -1) for _ in range(n)]  # noqa: E731
        with self.assertRaises(probes.GuardFailed) as caught:
            probes.check_full_precision(Reads(bf16), self.profile, self.labels)
        self.assertIn("head_dtype", str(caught.exception))
        probes.check_full_precision(Reads(fp32), self.profile, self.labels)

    def test_a_profile_that_opted_out_is_not_checked(self):
        from dataclasses import replace
        grid = lambda n: [-i / 16 for i in range(n)]  # noqa: E731
        probes.check_full_precision(Reads(grid), replace(self.profile, head_dtype="model"),
                                    self.labels)

    def test_the_grid_test_itself(self):
        self.assertTrue(probes.on_half_grid([-2.125, -1.0, -0.875 + 2 ** -9]))
        self.assertFalse(probes.on_half_grid([-2.0116, -1.3039, -0.9011]))


if __name__ == "__main__":
    unittest.main()
