"""Stdlib-only tests of the noul kind (onepass/kinds/noul.py): its prompt lines, the floor at
the yes/no boundary, its answer (P(true)) and its renderings on both APIs. The floor on either
side through readout is tested in test_shim.py (test_temperature_per_type_and_noul_floor).
Run: python3 -S -m unittest tests.unit.kinds.test_noul
"""
import unittest
from dataclasses import replace

from onepass.decision_model import Option, Question
from onepass.kinds import noul
from tests.support.unit_profile import LABELS, PROFILE

KIND = noul.KIND


def question(instructions="Refund?", true=None, false=None):
    return Question("noul", instructions, (Option("true", true), Option("false", false)))


class TestListings(unittest.TestCase):
    def test_one_listing_with_a_line_per_described_side(self):
        """listings: the question, a 'means' line for each side with text, the reply line."""
        (lines, pairs, option_of_label, order), = KIND.listings(
            question(false="no refund asked"), LABELS, PROFILE.layout)
        self.assertEqual(lines, ["Question: Refund?", "No means: no refund asked",
                                 "Reply with Yes or No only."])
        self.assertEqual((pairs, option_of_label, order), (LABELS.noul, (0, 1), (0, 0)))

    def test_no_instructions_asks_about_the_criteria(self):
        """listings: without instructions the question line points at the sides below."""
        (lines, *_), = KIND.listings(question(None, "asks for money", "does not"), LABELS,
                                     PROFILE.layout)
        self.assertEqual(lines, ["Question: Does the record meet the criteria below?",
                                 "Yes means: asks for money", "No means: does not",
                                 "Reply with Yes or No only."])


class TestFloor(unittest.TestCase):
    def test_the_floor_lifts_the_chosen_side_and_never_flips_it(self):
        """calibrate: floor 0.9 lifts 0.5 (yes by the tie rule) to 0.9 and 0.45 to 0.1."""
        cal = replace(PROFILE.calibration, noul_floor=0.9)
        for given, want in (([0.5, 0.5], (0.9, 0.1)), ([0.45, 0.55], (0.1, 0.9)),
                            ([0.05, 0.95], (0.05, 0.95))):
            got = KIND.calibrate(given, cal)
            self.assertAlmostEqual(got[0], want[0], places=12, msg=given)
            self.assertAlmostEqual(got[1], want[1], places=12, msg=given)

    def test_no_floor_leaves_the_probabilities(self):
        """calibrate: floor 0 returns the probabilities as given."""
        probs = [0.52, 0.48]
        self.assertIs(KIND.calibrate(probs, PROFILE.calibration), probs)


class TestAnswer(unittest.TestCase):
    def test_the_answer_is_p_true(self):
        """answer: its payload is P(true), best the likelier side (true on a tie), confidence
        1."""
        a = KIND.answer([0.25, 0.75], question())
        self.assertEqual((a.kind, a.payload, a.best, a.confidence), ("noul", 0.25, 1, 1.0))
        self.assertEqual(KIND.answer([0.5, 0.5], question()).best, 0)

    def test_renderings_on_both_apis(self):
        """systemone.answer: {type noul, noul}; decisions: a predicate's probability."""
        a = KIND.answer([0.25, 0.75], question())
        self.assertEqual(KIND.systemone.answer(question(), a, None),
                         {"type": "noul", "noul": 0.25})
        self.assertEqual(KIND.decisions.answer("refund", (True, False), a),
                         {"type": "predicate", "name": "refund", "probability": 0.25})

    def test_decisions_options_are_the_two_sides(self):
        """decisions.options: values (True, False) and the true/false options, undescribed."""
        values, options = KIND.decisions.options({}, (), None, 255)
        self.assertEqual((values, options), ((True, False), [Option("true", None),
                                                             Option("false", None)]))


if __name__ == "__main__":
    unittest.main()
