"""Stdlib-only tests of the profile's checks (onepass/profile.py) at their edges: label ranges
beyond A-Z, and check_layout / check_calibration (the profile's and a request's overrides) at
each bound. Types refused through kwargs are tested in test_shim.py
(test_option_overrides_are_checked); loading profiles in test_shim.py's TestConfig and
tests/unit/kinds/test_registry.py.
Run: python3 -S -m unittest tests.unit.test_profile
"""
import unittest
from dataclasses import replace

from onepass.profile import (MAX_ORDERS, MAX_REPEAT, ConfigError, Layout, check_calibration,
                             check_layout, expand_labels)
from tests.support.unit_profile import PROFILE

CAL = PROFILE.calibration


def refused(check, value) -> bool:
    try:
        check(value, "here")
    except ConfigError:
        return True
    return False


class TestLabels(unittest.TestCase):
    def test_each_position_ranges_over_its_own_span(self):
        """expand_labels: "A1-B2" is A1, A2, B1, B2; lowercase and digits expand too."""
        self.assertEqual(expand_labels(["A1-B2"]), ["A1", "A2", "B1", "B2"])
        self.assertEqual(expand_labels(["a-c", "0-2"]), ["a", "b", "c", "0", "1", "2"])

    def test_what_is_not_a_range_stays_a_label(self):
        """expand_labels: unequal sides, an empty side or a symbol stay as written."""
        for spec in ("Yes-No", "A-", "-", "!-#", "A-B-C"):
            self.assertEqual(expand_labels([spec]), [spec], spec)

    def test_labels_must_be_a_list_of_strings(self):
        """expand_labels: not a list, or an empty or non-string label, is a ConfigError."""
        for bad in ("A-Z", [""], ["A", 1], None):
            with self.assertRaises(ConfigError, msg=bad):
                expand_labels(bad)


class TestLayoutBounds(unittest.TestCase):
    def test_each_bound_is_inclusive(self):
        """check_layout: repeat 1-4, orders 1-8, shrink 0-1 pass at both ends, not past them."""
        for ok in (Layout(repeat=MAX_REPEAT), Layout(orders=MAX_ORDERS), Layout(shrink=1),
                   Layout(shrink=0.0), Layout(state_selection="head_tail")):
            self.assertFalse(refused(check_layout, ok), ok)
        for bad in (Layout(repeat=MAX_REPEAT + 1), Layout(repeat=0), Layout(orders=MAX_ORDERS + 1),
                    Layout(shrink=1.01), Layout(shrink=-0.1), Layout(state_selection="tfidf")):
            self.assertTrue(refused(check_layout, bad), bad)

    def test_booleans_are_not_counts_and_counts_not_booleans(self):
        """check_layout: repeat True (an int subclass) and guard_line 1 are refused."""
        self.assertTrue(refused(check_layout, Layout(repeat=True)))
        self.assertTrue(refused(check_layout, Layout(guard_line=1)))
        self.assertTrue(refused(check_layout, Layout(repeat=2.0)))


class TestCalibrationBounds(unittest.TestCase):
    def test_temperatures_within_a_thousandth_and_a_thousand(self):
        """check_calibration: T in [0.001, 1000], an optional image T, no other kind."""
        temps = CAL.temperature
        for t, bad in ((1e-3, False), (1e3, False), (9e-4, True), (1001, True), (True, True)):
            got = refused(check_calibration, replace(CAL, temperature={**temps, "choice": t}))
            self.assertEqual(got, bad, t)
        self.assertFalse(refused(check_calibration, replace(CAL, temperature={**temps,
                                                                              "image": 2.0})))
        self.assertTrue(refused(check_calibration, replace(CAL, temperature={**temps,
                                                                             "box": 2.0})))

    def test_floor_and_reread_ranges(self):
        """check_calibration: noul_floor 0 or in (0.5, 1); reread_below in [0, 1]."""
        for floor, bad in ((0, False), (0.51, False), (0.99, False), (1, True), (0.3, True)):
            self.assertEqual(refused(check_calibration, replace(CAL, noul_floor=floor)), bad,
                             floor)
        for below, bad in ((0, False), (1, False), (1.5, True), (-0.1, True)):
            self.assertEqual(refused(check_calibration, replace(CAL, reread_below=below)), bad,
                             below)

    def test_number_confidence_and_prior_counts(self):
        """check_calibration: number_confidence {a, b} within 1000; prior counts ASCII digits."""
        for fit, bad in (({"a": 2.0, "b": -1}, False), ({"a": 1001, "b": 0}, True),
                         ({"a": 1}, True), ([1, 2], True)):
            self.assertEqual(refused(check_calibration, replace(CAL, number_confidence=fit)),
                             bad, fit)
        for prior, bad in (({"noul": {"2": [0.0, 1.0]}}, False), ({"choice": {"²": [0.0]}}, True),
                           ({"choice": {"0002": [0.0, 1.0]}}, True)):
            self.assertEqual(refused(check_calibration, replace(CAL, label_prior=prior)), bad,
                             prior)


if __name__ == "__main__":
    unittest.main()
