"""Stdlib-only tests of the JSON Schemas of both APIs (onepass/openapi/schemas.py) against what the
adapters render and accept, with a small checker of the keywords the schemas use (no
jsonschema: tests/live/test_openapi_examples.py holds the docs' examples to the document with
it): obj() closed, open, or open to x_ extensions; the answers and errors each adapter renders
fit their schemas exactly (one more field is refused, an x_ one is not); bodies the adapters
accept fit the request schemas, at the limits the adapters hold them to; and the attention modes
are the ones the server knows. The document built from them: tests/unit/test_openapi.py.
Run: python3 -S -m unittest tests.unit.openapi.test_schemas
"""
import copy
import re
import unittest

from onepass import kinds
from onepass.api import decisions, models, systemone
from onepass.decision_model import MODE_NAMES, Effort, Outcome
from onepass.errors import InvalidRequest, NotFound, Overloaded, Problem
from onepass.kinds.adapters import Decisions, SystemOne
from onepass.kinds.base import MAX_OPTIONS, Kind
from onepass.openapi import schemas
from onepass.prompt.fitting import Selection
from tests.support.build_decision import from_body
from tests.support.openai_calls import CHOICE, PREDICATE, SCORE
from tests.support.systemone_bodies import CHOICE_Q, NOUL_Q, SCORE_Q, req
from tests.support.unit_profile import PROFILE

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def fits(value, schema) -> bool:
    """Whether `value` meets `schema` (type, const, enum, anyOf, bounds, properties, required,
    additional and pattern properties, items)."""
    if "anyOf" in schema and not any(fits(value, s) for s in schema["anyOf"]):
        return False
    if "const" in schema and (value != schema["const"] or type(value) is not type(schema["const"])):
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    allowed = schema.get("type")
    if allowed and not any(is_type(value, t) for t in ([allowed] if isinstance(allowed, str)
                                                       else allowed)):
        return False
    if is_type(value, "number") and not (schema.get("minimum", value) <= value
                                         <= schema.get("maximum", value)):
        return False
    if isinstance(value, list):
        return (schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value))
                and all(fits(v, schema.get("items", {})) for v in value))
    if not isinstance(value, dict):
        return True
    props, extra = schema.get("properties", {}), schema.get("additionalProperties", True)
    for key, v in value.items():
        pattern = next((s for p, s in schema.get("patternProperties", {}).items()
                        if re.match(p, key)), None)
        sub = props.get(key, pattern if pattern is not None else extra)
        if sub is False or (isinstance(sub, dict) and not fits(v, sub)):
            return False
    return (set(schema.get("required", ())) <= set(value) and schema.get("minProperties", 0)
            <= len(value) <= schema.get("maxProperties", len(value)))


def is_type(value, name: str) -> bool:
    if name in ("number", "integer"):
        whole = isinstance(value, int) or name == "number" and isinstance(value, float)
        return whole and not isinstance(value, bool)
    return isinstance(value, TYPES[name])


def rendered(api, body) -> dict:
    """The adapter's response document for `body`, each answer its kind's at a leaning
    distribution, with a re-read and a cut state (x_effort_used)."""
    d, meta = from_body(api, body)
    answers = tuple(kinds.get(q.kind).answer([0.7] + [0.3 / (len(q.options) - 1)]
                                             * (len(q.options) - 1), q) for q in d.questions)
    outcome = Outcome(answers, 33, "causal", effort=Effort(
        rereads=1, reread_below=0.6, selections=(Selection(0, 40, 90, "bm25"),)))
    return api.render(outcome, d, meta)


class TestObj(unittest.TestCase):
    def test_closed_open_or_open_to_extensions(self):
        """obj: closed by default; extra=True open; extra="x_" closed but for x_ fields."""
        props = {"a": {"type": "integer"}}
        closed, opened, x = (schemas.obj(props, ["a"], extra=e) for e in (False, True, "x_"))
        self.assertEqual((closed["required"], closed["additionalProperties"]), (["a"], False))
        self.assertNotIn("additionalProperties", opened)
        for doc, want in (({"a": 1, "b": 2}, (False, True, False)),
                          ({"a": 1, "x_b": 2}, (False, True, True)), ({}, (False, False, False))):
            self.assertEqual(tuple(fits(doc, s) for s in (closed, opened, x)), want, doc)


