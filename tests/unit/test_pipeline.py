"""Stdlib-only tests of the pipeline's and the reader's own policies: the two-way budget learnt
from the plugin's typed refusal (OverBudget; the engine keeps it, reader.py fits to it), and
resolving a Request once (model, options, mode, in that order).
Run: python3 -m unittest tests.unit.test_pipeline
"""
import unittest

from onepass import config
from onepass.api import Request
from onepass.backend.probes import Facts
from onepass.decision import CAUSAL, TWO_WAY, Decision, Option, Question, ReadResult
from onepass.errors import InvalidRequest, ModelNotFound, OverBudget, Problem
from onepass.pipeline import Pipeline
from tests.support.unit_profile import LABELS, PROFILE

NOUL_Q = Question("noul", "Refund?", (Option("true", None), Option("false", None)))


class StubEngine:
    """Counts a token per byte; refuses two-way reads longer than `budget` as the plugin does
    (and learns the budget from that refusal, as backend/engine.py does)."""

    def __init__(self, budget):
        self.budget, self.calls, self.two_way_budget = budget, [], None

    def count(self, texts):
        return [len(t.encode()) for t in texts]

    def read_all(self, reads):
        self.calls.append(reads)
        longest = max(len(r.prompt.encode()) for r in reads)
        if reads[0].attention_mode == TWO_WAY and longest > self.budget:
            self.two_way_budget = self.two_way_budget or self.budget
            raise OverBudget([Problem(("state",), "too long", "too_long")], self.budget)
        return [ReadResult((-0.1, -2.0), 10) for _ in reads]


def pipeline(budget, two_way=True) -> Pipeline:
    settings = config.load(["--port", "0"], environ={})
    pipe = Pipeline(settings, StubEngine(budget), None, Facts(LABELS, 100_000, two_way, ""))
    pipe.profile = pipe.reader.profile = PROFILE
    return pipe


class TestPipeline(unittest.TestCase):
    def test_two_way_budget_is_learnt_from_the_typed_refusal(self):
        pipe = pipeline(budget=600)
        decision = Decision("m", "word " * 400, (NOUL_Q,), TWO_WAY)
        reads, selections, _ = pipe.reader.read(decision)
        self.assertEqual(pipe.engine.two_way_budget, 600)
        self.assertEqual(len(pipe.engine.calls), 2)  # refused once, then fitted to the budget
        self.assertLessEqual(len(reads[0].prompt.encode()), 600)
        self.assertEqual(len(selections), 1)

    def test_a_refusal_on_a_one_way_read_is_not_learnt(self):
        pipe = pipeline(budget=600)
        pipe.engine.read_all = lambda reads: (_ for _ in ()).throw(
            OverBudget([Problem(("state",), "x", "too_long")], 600))
        with self.assertRaises(InvalidRequest):
            pipe.reader.read(Decision("m", "short", (NOUL_Q,), CAUSAL))
        self.assertIsNone(pipe.engine.two_way_budget)

    def test_resolve_checks_model_then_options_then_mode(self):
        pipe = pipeline(budget=600, two_way=False)
        bad = Request("nope", "s", (NOUL_Q,), TWO_WAY, {"layout": {"repeat": 99}}, (), None)
        with self.assertRaises(ModelNotFound):
            pipe.resolve(bad)
        with self.assertRaises(InvalidRequest):
            pipe.resolve(Request(PROFILE.model_name, "s", (NOUL_Q,), TWO_WAY,
                                 {"layout": {"repeat": 99}}, (), None))
        d = pipe.resolve(Request(PROFILE.aliases[0], "s", (NOUL_Q,), None,
                                 {"layout": {"repeat": 2}}, (), None))
        self.assertEqual((d.model, d.attention_mode, d.layout.repeat),
                         (PROFILE.model_name, PROFILE.attention_mode, 2))


if __name__ == "__main__":
    unittest.main()
