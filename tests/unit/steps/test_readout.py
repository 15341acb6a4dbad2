"""Stdlib-only tests of readout's pieces (onepass/readout.py): renormalising over the labels,
no finite label an engine error, the temperature that applies and how it flattens, the yes/no
floor, the label prior per listing position, several orders read and shrunk by their
disagreement, the re-read blend, an outcome's counts, and each kind's summary of what readout
gives (a score's expected level, a yes/no's P(true)).
Run: python3 -S -m unittest tests.unit.steps.test_readout
"""
import math
import unittest
from dataclasses import replace

from onepass import config
from onepass.steps import readout
from onepass.decision_model import REREAD_FIRST_WEIGHT, Answer, Option, Question, Read, ReadResult
from tests.support.kind_names import CHOICE, NOUL
from onepass.errors import EngineFailed
from onepass.softmax import label_distribution
from onepass.prompt.fitting import Selection
from onepass.prompt.layout import layout
from tests.support.build_decision import decision
from tests.support.unit_profile import LABELS, PROFILE

YES = Question(NOUL, "?", (Option("true", None), Option("false", None)))
NOUL_ANSWER = Answer(NOUL, (0.5, 0.5), 1.0, 0, 0.5)


def key(i):
    return {"question": f"q{i}"}


def options(n):
    """A choice question of n options a, b, c, ..."""
    return Question(CHOICE, "Team?", tuple(Option(chr(97 + i), None) for i in range(n)))


def laid_out(question, **techniques):
    """The reads of `question` alone under PROFILE with these layout techniques."""
    return layout(decision((question,)), replace(PROFILE, layout=config.Layout(**techniques)),
                  LABELS)


class TestAnswer(unittest.TestCase):
    def test_a_scores_expectation_and_a_yes_nos_p_true(self):
        """answer: a score's payload is sum i*p_i of the probabilities returned; a yes/no's is
        P(true)."""
        q = Question("score", None, tuple(Option(str(i), str(i)) for i in range(3)))
        cal = PROFILE.calibration
        probs = readout.question_probabilities(
            q, [(Read("p", (1, 2, 3), (0, 1, 2)), ReadResult((-2.0, -0.2, -1.9), 5))], cal, 0.0)
        a = readout.summary(q, probs)
        self.assertAlmostEqual(a.payload, sum(i * p for i, p in enumerate(a.probabilities)), 12)
        probs = readout.question_probabilities(
            YES, [(Read("p", (1, 2), (0, 1)), ReadResult((0.0, -1.0), 5))], cal, 0.0)
        self.assertAlmostEqual(readout.summary(YES, probs).payload, 1 / (1 + math.exp(-1)))


class TestQuestionProbabilities(unittest.TestCase):
    def test_temperature_per_type_and_noul_floor(self):
        """question_probabilities: the question type's temperature; the yes/no floor lifts the
        chosen side to at least the floor, on either side, and leaves answers already beyond
        it alone."""
        cal = replace(PROFILE.calibration, temperature={"noul": 2.0, "choice": 1.0, "score": 1.0},
                      noul_floor=0.8)
        read = Read("p", (1, 2), (0, 1))

        def yes(logprobs, calibration=cal):
            pairs = [(read, ReadResult(logprobs, 5))]
            return readout.question_probabilities(YES, pairs, calibration, 0.0)[0]
        self.assertAlmostEqual(yes((0.0, -1.0), replace(cal, noul_floor=0.0)),
                               1 / (1 + math.exp(-0.5)))
        self.assertAlmostEqual(yes((0.0, -1.0)), 0.8)  # 0.62 on the yes side -> 0.8
        self.assertAlmostEqual(yes((-1.0, 0.0)), 0.2)  # 0.38: the no side -> P(no) 0.8
        self.assertAlmostEqual(yes((0.0, -20.0)), 1 / (1 + math.exp(-10)))

    def test_label_prior_is_subtracted_per_listing_position(self):
        """question_probabilities: label_prior[kind][n][j] nats come off the label at position
        j of each listing of an n-option question before the temperature; other counts are
        left alone."""
        q = options(3)
        [read] = laid_out(q, orders=2)
        result = ReadResult((-1.0, -0.5, -2.0, -1.5, -0.7, -0.9), 9)
        cal = replace(PROFILE.calibration, temperature={"noul": 1.0, "choice": 2.0, "score": 1.0},
                      label_prior={"choice": {"3": [0.0, 0.5, 0.25], "2": [0.0, 9.0]}})
        got = readout.question_probabilities(q, [(read, result)], cal, 0.0)
        logs = (-1.0, -1.0, -2.25, -1.5, -1.2, -1.15)  # each listing: A, B - 0.5, C - 0.25
        want = readout.option_probabilities(read, ReadResult(logs, 9), 3, 2.0)
        for a, b in zip(got, want):
            self.assertAlmostEqual(a, b, places=12)
        plain = readout.question_probabilities(q, [(read, result)], replace(cal, label_prior={}),
                                               0.0)
        second = read.option_of_label[1]  # the option listed at position 1 (B) first
        self.assertGreater(plain[second], got[second])

    def test_orders_as_reads_and_shrink(self):
        """layout/question_probabilities: one read per order, averaged; shrink moves toward
        uniform in proportion to the disagreement and never changes the top answer."""
        q = options(2)
        reads = laid_out(q, orders=2, orders_as_reads=True)
        self.assertEqual([r.option_of_label for r in reads], [(0, 1), (1, 0)])
        results = [ReadResult((-0.1, -2.5), 5), ReadResult((-0.7, -0.7), 5)]  # disagree
        pairs = list(zip(reads, results))
        plain = readout.question_probabilities(q, pairs, PROFILE.calibration, 0.0)
        shrunk = readout.question_probabilities(q, pairs, PROFILE.calibration, 1.0)
        self.assertGreater(plain[0], shrunk[0])
        self.assertGreater(shrunk[0], 0.5)  # still the top answer
        agree = [ReadResult((-0.1, -2.5), 5), ReadResult((-2.5, -0.1), 5)]  # same answer, a
        same = readout.question_probabilities(q, list(zip(reads, agree)), PROFILE.calibration,
                                              1.0)
        self.assertAlmostEqual(same[0], label_distribution((-0.1, -2.5))[0], places=12)


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
        got = readout.blend([0.9, 0.1], [0.3, 0.7], REREAD_FIRST_WEIGHT)
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
        self.assertEqual((out.effort.rereads, out.effort.reread_below, out.attention_mode),
                         (1, 0.6, "causal"))
        self.assertEqual(out.effort.selections, (Selection(0, 300, 900, "bm25"),))
        self.assertEqual([a.best for a in out.answers], [0, 1])
        self.assertEqual(readout.outcome(d, [[0.7, 0.3]] * 2, results).num_input_tokens, 350)


if __name__ == "__main__":
    unittest.main()
