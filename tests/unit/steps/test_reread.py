"""Stdlib-only tests of label reads answered (onepass/steps/reread.py): the re-read policy (kinds
that re-read, under calibration.reread_below, from the budget's spare calls only, the request
written twice as often, blended 2:1) and the calibration and layout taken from the resolved
Decision. The engine is a stub whose label log-probs are given per call: the policy around
them is checked, never what a model would answer.
Run: python3 -S -m unittest tests.unit.steps.test_reread
"""
import math
import unittest
from dataclasses import replace

from onepass import config, work
from onepass.steps import reread
from onepass.backend.probes import Facts
from onepass.decision_model import Option, Page, Question, ReadResult
from tests.support.kind_names import CHOICE, NOUL, SCORE
from onepass.errors import InvalidRequest, Problem
from onepass.prompt.layout import AGAIN
from onepass.steps.engine_calls import EngineCalls
from tests.support.build_decision import decision, resolved
from tests.support.unit_profile import LABELS, PROFILE

AB = (Option("a", None), Option("b", None))
SURE = Question(CHOICE, "Sure?", AB)
UNSURE = Question(CHOICE, "Unsure?", AB)
YES = Question(NOUL, "Yes?", (Option("true", None), Option("false", None)))
LEVELS = Question(SCORE, "Level?", (Option("0", "low"), Option("1", "high")))
# label probabilities per call, by the question's instructions (given, not a model's)
FIRST = {"Sure?": (0.9, 0.1), "Unsure?": (0.6, 0.4), "Yes?": (0.6, 0.4), "Level?": (0.6, 0.4)}
SECOND = {"Sure?": (0.5, 0.5), "Unsure?": (0.9, 0.1), "Yes?": (0.9, 0.1), "Level?": (0.0, 1.0)}


class ScriptedEngine:
    """Counts a token per byte; call k answers each read with script[k][its question] as label
    log-probs, and records the reads of every call."""

    def __init__(self, *script):
        self.script, self.calls, self.two_way_budget = script, [], None

    def count(self, texts, sep=None, calls=None):
        return [len(t.encode()) for t in texts]

    def read_all(self, reads):
        probs = self.script[len(self.calls)]
        self.calls.append(reads)
        return [ReadResult(tuple(math.log(p) if p else -math.inf for p in probs[key(r)]), 10)
                for r in reads]


def key(read) -> str:
    return next(k for k in FIRST if f"Question: {k}" in read.prompt)


def answer(r, d, fixed=frozenset(), budget=None):
    """reread.read_page on the Decision's Page and calibration (as think.py calls it)."""
    page = Page(d.state, d.questions, d.attention_mode, d.layout, d.images)
    return reread.read_page(r, page, d.calibration, fixed, budget)


def reader(*script, max_len=100_000) -> EngineCalls:
    return EngineCalls(PROFILE, Facts(LABELS, max_len, False, ""), ScriptedEngine(*script))


def below(threshold, **layout):
    """A resolved Decision's calibration re-reading under `threshold`, and its layout."""
    return dict(calibration=replace(PROFILE.calibration, reread_below=threshold),
                layout=config.Layout(**layout))


def spare(calls: int) -> work.Budget:
    return work.Budget(calls, work.Calls(0, 0, 0, 0))


class Case(unittest.TestCase):
    def assertProbs(self, got, want):
        """Probabilities equal to 12 places, option by option."""
        self.assertEqual(len(got), len(want))
        for a, b in zip(got, want):
            self.assertAlmostEqual(a, b, places=12)


