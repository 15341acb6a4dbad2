"""Stdlib-only tests of the /v1/systemone adapter (onepass/api/systemone.py): a body's three
question types into Questions in request order, structured text as compact JSON, every invalid
case of the checklist as 422 problems rooted at body with the capacity phrases, the limits'
edges, unknown models and top-level fields, attention_mode's forms, and answers and errors
rendered in the contract's shapes. Over HTTP: test_shim.py and test_security.py.
Run: python3 -S -m unittest tests.unit.api.test_systemone
"""
import json
import unittest

from onepass.steps import readout
from onepass.api import systemone
from onepass.decision_model import Option, ReadResult
from tests.support.kind_names import CHOICE, NOUL, SCORE
from onepass.errors import BadRequest, InvalidRequest, NotFound
from onepass.prompt.layout import layout
from tests.support.build_decision import from_body
from tests.support.systemone_bodies import CHOICE_Q, NOUL_Q, SCORE_Q, req
from tests.support.unit_profile import LABELS, PROFILE


def parse(body, max_options=255):
    return from_body(systemone, body, max_options=max_options)


def problems(body, **kw):
    with unittest.TestCase().assertRaises(InvalidRequest) as ctx:
        parse(body, **kw)
    return ctx.exception.problems


class TestParse(unittest.TestCase):
    def test_parses_all_three_types(self):
        """systemone: noul, choice and score become Questions in request order."""
        decision, meta = parse(req({"r": NOUL_Q, "t": CHOICE_Q, "a": SCORE_Q}))
        self.assertEqual(meta.ids, ("r", "t", "a"))
        self.assertEqual([q.kind for q in decision.questions], [NOUL, CHOICE, SCORE])
        self.assertEqual(decision.model, "concrete")
        self.assertEqual(decision.questions[1].options, (Option("billing", "Pay"),
                                                         Option("tech", None)))

    def test_structured_text_becomes_json(self):
        """systemone: object/array state, instructions and descriptions render as compact JSON."""
        d, _ = parse({"model": "jev-latest", "state": {"subject": "Ü", "n": [1, 2]},
                      "questions": {"q": {"type": "choice", "instructions": ["a", {"b": 1}],
                                          "criteria": {"x": {"k": "v"}, "y": ["z"]}}}})
        self.assertIn('Record:\n{"subject":"Ü","n":[1,2]}\n', layout(d, PROFILE, LABELS)[0].prompt)
        self.assertEqual(d.questions[0].instructions, '["a",{"b":1}]')
        self.assertEqual(d.questions[0].options[0].text, '{"k":"v"}')

    def test_noul_criteria_forms(self):
        """systemone: noul criteria may be both sides, one side, null or absent."""
        for criteria in ({"true": "a", "false": "b"}, {"true": "a"}, {"false": "b"}, None):
            d, _ = parse(req({"q": {"type": "noul", "instructions": "?", "criteria": criteria}}))
            self.assertEqual([o.key for o in d.questions[0].options], ["true", "false"])
        d, _ = parse(req({"q": {"type": "noul", "criteria": {"true": "refund"}}}))
        self.assertIsNone(d.questions[0].instructions)

    def test_invalid_bodies_give_body_rooted_problems(self):
        """systemone: every invalid case of the checklist gives 422 problems rooted at body."""
        cases = {
            "missing state": ({"model": "m", "questions": {"q": NOUL_Q}}, ("state",)),
            "missing questions": ({"model": "jev-latest", "state": "x"}, ("questions",)),
            "missing model": ({"state": "x", "questions": {"q": NOUL_Q}}, ("model",)),
            "empty questions": (req({}), ("questions",)),
            "missing type": (req({"q": {"instructions": "x"}}), ("questions", "q", "type")),
            "boolean type": (req({"q": {"type": "boolean"}}), ("questions", "q", "type")),
            "empty choice": (req({"q": {"type": "choice", "criteria": {}}}),
                             ("questions", "q", "choice", "criteria")),
            "score map": (req({"q": {"type": "score", "criteria": {"0": "a", "1": "b"}}}),
                          ("questions", "q", "score", "criteria")),
            "state null": ({"model": "jev-latest", "state": None, "questions": {"q": NOUL_Q}},
                           ("state",)),
            "state number": ({"model": "jev-latest", "state": 3, "questions": {"q": NOUL_Q}},
                             ("state",)),
            "null level": (req({"q": {"type": "score", "criteria": ["a", None]}}),
                           ("questions", "q", "score", "criteria", 1)),
            "misspelled field": (req({"q": {"type": "noul", "instructions": "x", "critera": {}}}),
                                 ("questions", "q", "noul", "critera")),
            "bare noul": (req({"q": {"type": "noul"}}), ("questions", "q", "noul")),
            "number text": (req({"q": {"type": "noul", "instructions": 5}}),
                            ("questions", "q", "noul", "instructions")),
            "assets": (req({"q": NOUL_Q}, assets={}), ("assets",)),
        }
        for name, (body, loc) in cases.items():
            with self.subTest(name):
                self.assertIn(loc, [p.loc for p in problems(body)])

    def test_capacity_messages_carry_decision_index_markers(self):
        """systemone: out-of-range sizes name the limit with the capacity phrases."""
        one = problems(req({"q": {"type": "choice", "criteria": {"a": None}}}))
        self.assertIn("a choice needs at least two options", one[0].msg)
        many = problems(req({"q": {"type": "choice", "criteria": {str(i): None for i in range(256)}}}))
        self.assertIn("options per choice", many[0].msg)
        self.assertIn("255", many[0].msg)
        for n in (1, 11):
            p = problems(req({"q": {"type": "score", "criteria": ["l"] * n}}))
            self.assertIn("a score takes 2 to 10 levels", p[0].msg)

    def test_limits_accept_edges(self):
        """systemone: 2 and 255 options, 2 and 10 levels are accepted, each one an option."""
        for n in (2, 255):
            keys = [f"Queue {i:03}" for i in range(n)]
            d, _ = parse(req({"q": {"type": "choice", "criteria": dict.fromkeys(keys)}}))
            self.assertEqual([o.key for o in d.questions[0].options], keys)
        for n in (2, 10):
            d, meta = parse(req({"q": {"type": "score", "criteria": [f"l{i}" for i in range(n)]}}))
            self.assertEqual([o.text for o in d.questions[0].options], [f"l{i}" for i in range(n)])
            self.assertEqual(meta.legends[0], [f"l{i}" for i in range(n)])

    def test_unknown_model_and_unknown_top_level_fields(self):
        """systemone: unknown top-level fields are ignored; unknown models are 404."""
        plain, _ = parse(req({"q": NOUL_Q}))
        extra, _ = parse(req({"q": NOUL_Q}, x_trace_id="t", seed=7, reasoning={"effort": "low"}))
        self.assertEqual(extra, plain)
        with self.assertRaises(NotFound):
            parse({"model": "nope", "state": "x", "questions": {"q": NOUL_Q}})

    def test_attention_mode_forms(self):
        """systemone: attention_mode at top level or in kwargs, with its aliases; conflicts 400."""
        for extra, want in (({}, "causal"), ({"attention_mode": "two-way"}, "bidirectional"),
                            ({"kwargs": {"attention_mode": "bidirectional"}}, "bidirectional"),
                            ({"attention_mode": "one-way", "kwargs": {"attention_mode": "causal"}},
                             "causal"), ({"kwargs": "not an object"}, "causal")):
            d, _ = parse(req({"q": NOUL_Q}, **extra))
            self.assertEqual(d.attention_mode, want, extra)
            self.assertTrue(all(r.attention_mode == want for r in layout(d, PROFILE, LABELS)))
        with self.assertRaises(BadRequest) as ctx:
            parse(req({"q": NOUL_Q}, attention_mode="two-way",
                      kwargs={"attention_mode": "causal"}))
        self.assertEqual(ctx.exception.status, 400)
        [p] = problems(req({"q": NOUL_Q}, kwargs={"attention_mode": "sideways"}))
        self.assertEqual((p.loc, p.type), (("kwargs", "attention_mode"), "enum"))


