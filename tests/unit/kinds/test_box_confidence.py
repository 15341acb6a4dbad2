"""Stdlib-only tests of a box's confidence maps (onepass/kinds/box_confidence.py), called
directly: check_maps at its bounds (±1000 inclusive, numbers that are not bools or text, no key
beyond a, b and feature), the logistic's values and its stability far out on either side, no
input without a log-prob, and which numbers count as finite. The maps through box.check_settings,
the area feature and mode_map are tested in tests/unit/kinds/test_box.py; hybrid's pick in
tests/unit/steps/test_generate.py.
Run: python3 -S -m unittest tests.unit.kinds.test_box_confidence
"""
import math
import unittest

from onepass.kinds import box_confidence

ONE = {"a": 1.0, "b": 0.0}


class TestCheckMaps(unittest.TestCase):
    def test_the_bounds_are_inclusive(self):
        """check_maps: a and b up to ±1000 pass, in one map or one per mode; past it is refused."""
        for good in ({"a": 1000, "b": -1000}, {"a": -1e3, "b": 0, "feature": "log_area"},
                     {"generate": ONE, "edges": {"a": 1000.0, "b": 1}}):
            box_confidence.check_maps(good)
        with self.assertRaises(ValueError):
            box_confidence.check_maps({"a": 1000.5, "b": 0})

    def test_numbers_only_and_no_other_key(self):
        """check_maps: a bool or text is not a number; a key beyond a, b and feature, or a map
        that is not an object, is refused with the message naming both forms."""
        for bad in ({"a": True, "b": 0}, {"a": "1", "b": 0}, {"a": 1, "b": 0, "c": 0},
                    {"a": 1}, [1, 0], None, {"generate": ONE, "edges": [1, 0]}):
            with self.assertRaises(ValueError, msg=bad) as ctx:
                box_confidence.check_maps(bad)
            self.assertIn("for every mode", str(ctx.exception))


class TestLogistic(unittest.TestCase):
    def test_the_logistic_of_a_x_plus_b(self):
        """confidence: 1 / (1 + e^-(a x + b)); 3/4 where a x + b = ln 3, 1/4 at -ln 3."""
        fit = {"a": 2.0, "b": 0.5}
        self.assertAlmostEqual(box_confidence.confidence((math.log(3) - 0.5) / 2, fit), 0.75)
        self.assertAlmostEqual(box_confidence.confidence((-math.log(3) - 0.5) / 2, fit), 0.25)

    def test_stable_far_out_on_either_side(self):
        """confidence: z of ±1e6 gives 1 and 0, never an OverflowError."""
        self.assertEqual(box_confidence.confidence(1e6, ONE), 1.0)
        self.assertEqual(box_confidence.confidence(-1e6, ONE), 0.0)

    def test_no_input_without_a_log_prob(self):
        """map_input: None without a mean log-prob, whatever the feature (even log_area)."""
        area = {**ONE, "feature": "log_area"}
        self.assertIsNone(box_confidence.map_input(area, None, (0.0, 0.0, 0.5, 0.5)))
        self.assertEqual(box_confidence.confidence(None, ONE), 0.0)


class TestFinite(unittest.TestCase):
    def test_finite_numbers_only(self):
        for v, want in ((0, True), (-2.5, True), (True, False), (math.nan, False),
                        (math.inf, False), ("1", False), (None, False)):
            self.assertEqual(box_confidence.finite(v), want, v)


if __name__ == "__main__":
    unittest.main()
