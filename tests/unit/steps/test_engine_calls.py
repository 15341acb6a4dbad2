"""Stdlib-only tests of the engine calls the steps make (onepass/steps/engine_calls.py): the
budget a prompt is fitted to (the served context less `reserve`, and a two-way budget once learnt), the one retry when the plugin
refuses a two-way read (its typed OverBudget teaches the engine the budget), and generations
handed to the engine. The engine is a stub that counts a token per byte: plumbing only.
Run: python3 -S -m unittest tests.unit.steps.test_engine_calls
"""
import unittest

from onepass.backend import decoding
from onepass.backend.probes import Facts
from onepass.decision_model import CAUSAL, TWO_WAY, Option, Question, Read, ReadResult
from onepass.errors import InvalidRequest, OverBudget, Problem
from onepass.steps.engine_calls import EngineCalls
from tests.support.build_decision import decision
from tests.support.unit_profile import LABELS, PROFILE

NOUL_Q = Question("noul", "Refund?", (Option("true", None), Option("false", None)))


class StubEngine:
    """Counts a token per byte; refuses two-way reads longer than `budget` as the plugin does
    (and learns the budget from that refusal, as backend/engine.py does)."""

    def __init__(self, budget):
        self.budget, self.calls, self.two_way_budget = budget, [], None
        self.submitted = []

    def count(self, texts, sep=None, calls=None):
        return [len(t.encode()) for t in texts]

    def read_all(self, reads):
        self.calls.append(reads)
        longest = max(len(r.prompt.encode()) for r in reads)
        if reads[0].attention_mode == TWO_WAY and longest > self.budget:
            if self.budget > 0 and not self.two_way_budget:
                self.two_way_budget = self.budget
            raise OverBudget([Problem(("state",), "too long", "too_long")], self.budget)
        return [ReadResult((-0.1, -2.0), 10) for _ in reads]

    def submit(self, fn, *args):
        self.submitted.append((fn, args))
        return "future"


def reader(max_len, budget=10 ** 9, two_way=True) -> EngineCalls:
    return EngineCalls(PROFILE, Facts(LABELS, max_len, two_way, ""), StubEngine(budget))


class TestEngineCalls(unittest.TestCase):
    def test_two_way_budget_is_learnt_from_the_typed_refusal(self):
        """read: a two-way read refused for the plugin's budget is fitted to it and read again."""
        pipe = reader(100_000, budget=600)
        reads, selections, _ = pipe.read(decision((NOUL_Q,), "word " * 400,
                                                         attention_mode=TWO_WAY))
        self.assertEqual(pipe.engine.two_way_budget, 600)
        self.assertEqual(len(pipe.engine.calls), 2)  # refused once, then fitted to the budget
        self.assertLessEqual(len(reads[0].prompt.encode()), 600)
        self.assertEqual(len(selections), 1)

    def test_a_refusal_on_a_one_way_read_is_not_learnt(self):
        """read: an OverBudget on a one-way read is raised as is, with no retry."""
        pipe = reader(100_000, budget=600)
        pipe.engine.read_all = lambda reads: (_ for _ in ()).throw(
            OverBudget([Problem(("state",), "x", "too_long")], 600))
        with self.assertRaises(InvalidRequest):
            pipe.read(decision((NOUL_Q,), "short", attention_mode=CAUSAL))
        self.assertIsNone(pipe.engine.two_way_budget)

    def test_a_refusal_under_a_known_budget_is_not_retried(self):
        """read: a two-way read refused although fitted to the learnt budget is raised, once."""
        r = reader(100_000, budget=600)
        r.engine.two_way_budget = 10_000  # learnt, but the plugin still refuses
        with self.assertRaises(OverBudget):
            r.read(decision((NOUL_Q,), "word " * 400, attention_mode=TWO_WAY))
        self.assertEqual(len(r.engine.calls), 1)

    def test_a_zero_budget_is_refused_as_too_long_not_retried(self):
        """read: the plugin saying nothing fits (budget 0) is the client's 4xx, read once."""
        r = reader(100_000, budget=0)
        with self.assertRaises(OverBudget) as ctx:
            r.read(decision((NOUL_Q,), "word", attention_mode=TWO_WAY))
        self.assertEqual((len(r.engine.calls), r.engine.two_way_budget), (1, None))
        self.assertLess(ctx.exception.status, 500)

    def test_a_learnt_budget_binds_two_way_reads_only(self):
        """read: a learnt two-way budget cuts a two-way read; a causal read fills the context."""
        r = reader(100_000)
        r.engine.two_way_budget = 600
        state = "word " * 400  # 2000 bytes
        two_way, cut, _ = r.read(decision((NOUL_Q,), state, attention_mode=TWO_WAY))
        causal, whole, _ = r.read(decision((NOUL_Q,), state, attention_mode=CAUSAL))
        self.assertLessEqual(len(two_way[0].prompt.encode()), 600)
        self.assertEqual(len(cut), 1)
        self.assertEqual(whole, [])
        self.assertIn(state, causal[0].prompt)

    def test_fit_honours_reserve(self):
        """fit: the budget is max_len less `reserve`: whole with 1 reserved, cut with more."""
        state = "word " * 100  # 500 bytes
        r = reader(max_len=900)
        reads, selections = r.fit(decision((NOUL_Q,), state), reserve=1)
        whole = len(reads[0].prompt.encode())
        self.assertEqual(selections, [])
        self.assertLess(whole, 899)
        reserve = 900 - (whole - 100)  # leaves room for all but ~100 bytes of the state
        reads, selections = r.fit(decision((NOUL_Q,), state), reserve=reserve)
        self.assertLessEqual(len(reads[0].prompt.encode()), 900 - reserve)
        self.assertEqual(len(selections), 1)
        self.assertEqual(selections[0].total_tokens, whole)
        self.assertLessEqual(selections[0].kept_tokens, 900 - reserve)

    def test_fit_takes_the_smaller_of_context_and_budget(self):
        """fit: a `budget` below the context less reserve binds; one above it does not."""
        state = "word " * 100
        r = reader(max_len=10_000)
        tight, cut = r.fit(decision((NOUL_Q,), state), 1, budget=400)
        loose, kept = r.fit(decision((NOUL_Q,), state), 1, budget=10 ** 6)
        self.assertLessEqual(len(tight[0].prompt.encode()), 400)
        self.assertEqual((len(cut), kept), (1, []))
        self.assertIn(state, loose[0].prompt)

    def test_generate_hands_the_read_and_settings_to_the_engine(self):
        """generate: one engine submit of decoding.generate with every setting, its future."""
        r = reader(4096)
        read = Read("p", (), ())
        self.assertEqual(r.generate(read, {"regex": "[0-9]+"}, 24, ("\n",), 12.5), "future")
        self.assertEqual(r.engine.submitted, [(decoding.generate, (
            r.engine, read, {"regex": "[0-9]+"}, 24, ("\n",), 12.5))])


if __name__ == "__main__":
    unittest.main()
