"""Stdlib-only tests of the render step (onepass/steps/render.py): the route's adapter renders
the record's outcome, decision and request meta, and the document is the record's response.
Run: python3 -S -m unittest tests.unit.steps.test_render
"""
import unittest
from types import SimpleNamespace

from onepass.api import systemone
from onepass.decision_model import Answer, Outcome
from onepass.steps.record import Record
from onepass.steps.render import render
from tests.support.build_decision import from_body
from tests.support.systemone_bodies import NOUL_Q, req


class TestRender(unittest.TestCase):
    def test_the_adapter_renders_the_outcome(self):
        seen = []
        adapter = SimpleNamespace(render=lambda *args: seen.append(args) or {"doc": 1})
        r = Record(adapter=adapter, request=SimpleNamespace(meta="meta"),
                   decision="decision", outcome="outcome")
        self.assertEqual(render(r).response, {"doc": 1})
        self.assertEqual(seen, [("outcome", "decision", "meta")])

    def test_a_systemone_answer_in_its_shape(self):
        d, meta = from_body(systemone, req({"refund": NOUL_Q}))
        outcome = Outcome((Answer(d.questions[0].kind, (0.8, 0.2), 0.0, 1, 0.8),), 12, "causal")
        doc = render(Record(adapter=systemone, request=SimpleNamespace(meta=meta), decision=d,
                            outcome=outcome)).response
        self.assertEqual(doc["answers"], {"refund": {"type": "noul", "noul": 0.8}})
        self.assertEqual(doc["usage"], {"input_tokens": 12, "output_tokens": 0})


if __name__ == "__main__":
    unittest.main()
