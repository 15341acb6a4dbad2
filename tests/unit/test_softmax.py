"""The softmax over a read's labels (onepass/softmax.py): exact sums, temperature, and no NaN
answer from a read without a finite label.
Run: python3 -S -m unittest tests.unit.test_softmax
"""
import math
import unittest

from onepass.errors import EngineFailed
from onepass.softmax import label_distribution


class TestDistribution(unittest.TestCase):
    def test_renormalises_over_labels_exactly(self):
        """label_distribution: probabilities sum to 1 within 1e-9 and keep the label odds."""
        p = label_distribution([-1.0, -2.0, -30.0, -float("inf")])
        self.assertAlmostEqual(math.fsum(p), 1.0, delta=1e-9)
        self.assertAlmostEqual(p[0] / p[1], math.e, places=9)
        self.assertEqual(p[3], 0.0)

    def test_temperature_flattens(self):
        """label_distribution: a temperature above 1 moves the distribution toward uniform."""
        sharp, flat = label_distribution([0, -2]), label_distribution([0, -2], 2.0)
        self.assertGreater(sharp[0], flat[0])
        self.assertAlmostEqual(flat[0] / flat[1], math.e, places=9)

    def test_no_finite_label_is_an_engine_error(self):
        """label_distribution: all labels at -inf or NaN is an engine failure, never a NaN
        answer."""
        for bad in ([-float("inf")] * 2, [float("nan"), 0.0]):
            with self.assertRaises(EngineFailed):
                label_distribution(bad)
