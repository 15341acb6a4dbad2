"""Stdlib-only tests of the score kind (onepass/kinds/score.py): its listing (levels lowest
first, a level's label its number), the expected level and confidence, and its renderings.
Both directions are tested in test_directions.py; the expectation through readout in
tests/unit/steps/test_readout.py.
Run: python3 -S -m unittest tests.unit.kinds.test_score
"""
import unittest

from onepass.decision_model import Option, Question
from onepass.kinds import score
from onepass.profile import Layout
from tests.support.unit_profile import LABELS

KIND = score.KIND
LEVELS = Question("score", "Anger?", tuple(Option(str(i), t) for i, t in
                                           enumerate(("Calm", "Annoyed", "Furious"))))


class TestScore(unittest.TestCase):
    def test_one_listing_lowest_first(self):
        """listings: one read, levels 0..n-1 with labels 0..n-1, lowest first."""
        (lines, pairs, levels, order), = KIND.listings(LEVELS, LABELS, Layout())
        self.assertEqual(lines, ["Question: Anger?", "Levels, lowest first:", "0. Calm",
                                 "1. Annoyed", "2. Furious",
                                 "Reply with the label of the right level only."])
        self.assertEqual((pairs, levels, order), (LABELS.score[:3], (0, 1, 2), (0, 0, 0)))

    def test_the_expected_level_and_the_mode(self):
        """answer: its payload 0*0.1 + 1*0.2 + 2*0.7 = 1.6; best the likeliest level (2)."""
        a = KIND.answer([0.1, 0.2, 0.7], LEVELS)
        self.assertAlmostEqual(a.payload, 1.6, places=12)
        self.assertEqual((a.kind, a.best), ("score", 2))
        # spread D = (1 + 0 + 1) / 3; distance from level 2 = 0.1*2 + 0.2*1 = 0.4
        self.assertAlmostEqual(a.confidence, 1 - 0.4 / (2 / 3), places=12)

    def test_confidence_is_clamped_at_zero(self):
        """confidence: mass far from the mode past the uniform spread gives 0, not below."""
        self.assertEqual(score.confidence([0.34, 0.0, 0.33, 0.0, 0.33]), 0.0)
        self.assertAlmostEqual(score.confidence([0.2] * 5), 0.0, places=12)
        self.assertEqual(score.confidence([1.0]), 1.0)
        self.assertEqual(score.confidence([0.0, 0.0, 1.0]), 1.0)
        self.assertAlmostEqual(score.confidence([0.0, 0.95, 0.05]), 1 - 0.05 / (2 / 3), places=12)

    def test_renderings_on_both_apis(self):
        """systemone.answer echoes the legend as sent; decisions.answer labels each level."""
        a = KIND.answer([0.25, 0.25, 0.5], LEVELS)
        self.assertEqual(KIND.systemone.answer(LEVELS, a, ["calm", {"x": 1}, "furious"]), {
            "type": "score", "score": 1.25, "legend": {"0": "calm", "1": {"x": 1}, "2": "furious"},
            "probabilities": {"0": 0.25, "1": 0.25, "2": 0.5}, "confidence": a.confidence})
        self.assertEqual(KIND.decisions.answer("anger", ("calm", "meh", "furious"), a)[
            "probabilities"], [{"value": 0, "label": "calm", "probability": 0.25},
                               {"value": 1, "label": "meh", "probability": 0.25},
                               {"value": 2, "label": "furious", "probability": 0.5}])

    def test_legend_is_the_criteria_as_sent(self):
        """systemone.legend: the question's criteria unchanged (None when absent)."""
        criteria = ["Calm", {"text": "Furious"}]
        self.assertIs(KIND.systemone.legend({"criteria": criteria}), criteria)
        self.assertIsNone(KIND.systemone.legend({}))


if __name__ == "__main__":
    unittest.main()
