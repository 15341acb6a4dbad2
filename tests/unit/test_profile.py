"""Stdlib-only tests of the profiles (onepass/profile.py): label ranges, check_layout /
check_calibration (the profile's and a request's overrides) at each bound, and the profile file:
every shipped profile loads and says what was fitted, a misspelled key is named, and a two-way
default needs a model trained for it. Types refused through kwargs are tested in test_shim.py
(test_option_overrides_are_checked); each kind's labels in tests/unit/kinds/test_registry.py.
Run: python3 -S -m unittest tests.unit.test_profile
"""
import json
import tempfile
import unittest
from dataclasses import replace
from pathlib import Path

from onepass.profile import (MAX_ORDERS, MAX_REPEAT, ConfigError, Layout, check_calibration,
                             check_layout, expand_labels, load_profile)
from tests.support.paths import ROOT
from tests.support.unit_profile import PROFILE

CONFIG = ROOT / "serve_config.json"

CAL = PROFILE.calibration


def refused(check, value) -> bool:
    try:
        check(value, "here")
    except ConfigError:
        return True
    return False


class TestLabels(unittest.TestCase):
    def test_ranges_expand_in_order(self):
        """expand_labels: A-C is A, B, C beside a plain label; AA-ZZ is all 676 in order."""
        self.assertEqual(expand_labels(["A-C", "Yes"]), ["A", "B", "C", "Yes"])
        self.assertEqual(len(expand_labels(["AA-ZZ"])), 676)

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

    def test_each_kinds_setting_is_a_field_checked_by_its_own_rule(self):
        """Calibration: each kind's own settings are fields at their kinds' defaults; a bad one
        is refused with its kind's words (what kwargs.calibration's 422 says), alone."""
        self.assertEqual((CAL.noul_floor, CAL.number_confidence), (0.0, None))
        for key, bad, said in (("noul_floor", 0.5, "noul_floor must be 0 (off) or in (0.5, 1)"),
                               ("number_confidence", {"a": 1}, "number_confidence needs numbers "
                                "a and b within ±1000, or null"),
                               ("reread_below", 2, "reread_below must be in [0, 1]")):
            with self.assertRaises(ConfigError) as ctx:
                check_calibration(replace(CAL, **{key: bad}), "kwargs.calibration")
            self.assertEqual(str(ctx.exception), f"kwargs.calibration: {said}")

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


class TestProfileFile(unittest.TestCase):
    def load_variant(self, **changes):
        """load_profile on serve_config.json with the default profile's fields changed."""
        doc = json.loads(CONFIG.read_text())
        doc["profiles"]["smollm2-135m-fast"].update(changes)
        with tempfile.TemporaryDirectory() as tmp:  # its own file: test.sh runs two suites at once
            path = Path(tmp) / "variant_config.json"
            path.write_text(json.dumps(doc))
            return load_profile(str(path), "smollm2-135m-fast")[1]

    def test_misspelled_profile_key_is_an_error(self):
        """load_profile: an unknown profile key fails with a message naming it."""
        with self.assertRaises(ConfigError) as ctx:
            self.load_variant(temprature=2)
        self.assertIn("temprature", str(ctx.exception))

    def test_two_way_default_needs_a_model_trained_for_it(self):
        """load_profile: a profile may default to two-way only when it declares trained_two_way."""
        with self.assertRaises(ConfigError) as ctx:
            self.load_variant(attention_mode="bidirectional")
        self.assertIn("trained_two_way", str(ctx.exception))
        profile = self.load_variant(attention_mode="bidirectional", trained_two_way=True)
        self.assertEqual(profile.attention_mode, "bidirectional")

    def test_every_profile_loads_and_says_what_was_fitted(self):
        """load_profile: each profile in serve_config.json loads; a profile whose temperatures
        were not fitted (fitted: null) says so in its provenance, a fitted one names tool and
        data."""
        doc = json.loads(CONFIG.read_text())
        self.assertGreaterEqual(len(doc["profiles"]), 4)
        for name in doc["profiles"]:
            _, profile = load_profile(str(CONFIG), name)
            fitted = profile.calibration.fitted
            note = profile.provenance.get("calibration.temperature", "")
            if fitted is None:
                self.assertRegex(note, "not fitted|unfitted|not published", name)
            else:
                for what, record in fitted.items():  # each fitted part: a bench tool, its data
                    self.assertIn("temperature", what)
                    if record["tool"] == "bench/measure/transfer.py":  # on every dev family,
                        self.assertIn("dev families", record["on"])  # judged on left-out ones
                        continue
                    # a fitter in bench/fit/ on the fit split; fits recorded before bench/ had
                    # subfolders name it bench/NAME.py
                    self.assertRegex(record["tool"], r"^bench/(fit/)?fit_\w+\.py$")
                    tool = record["tool"].rsplit("/", 1)[-1]
                    self.assertTrue((ROOT / "bench" / "fit" / tool).is_file(), record)
                    self.assertIn("split fit", record["on"])
            if profile.tokenizer_contract:
                self.assertTrue((ROOT / profile.tokenizer_contract).is_file(), name)

    def test_each_kind_checks_its_own_profile_settings(self):
        """load_profile asks every kind's check_profile (profile.py imports no kind): a vision
        profile's box settings the box kind refuses stop start-up, naming the profile and what
        is wrong."""
        doc = json.loads(CONFIG.read_text())
        doc["profiles"]["idefics3-tiny"]["vision"]["box"]["present_temperature"] = 0
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "variant_config.json"
            path.write_text(json.dumps(doc))
            with self.assertRaises(ConfigError) as ctx:
                load_profile(str(path), "idefics3-tiny")
        self.assertIn("profile 'idefics3-tiny': vision.box.present_temperature must be",
                      str(ctx.exception))
        self.assertNotIn("from .kinds import", (ROOT / "onepass" / "profile.py").read_text())


if __name__ == "__main__":
    unittest.main()
