"""Stdlib-only tests of readout's pieces beyond what test_shim.py's TestReadout and
TestTechniques cover (renormalising, temperature flattening, the label prior, shrink, the
confidence formulas, the expected score): the temperature that applies, the position prior
per listing, the re-read blend, an outcome's counts, and the x_ extensions.
Run: python3 -S -m unittest tests.unit.test_readout
"""
import math
import unittest
from dataclasses import replace

from onepass import readout
from onepass.decision import NOUL, Answer, Option, Outcome, Question, Read, ReadResult
from onepass.prompt.fitting import Selection
from onepass.think import Spent, Thought
from tests.support.build_decision import decision
from tests.support.unit_profile import PROFILE

YES = Question(NOUL, "?", (Option("true", None), Option("false", None)))
NOUL_ANSWER = Answer(NOUL, (0.5, 0.5), 1.0, 0.5, 0)


def key(i):
    return {"question": f"q{i}"}


class TestPieces(unittest.TestCase):
    def test_temperature_per_kind_and_for_images(self):
        """temperature: the kind's, or with images the 'image' one when the profile has it."""
        cal = replace(PROFILE.calibration, temperature={"noul": 2.0, "choice": 3.0,
                                                         "score": 1.0})
        self.assertEqual(readout.temperature(cal, "choice", False), 3.0)
        self.assertEqual(readout.temperature(cal, "choice", True), 3.0)  # no image key
        with_image = replace(cal, temperature={**cal.temperature, "image": 5.0})
        self.assertEqual(readout.temperature(with_image, "noul", True), 5.0)
        self.assertEqual(readout.temperature(with_image, "noul", False), 2.0)

    def test_the_prior_restarts_at_each_listing(self):
        """debiased: prior[j] comes off the j-th label of each listing, not of the whole read."""
        read = Read("p", (1, 2, 3, 4), (0, 1, 1, 0), (0, 0, 1, 1))
        got = readout.debiased(read, ReadResult((-1.0, -2.0, -3.0, -4.0), 5), [0.5, 0.25])
        self.assertEqual(got, [-1.5, -2.25, -3.5, -4.25])
        self.assertEqual(readout.debiased(read, ReadResult((-1.0, -2.0), 5), ()), [-1.0, -2.0])

    def test_order_distributions_are_per_listing(self):
        """order_distributions: each listing's labels renormalised alone, mapped to options."""
        read = Read("p", (1, 2, 3, 4), (0, 1, 1, 0), (0, 0, 1, 1))
        lp = (math.log(0.3), math.log(0.1), math.log(0.3), math.log(0.3))
        first, second = readout.order_distributions(read, ReadResult(lp, 5), 2, 1.0)
        self.assertAlmostEqual(first[0], 0.75, places=12)  # 0.3 / (0.3 + 0.1)
        self.assertAlmostEqual(second[0], 0.5, places=12)
        self.assertAlmostEqual(readout.disagreement([first, second], [0.625, 0.375]), 0.125,
                               places=12)

    def test_blend_weights_the_first(self):
        """blend: first_weight * first + (1 - first_weight) * second, option by option."""
        got = readout.blend([0.9, 0.1], [0.3, 0.7], readout.REREAD_FIRST_WEIGHT)
        self.assertAlmostEqual(got[0], 0.7, places=12)
        self.assertAlmostEqual(got[1], 0.3, places=12)
        self.assertEqual(readout.blend([1.0, 0.0], [0.0, 1.0], 0.25), [0.25, 0.75])


class TestOutcome(unittest.TestCase):
    def test_input_tokens_count_the_uncut_prompt(self):
        """outcome: a cut read counts its uncut prompt's tokens; cached tokens, images add up."""
        d = decision((YES, YES), images=("img",))
        reads = [Read("p", (1, 2), (0, 1), whole_tokens=900), Read("p", (1, 2), (0, 1))]
        results = [ReadResult((0.0, -1.0), 300, 20), ReadResult((0.0, -1.0), 50, 5)]
        out = readout.outcome(d, [[0.7, 0.3], [0.2, 0.8]], results, 1, 0.6, reads,
                              (Selection(0, 300, 900, "bm25"),))
        self.assertEqual((out.num_input_tokens, out.num_cached_tokens, out.images),
                         (950, 25, 1))
        self.assertEqual((out.rereads, out.reread_below, out.attention_mode), (1, 0.6, "causal"))
        self.assertEqual([a.best for a in out.answers], [0, 1])
        self.assertEqual(readout.outcome(d, [[0.7, 0.3]] * 2, results).num_input_tokens, 350)


class TestExtensions(unittest.TestCase):
    def test_nothing_done_beyond_a_read_says_nothing(self):
        """extensions: none for a plain outcome; reasoning off is not reported."""
        plain = Outcome((NOUL_ANSWER,), 10, "causal", reasoning=Spent("off"))
        self.assertEqual(readout.extensions(plain, key), {})
        self.assertIsNone(readout.effort_used(plain, key))

    def test_effort_names_reread_reasoning_and_cuts(self):
        """effort_used: the re-read's threshold, each question's thought, each cut state."""
        spent = Spent("auto", 64, (Thought(1, "hmm", 12, True),), trace=True)
        out = Outcome((NOUL_ANSWER, NOUL_ANSWER), 10, "causal", rereads=1, reread_below=0.6,
                      selections=(Selection(1, 40, 90, "head_tail"),), reasoning=spent)
        self.assertEqual(readout.extensions(out, key), {
            "x_effort_used": {
                "reread": {"below": 0.6, "first_weight": 0.6667, "questions": 1},
                "reasoning": {"mode": "auto", "token_cap": 64, "questions": [
                    {"question": "q0", "thought": False, "tokens": 0, "cut": False},
                    {"question": "q1", "thought": True, "tokens": 12, "cut": True}]},
                "state_selection": [{"question": "q1", "kept_tokens": 40, "total_tokens": 90,
                                     "method": "head_tail"}]},
            "x_thoughts": [{"question": "q1", "text": "hmm"}]})

    def test_thoughts_only_when_traced(self):
        """traced_thoughts: None without trace; with trace and no thought, an empty list."""
        thought = (Thought(0, "t", 1, False),)
        self.assertIsNone(readout.traced_thoughts(
            Outcome((NOUL_ANSWER,), 1, "causal", reasoning=Spent("on", 8, thought)), key))
        traced = Outcome((NOUL_ANSWER,), 1, "causal", reasoning=Spent("on", 8, (), True))
        self.assertEqual(readout.extensions(traced, key)["x_thoughts"], [])


if __name__ == "__main__":
    unittest.main()