class TestReread(Case):
    def test_an_unsure_choice_is_read_again_and_blended_two_to_one(self):
        """reread: only the choice under the threshold is read again; 2/3 first + 1/3 second."""
        r, budget = reader(FIRST, SECOND), spare(5)
        d = decision((SURE, UNSURE), "ticket", **below(0.8))
        out = answer(r, d, budget=budget)
        self.assertEqual([key(x) for x in r.engine.calls[1]], ["Unsure?"])
        self.assertProbs(out.answers[0].probabilities, (0.9, 0.1))
        self.assertProbs(out.answers[1].probabilities, (0.7, 0.3))  # 0.4 + 0.3, 0.267 + 0.033
        self.assertEqual((out.effort.rereads, out.effort.reread_below, budget.spare), (1, 0.8, 4))

    def test_the_reread_writes_the_request_twice_as_often(self):
        """reread: the second read doubles the Decision's repeat, capped at profile.MAX_REPEAT."""
        for repeat, again in ((1, 2), (3, 4)):
            r = reader(FIRST, SECOND)
            answer(r, decision((UNSURE,), "ticket", **below(0.8, repeat=repeat)),
                             budget=spare(5))
            first, second = (calls[0].prompt for calls in r.engine.calls)
            self.assertEqual((first.count("Record:\nticket"), second.count("Record:\nticket")),
                             (repeat, again))
            self.assertEqual(second.count(AGAIN), again - 1)

    def test_a_choice_read_as_a_set_is_read_once(self):
        """reread: with option_sets an unsure choice keeps its one read (a second copy would
        list its options); an unsure score beside it is still read again."""
        r = reader(FIRST, SECOND)
        out = answer(r, decision((UNSURE, LEVELS), "ticket",
                                           **below(0.99, option_sets=True)), budget=spare(5))
        self.assertEqual([key(x) for x in r.engine.calls[1]], ["Level?"])
        self.assertProbs(out.answers[0].probabilities, (0.6, 0.4))
        self.assertEqual(out.effort.rereads, 1)

    def test_a_score_rereads_a_noul_never(self):
        """reread: a score under the threshold is read again; a noul (rereads False) never."""
        r = reader(FIRST, SECOND)
        out = answer(r, decision((YES, LEVELS), "ticket", **below(0.99)),
                               budget=spare(5))
        self.assertEqual([key(x) for x in r.engine.calls[1]], ["Level?"])
        self.assertProbs(out.answers[0].probabilities, (0.6, 0.4))
        self.assertProbs(out.answers[1].probabilities, (0.4, 0.6))  # 2/3 (0.6, 0.4) + 1/3 (0, 1)
        self.assertEqual(out.effort.rereads, 1)

    def test_nothing_is_read_again_without_cause_or_calls(self):
        """reread: off at 0, not for `fixed` questions, not without a budget or its spare calls."""
        cases = ((below(0.0), frozenset(), 5), (below(0.8), {0}, 5),
                 (below(0.8), frozenset(), None), (below(0.8), frozenset(), 0))
        for fields, fixed, calls in cases:
            r, budget = reader(FIRST, SECOND), None if calls is None else spare(calls)
            out = answer(r, decision((UNSURE,), "ticket", **fields), fixed, budget)
            self.assertEqual((len(r.engine.calls), out.effort.rereads), (1, 0), (fields, fixed))
            self.assertProbs(out.answers[0].probabilities, (0.6, 0.4))
            if budget is not None:
                self.assertEqual(budget.spare, calls)

    def test_a_reread_that_cannot_be_made_leaves_the_first_answer(self):
        """reread: an InvalidRequest from the second read keeps the first read's answers."""
        r = reader(FIRST)
        first = r.engine.read_all

        def once(reads):
            if r.engine.calls:
                raise InvalidRequest([Problem(("state",), "too long", "too_long")])
            return first(reads)
        r.engine.read_all = once
        out = answer(r, decision((UNSURE,), "ticket", **below(0.8)), budget=spare(5))
        self.assertProbs(out.answers[0].probabilities, (0.6, 0.4))
        self.assertEqual((len(r.engine.calls), out.effort.rereads), (1, 0))
        self.assertEqual(out.effort.reread_below, 0.8)


class TestResolved(Case):
    def test_the_decisions_calibration_applies(self):
        """answer: the resolved Decision's temperature applies, not the profile's."""
        hot = replace(PROFILE.calibration, temperature={**PROFILE.calibration.temperature,
                                                        "choice": 2.0})
        out = answer(reader(FIRST), decision((UNSURE,), "t", calibration=hot,
                                                       layout=PROFILE.layout))
        want = math.sqrt(0.6) / (math.sqrt(0.6) + math.sqrt(0.4))  # (0.6, 0.4) at T = 2
        self.assertAlmostEqual(out.answers[0].probabilities[0], want, places=12)
        plain = answer(reader(FIRST), resolved(decision((UNSURE,), "t"), PROFILE))
        self.assertProbs(plain.answers[0].probabilities, (0.6, 0.4))

    def test_the_decisions_layout_applies(self):
        """answer: the resolved Decision's layout is the one read (its repeat in the prompt)."""
        r = reader(FIRST)
        answer(r, decision((UNSURE,), "ticket", **below(0.0, repeat=3)))
        self.assertEqual(r.engine.calls[0][0].prompt.count("Record:\nticket"), 3)


if __name__ == "__main__":
    unittest.main()
