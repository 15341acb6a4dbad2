"""Stdlib-only tests of the /v1/decisions adapter (no vLLM): OpenAI's request grammar into the one
internal Decision, answers and errors in OpenAI's shapes, and the same prompts as /v1/systemone
for the same decision. Run: python3 -m unittest tests.unit.api.test_decisions
"""
import json
import unittest

from onepass.steps import readout
from onepass.api import Limits, decisions, systemone
from onepass.decision_model import Option, ReadResult
from tests.support.kind_names import CHOICE, NOUL, SCORE
from onepass.errors import (AuthInvalid, AuthMissing, InvalidRequest, ModelNotFound,
                            Overloaded)
from onepass.prompt.layout import layout
from tests.support.build_decision import from_body
from tests.support.openai_calls import CHOICE as CHOICE_Q, PREDICATE, SCORE as SCORE_Q
from tests.support.unit_profile import LABELS, PROFILE


def parse(request, api=decisions, **kw):
    return from_body(api, request, **kw)
def body(questions, **extra):
    return {"model": "jev-latest", "input": "I was charged twice.", "questions": questions,
            **extra}


def params(request) -> list:
    """The OpenAI error `param` of every problem the adapter finds."""
    with unittest.TestCase().assertRaises(InvalidRequest) as ctx:
        parse(request)
    return [decisions.param(p.loc) for p in ctx.exception.problems]


