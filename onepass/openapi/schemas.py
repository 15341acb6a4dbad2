"""The JSON Schemas of both APIs' bodies and answers, for the OpenAPI document.

Owns: one schema per request, response and error shape, written to be no stricter than the
adapters' checks (a body the schema refuses is refused by the server too: the schemathesis
test sends such bodies and expects a 4xx) and exactly as strict as what the server renders.
The questions and answers are each kind's own: the anyOf lists ask the registry (each kind's
adapters state their schemas, in registration order), so a kind added there is listed here.
Never: validates a request itself (api/ does) or serves anything (openapi/__init__ does).
"""
from __future__ import annotations

from .. import kinds
from ..kinds.schema_parts import COUNT, NAME, REAL, TEXT, const, obj

MODES = ["causal", "one-way", "bidirectional", "two-way"]
# what both APIs take beside their own fields (api/checks.py); kwargs of another type is ignored
OPTIONS = {"attention_mode": {"enum": MODES},
           "kwargs": {"description": "per-request overrides (docs/configuration.md)",
                      "properties": {"attention_mode": {"enum": MODES},
                                     "layout": {"type": ["object", "null"]},
                                     "calibration": {"type": ["object", "null"]}}}}


# -- /v1/systemone ------------------------------------------------------------------------------
def systemone_question() -> dict:
    return {"anyOf": [k.systemone.question_schema() for k in kinds.KINDS.values()]}


def systemone_request(max_questions: int) -> dict:
    asset = {"type": "object", "required": ["type"], "additionalProperties": False,
             "properties": {"type": const("image"), "part": {"type": "string"},
                            "format": {"enum": ["png", "jpg", "jpeg"]},
                            "data_base64": {"type": "string"}},
             "anyOf": [{"required": ["part"]}, {"required": ["format", "data_base64"]}]}
    return obj({
        "model": {"type": "string", "examples": ["jev-latest"],
                  "description": "jev-latest or the concrete name (else 404)"},
        "state": TEXT,
        "questions": {"type": "object", "minProperties": 1, "maxProperties": max_questions,
                      "propertyNames": {"minLength": 1},
                      "additionalProperties": systemone_question(),
                      "description": "question id -> question; answers come back under the ids"},
        "images": {"type": "array", "items": {"type": ["string", "object"]},
                   "description": "data URLs, base64 or https links (vision profiles)"},
        "assets": {"type": "object", "minProperties": 1, "propertyNames": {"minLength": 1},
                   "additionalProperties": asset},
        **OPTIONS,
    }, ["model", "state", "questions"], extra=True,
        description="unknown top-level fields are ignored")


def systemone_answer() -> dict:
    return {"anyOf": [k.systemone.answer_schema() for k in kinds.KINDS.values()]}


def effort_used() -> dict:
    return {"type": "object", "description": "what was done beyond one plain read per question",
            "properties": {
                "reread": obj({"below": REAL, "first_weight": REAL,
                               "questions": COUNT}, extra=True),
                "options_listed": {"type": "array", "description": "questions asked with "
                                   "option_sets whose options did not fit in one engine step: "
                                   "read as a listing, so their answer may follow the order",
                                   "items": {"type": "object"}},
                "state_selection": {"type": "array", "items": obj({
                    "kept_tokens": COUNT, "total_tokens": COUNT,
                    "method": {"type": "string"}}, ["kept_tokens", "total_tokens"],
                    extra=True)}}}


def response(answers: dict, usage: dict) -> dict:
    return obj({"model": {"type": "string"}, "answers": answers, "usage": usage,
                "x_attention_mode": {"enum": ["causal", "bidirectional"]},
                "x_effort_used": effort_used()}, ["model", "answers", "usage"], extra="x_")


def systemone_response() -> dict:
    usage = obj({"input_tokens": COUNT, "output_tokens": COUNT, "images": COUNT},
                ["input_tokens", "output_tokens"])
    return response({"type": "object", "additionalProperties": systemone_answer(),
                     "description": "question id -> answer"}, usage)


# -- /v1/decisions ------------------------------------------------------------------------------
PART_FIELDS = {"input_text": {"text": {"type": "string"}},
               "input_image": {"image_url": {"type": "string"},
                               "detail": {"enum": ["low", "high", "auto", "original"]}},
               "input_json": {"data": {"type": ["object", "array"]}},
               "output_text": {"text": {"type": "string"}},
               "refusal": {"refusal": {"type": "string"}}}