class TestRender(unittest.TestCase):
    def test_render_shapes(self):
        """systemone: answers follow the contract's closed field sets; legend echoes levels."""
        body = req({"r": NOUL_Q, "t": CHOICE_Q, "a": SCORE_Q})
        d, meta = parse(body)
        reads = layout(d, PROFILE, LABELS)
        results = [ReadResult((-0.1, -2.4), 10), ReadResult((-3.0, -0.05), 11),
                   ReadResult((-2.0, -0.2, -1.9), 12)]
        probs = readout.probabilities(d, reads, results, PROFILE.calibration, 0.0)
        out = systemone.render(readout.outcome(d, probs, results), d, meta)
        self.assertEqual(set(out), {"model", "answers", "usage", "x_attention_mode"})
        self.assertEqual(out["x_attention_mode"], "causal")
        self.assertEqual(out["usage"], {"input_tokens": 33, "output_tokens": 0})
        self.assertEqual(set(out["answers"]["r"]), {"type", "noul"})
        self.assertEqual(out["answers"]["t"]["choice"], "tech")
        self.assertEqual(out["answers"]["a"]["legend"], {"0": "Calm", "1": "Annoyed", "2": "Furious"})
        self.assertEqual(list(out["answers"]["a"]["probabilities"]), ["0", "1", "2"])
        json.dumps(out, allow_nan=False)

    def test_error_shapes(self):
        """systemone: validation errors render as detail[] with body-rooted loc, others as detail{}."""
        err = InvalidRequest(problems(req({})))
        status, doc = systemone.render_error(err)
        self.assertEqual(status, 422)
        self.assertEqual(doc["detail"][0]["loc"], ["body", "questions"])
        self.assertEqual(set(doc["detail"][0]), {"loc", "msg", "type"})
        status, doc = systemone.render_error(NotFound("Unknown model: x"))
        self.assertEqual(status, 404)
        self.assertEqual(doc, {"detail": {"error_type": "not_found", "message": "Unknown model: x"}})


if __name__ == "__main__":
    unittest.main()