class TestParse(unittest.TestCase):
    def test_three_types_become_the_internal_questions(self):
        """decisions: predicate, choice and score map to noul, choice and score, in order."""
        d, meta = parse(body([PREDICATE, CHOICE_Q, SCORE_Q]))
        self.assertEqual((d.model, d.state), ("concrete", "I was charged twice."))
        self.assertEqual([q.kind for q in d.questions], [NOUL, CHOICE, SCORE])
        self.assertEqual(meta.names, ("refund", "team", "anger"))
        self.assertEqual(d.questions[1].options, (Option("billing", "Payments and refunds"),
                                                  Option("tech", None)))
        self.assertEqual([o.text for o in d.questions[2].options],
                         ["calm", "annoyed: some frustration", "furious"])
        self.assertEqual(meta.values[2], ("calm", "annoyed", "furious"))

    def test_typed_values_and_unnamed_questions(self):
        """decisions: `true` and `"true"` are two choices; an unnamed question's name is None."""
        q = {"type": "choice", "instructions": "Ship it?",
             "choices": [{"value": True}, {"value": "true"}, {"value": False}]}
        d, meta = parse(body([q]))
        self.assertEqual(meta.values, ((True, "true", False),))
        self.assertEqual(meta.names, (None,))
        self.assertEqual(len(d.questions[0].options), 3)
        dup = {**q, "choices": [{"value": True}, {"value": True}]}
        self.assertEqual(params(body([dup])), ["questions[0].choices[1].value"])

    def test_messages_parts_and_tool_items_render_into_the_state(self):
        """decisions: every input item kind, with and without type: message, in order."""
        items = [{"role": "developer", "content": [{"type": "input_text", "text": "Be strict."}]},
                 {"type": "message", "role": "user", "content": [
                     {"type": "input_text", "text": "Order 4471 arrived.",
                      "prompt_cache_breakpoint": {"mode": "explicit"}},
                     {"type": "input_json", "data": {"order": 4471, "items": ["mug"]}}]},
                 {"role": "assistant", "content": [{"type": "output_text", "text": "Checking."}],
                  "phase": "commentary"},
                 {"type": "function_call", "call_id": "c1", "name": "lookup",
                  "arguments": "{\"order\":4471}", "id": "fc_1", "status": "completed"},
                 {"type": "function_call_output", "call_id": "c1", "output": "shipped"},
                 {"type": "custom_tool_call", "call_id": "c2", "name": "grep", "input": "mug"},
                 {"type": "custom_tool_call_output", "call_id": "c2",
                  "output": [{"type": "input_text", "text": "1 match"}]},
                 {"role": "system", "content": "Answer briefly."}]
        q = {**PREDICATE, "instructions": [{"type": "input_text", "text": "Refund?"},
                                           {"type": "input_json", "data": [1, 2]}]}
        d, _ = parse(body([q], input=items, prompt_cache_key="tenant-a",
                                    safety_identifier="user-1", top_logprobs=5))
        self.assertEqual(d.state, "developer: Be strict.\n\n"
                                  "user: Order 4471 arrived.\n{\"order\":4471,\"items\":[\"mug\"]}"
                                  "\n\nassistant: Checking.\n\n"
                                  "tool call c1: lookup({\"order\":4471})\n\n"
                                  "tool output c1: shipped\n\n"
                                  "tool call c2: grep(mug)\n\ntool output c2: 1 match\n\n"
                                  "system: Answer briefly.")
        self.assertEqual(d.questions[0].instructions, "Refund?\n[1,2]")

    def test_problems_name_the_field_openai_style(self):
        """decisions: every mistake is found, each with its param path."""
        self.assertEqual(params({}), ["model", "input", "questions"])
        self.assertEqual(params(body([{**CHOICE_Q, "choices": [{"value": "a"}]}])),
                         ["questions[0].choices"])
        self.assertEqual(params(body([{"type": "predicate"}, {"type": "boolean"},
                                      {**SCORE_Q, "levels": [{"label": "x"}] * 11},
                                      {**PREDICATE, "criteria": {}}])),
                         ["questions[0].instructions", "questions[1].type",
                          "questions[2].levels", "questions[3].criteria"])
        self.assertEqual(params(body([])), ["questions"])
        self.assertEqual(params(body([PREDICATE] * 401)), ["questions"])
        self.assertEqual(params(body([PREDICATE], input=[
            {"type": "function_call_output", "call_id": "nope", "output": "x"}])),
            ["input[0].call_id"])
        self.assertEqual(params(body([PREDICATE], input=[{"role": "developer", "content": [
            {"type": "input_json", "data": {}}]}])), ["input[0].content[0]"])
        deep = {}
        for _ in range(40):
            deep = {"a": deep}
        self.assertEqual(params(body([PREDICATE], input=[{"role": "user", "content": [
            {"type": "input_json", "data": deep}]}])), ["input[0].content[0].data"])

    def test_a_text_model_refuses_images(self):
        """decisions: on a text-only model any image (a link or a data URL, in the input or in
        instructions) is a 400 naming its image_url, before anything is fetched."""
        for url in ("https://example.com/a.png", "data:image/png;base64,iVBORw0KGgo="):
            part = {"type": "input_image", "image_url": url}
            self.assertEqual(params(body([PREDICATE], input=[{"role": "user", "content": [part]}])),
                             ["input[0].content[0].image_url"])
            with self.assertRaises(InvalidRequest) as ctx:
                parse(body([{**PREDICATE, "instructions": [part]}]))
            self.assertIn("reads text only", ctx.exception.problems[0].msg)
            self.assertEqual(ctx.exception.problems[0].loc, ("questions", 0, "instructions", 0,
                                                             "image_url"))
        part = {"type": "input_image", "file_id": "file-1"}
        self.assertEqual(params(body([PREDICATE], input=[{"role": "user", "content": [part]}])),
                         ["input[0].content[0].image_url"])

    def test_attention_mode_and_kwargs_as_on_systemone(self):
        """decisions: attention_mode (extra_body, top level) and kwargs reach the Decision."""
        request = decisions.parse(body([PREDICATE], attention_mode="two-way",
                                       kwargs={"layout": {"repeat": 2}}), None,
                                  Limits(max_options=255, max_questions=400))
        seen = [request.overrides]
        d, _ = parse(body([PREDICATE], attention_mode="two-way", kwargs={"layout": {"repeat": 2}}))
        self.assertEqual((d.attention_mode, seen), ("bidirectional", [{"layout": {"repeat": 2}}]))
        self.assertEqual(params(body([PREDICATE], attention_mode="sideways")), ["attention_mode"])

    def test_unknown_model_is_404_model_not_found(self):
        with self.assertRaises(ModelNotFound):
            parse({**body([PREDICATE]), "model": "gpt-6-luna"})