def parts(*names: str) -> dict:
    return {"type": "array", "items": {"anyOf": [
        obj({"type": const(n), **PART_FIELDS[n]}, ["type", *list(PART_FIELDS[n])[:1]], extra=True)
        for n in names]}}


def content(*names: str) -> dict:
    return {"anyOf": [{"type": "string"}, parts(*names)]}


def decisions_request(max_questions: int) -> dict:
    everything = tuple(PART_FIELDS)
    message = obj({"type": const("message"),
                   "role": {"enum": ["user", "developer", "system", "assistant"]},
                   "content": content(*everything)}, ["role", "content"], extra=True)
    string = {"type": "string"}
    call = [obj({"type": const(t), "call_id": string, "name": string, field: string},
                ["type", "call_id", "name", field], extra=True)
            for t, field in (("function_call", "arguments"), ("custom_tool_call", "input"))]
    output = obj({"type": {"enum": ["function_call_output", "custom_tool_call_output"]},
                  "call_id": string, "output": content("input_text", "input_image")},
                 ["type", "call_id", "output"], extra=True,
                 description="must follow a tool call with its call_id")
    common = {"name": NAME,
              "instructions": content("input_text", "input_image", "input_json")}
    questions = [k.decisions.question_schema(common)
                 for k in kinds.KINDS.values() if k.decisions is not None]
    return obj({
        "model": {"type": "string", "examples": ["jev-latest"]},
        "input": {"anyOf": [string, {"type": "array", "minItems": 1,
                                     "items": {"anyOf": [message, *call, output]}}]},
        "questions": {"type": "array", "minItems": 1, "maxItems": max_questions,
                      "items": {"anyOf": questions}},
        "stream": {"enum": [False, None], "description": "answers are never streamed: "
                   "true is refused with 400 (param `stream`)"},
        **OPTIONS,
    }, ["model", "input", "questions"], extra=True,
        description="prompt_cache_key, safety_identifier and other unknown fields are ignored")


def decisions_response() -> dict:
    answers = {"type": "array", "description": "in question order", "items": {"anyOf": [
        k.decisions.answer_schema() for k in kinds.KINDS.values() if k.decisions is not None]}}
    usage = obj({"input_tokens": COUNT,
                 "input_tokens_details": obj({"cached_tokens": COUNT, "cache_write_tokens": COUNT},
                                             ["cached_tokens", "cache_write_tokens"]),
                 "output_tokens": COUNT,
                 "output_tokens_details": obj({"reasoning_tokens": COUNT}, ["reasoning_tokens"]),
                 "total_tokens": COUNT, "images": COUNT},
                ["input_tokens", "input_tokens_details", "output_tokens",
                 "output_tokens_details", "total_tokens"])
    return response(answers, usage)


# -- errors and the small routes -----------------------------------------------------------
VALIDATION = obj({"detail": {"type": "array", "minItems": 1, "items": obj({
    "loc": {"type": "array", "minItems": 1, "items": {"type": ["string", "integer"]},
            "description": "the field's path, starting with \"body\""},
    "msg": {"type": "string"}, "type": {"type": "string"}}, ["loc", "msg", "type"], extra=True)}},
    ["detail"])
DETAIL = obj({"detail": obj({"error_type": {"type": "string"}, "message": {"type": "string"}},
                            ["error_type", "message"])}, ["detail"])
OPENAI_ERROR = obj({"error": obj({"message": {"type": "string"}, "type": {"type": "string"},
                                  "param": {"type": ["string", "null"]},
                                  "code": {"type": ["string", "null"]}},
                                 ["message", "type", "param", "code"])}, ["error"])
HEALTH = obj({"status": {"enum": ["ok", "live", "warming", "failed", "draining",
                                     "unresponsive"]},
              "warming": {"type": "boolean"}, "draining": {"type": "boolean"},
              "model": {"type": "string"}, "profile": {"type": "string"},
              "attention_modes": {"type": "array", "items": {"enum": ["causal", "bidirectional"]}},
              "default_attention_mode": {"type": "string"}, "reason": {"type": "string"}},
             ["status"])
# System One's list (typesafe-sdk) and OpenAI's (the openai client) in one document
MODELS = obj({"models": {"type": "array", "minItems": 1, "items": obj(
    {"name": {"type": "string"}, "description": {"type": "string"},
     "release_date": {"type": "string"}}, ["name", "description", "release_date"])},
    "object": const("list"), "data": {"type": "array", "minItems": 1, "items": obj(
        {"id": {"type": "string"}, "object": const("model"), "created": COUNT,
         "owned_by": {"type": "string"}}, ["id", "object", "created", "owned_by"])}},
    ["models", "object", "data"])