class TestRendered(unittest.TestCase):
    def test_systemone_answers_fit_exactly(self):
        """systemone_response: the rendered document fits; a field outside the contract on an
        answer does not, an x_ field does."""
        doc = rendered(systemone, req({"r": NOUL_Q, "t": CHOICE_Q, "a": SCORE_Q}))
        schema = schemas.systemone_response()
        self.assertTrue(fits(doc, schema), doc)
        for qid in doc["answers"]:
            extra, extension = copy.deepcopy(doc), copy.deepcopy(doc)
            extra["answers"][qid]["note"] = "x"
            extension["answers"][qid]["x_note"] = "x"
            self.assertEqual((fits(extra, schema), fits(extension, schema)), (False, True), qid)

    def test_decisions_answers_fit_exactly(self):
        doc = rendered(decisions, {"model": "jev-latest", "input": "I was charged twice.",
                                   "questions": [PREDICATE, CHOICE, SCORE]})
        schema = schemas.decisions_response()
        self.assertTrue(fits(doc, schema), doc)
        doc["usage"]["spent"] = 1
        self.assertFalse(fits(doc, schema))

    def test_errors_fit_their_shapes(self):
        """render_error: validation as VALIDATION, others as DETAIL; /v1/decisions's as
        OPENAI_ERROR; the model list as MODELS."""
        invalid = InvalidRequest([Problem(("questions", "q", 0), "bad", "value_error")])
        self.assertTrue(fits(systemone.render_error(invalid)[1], schemas.VALIDATION))
        self.assertTrue(fits(systemone.render_error(NotFound("no"))[1], schemas.DETAIL))
        self.assertFalse(fits(systemone.render_error(NotFound("no"))[1], schemas.VALIDATION))
        for err in (invalid, Overloaded("busy", retry_after_ms=5)):
            self.assertTrue(fits(decisions.render_error(err)[1], schemas.OPENAI_ERROR), err)
        self.assertTrue(fits(models.document(PROFILE), schemas.MODELS))


class TestRequests(unittest.TestCase):
    def test_accepted_bodies_fit_at_the_adapters_limits(self):
        """systemone_request: what the adapter accepts fits, unknown top-level fields and the
        options included; 2 to 10 levels and 2 to 255 options (the contracts' caps, which each
        kind's schema states), as the adapter at that cap."""
        schema = schemas.systemone_request(400)
        most = {str(i): None for i in range(MAX_OPTIONS)}
        for body in (req({"r": NOUL_Q, "t": CHOICE_Q, "a": SCORE_Q}, x_trace_id="t",
                         attention_mode="two-way", kwargs={"layout": {"repeat": 2}}),
                     req({"a": {"type": "score", "criteria": ["l"] * 10}}),
                     req({"t": {"type": "choice", "criteria": most}})):
            from_body(systemone, body, max_options=MAX_OPTIONS)
            self.assertTrue(fits(body, schema), body)
        for question in ({"type": "score", "criteria": ["l"] * 11},
                         {"type": "choice", "criteria": {**most, "one more": None}}):
            with self.assertRaises(InvalidRequest):
                from_body(systemone, req({"q": question}), max_options=MAX_OPTIONS)
            self.assertFalse(fits(req({"q": question}), schema), list(question))

    def test_decisions_bodies_and_the_modes(self):
        """decisions_request: an accepted body fits; MODES are every name the server knows."""
        body = {"model": "jev-latest", "input": "I was charged twice.",
                "questions": [PREDICATE, CHOICE, SCORE], "prompt_cache_key": "k"}
        from_body(decisions, body)
        self.assertTrue(fits(body, schemas.decisions_request(400)))
        self.assertEqual(set(schemas.MODES), set(MODE_NAMES))


class ToyOnSystemOne(SystemOne):
    type = "toy"


class ToyOnDecisions(Decisions):
    type = "toy_decision"


class Toy(Kind):
    """A kind with the adapters' default schemas."""
    name, systemone, decisions = "toy", ToyOnSystemOne(), ToyOnDecisions()


class TestKinds(unittest.TestCase):
    def test_each_anyof_asks_the_registry_in_its_order(self):
        """The questions and answers of both APIs are the registered kinds' schemas, in
        registration order; a kind registered after import closes each list."""
        def types(anyof):
            return [s["properties"]["type"]["const"] for s in anyof["anyOf"]]
        def questions():
            return schemas.decisions_request(8)["properties"]["questions"]["items"]

        def answers():
            return schemas.decisions_response()["properties"]["answers"]["items"]
        builtin = ["noul", "choice", "score", "box", "number"]
        self.assertEqual(types(schemas.systemone_question()), builtin)
        self.assertEqual(types(schemas.systemone_answer()), builtin)
        self.assertEqual(types(questions()), ["predicate", "choice", "score"])
        self.assertEqual(types(answers()), ["predicate", "choice", "score"])
        kinds.register(Toy())
        self.addCleanup(kinds.unregister, "toy")
        self.assertEqual(types(schemas.systemone_question()), builtin + ["toy"])
        self.assertEqual(types(schemas.systemone_answer()), builtin + ["toy"])
        self.assertEqual(types(questions())[-1], "toy_decision")
        self.assertEqual(types(answers())[-1], "toy_decision")
        self.assertEqual(schemas.systemone_question()["anyOf"][-1],
                         ToyOnSystemOne().question_schema())


if __name__ == "__main__":
    unittest.main()