class TestRender(unittest.TestCase):
    def outcome(self, request):
        d, meta = parse(request)
        reads = layout(d, PROFILE, LABELS)
        results = [ReadResult((-0.1, -2.4), 10, 4), ReadResult((-3.0, -0.05, -1.0), 11, 6),
                   ReadResult((-2.0, -0.2, -1.9), 12, 0)][:len(reads)]
        probs = readout.probabilities(d, reads, results, PROFILE.calibration, 0.0)
        return decisions.render(readout.outcome(d, probs, results), d, meta)

    def test_answers_are_a_list_in_question_order(self):
        """decisions: names (null when unnamed), typed choices, score {value, label}, usage."""
        boolean = {"type": "choice", "instructions": "Ship?",
                   "choices": [{"value": True}, {"value": False}, {"value": "false"}]}
        out = self.outcome(body([PREDICATE, boolean, SCORE_Q]))
        predicate, choice, score = out["answers"]
        self.assertEqual(set(predicate), {"type", "name", "probability"})
        self.assertEqual(predicate["name"], "refund")
        self.assertIs(choice["name"], None)
        self.assertIs(choice["choice"], False)  # the most likely of the three, as a JSON boolean
        self.assertEqual([p["value"] for p in choice["probabilities"]], [True, False, "false"])
        self.assertEqual([(p["value"], p["label"]) for p in score["probabilities"]],
                         [(0, "calm"), (1, "annoyed"), (2, "furious")])
        self.assertAlmostEqual(score["score"], sum(p["value"] * p["probability"]
                                                   for p in score["probabilities"]))
        self.assertEqual(out["usage"], {"input_tokens": 33, "output_tokens": 0, "total_tokens": 33,
                                        "input_tokens_details": {"cached_tokens": 10,
                                                                 "cache_write_tokens": 0},
                                        "output_tokens_details": {"reasoning_tokens": 0}})
        json.dumps(out, allow_nan=False)

    def test_errors_in_openai_envelope(self):
        """decisions: 400 with param, 401 invalid_api_key for a missing or wrong key, 404
        model_not_found, and the retryable statuses unchanged."""
        with self.assertRaises(InvalidRequest) as ctx:
            parse(body([{**CHOICE_Q, "choices": [{"value": "a"}]}]))
        status, doc = decisions.render_error(ctx.exception)
        self.assertEqual((status, doc["error"]["param"], doc["error"]["type"]),
                         (400, "questions[0].choices", "invalid_request_error"))
        self.assertIn("between 2 and 255", doc["error"]["message"])
        for err in (AuthMissing("missing"), AuthInvalid("wrong")):
            status, doc = decisions.render_error(err)
            self.assertEqual((status, doc["error"]["code"]), (401, "invalid_api_key"))
        status, doc = decisions.render_error(ModelNotFound("Unknown model: x"))
        self.assertEqual((status, doc["error"]["code"], doc["error"]["param"]),
                         (404, "model_not_found", "model"))
        status, doc = decisions.render_error(Overloaded("busy", retry_after_ms=200))
        self.assertEqual(set(doc["error"]), {"message", "type", "param", "code"})
        self.assertEqual(status, 529)


class TestSameDecision(unittest.TestCase):
    def test_both_apis_lay_out_the_same_prompts(self):
        """The same decision through either adapter gives identical reads (so answers)."""
        so, _ = parse({"model": "jev-latest", "state": "I was charged twice.",
                                 "questions": {
                                     "refund": {"type": "noul",
                                                "instructions": PREDICATE["instructions"]},
                                     "team": {"type": "choice",
                                              "instructions": CHOICE_Q["instructions"],
                                              "criteria": {"billing": "Payments and refunds",
                                                           "tech": None}},
                                     "anger": {"type": "score",
                                               "instructions": SCORE_Q["instructions"],
                                               "criteria": ["calm", "annoyed: some frustration",
                                                            "furious"]}}},
                      api=systemone)
        oa, _ = parse(body([PREDICATE, CHOICE_Q, SCORE_Q]))
        self.assertEqual(so, oa)
        self.assertEqual(layout(so, PROFILE, LABELS), layout(oa, PROFILE, LABELS))


if __name__ == "__main__":
    unittest.main()
