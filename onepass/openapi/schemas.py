"""The JSON Schemas of both APIs' bodies and answers, for the OpenAPI document.

Owns: one schema per request, question, answer and error shape, written to be no stricter than
the adapters' checks (a body the schema refuses is refused by the server too: the schemathesis
test sends such bodies and expects a 4xx) and exactly as strict as what the server renders.
Never: validates a request itself (api/ does) or serves anything (openapi/__init__ does).
"""
from __future__ import annotations

TEXT = {"type": ["string", "object", "array"],
        "description": "text, or any JSON object or array (the model reads it as compact JSON)"}
TEXT_OR_NULL = {"type": ["string", "object", "array", "null"]}
PROBABILITY = {"type": "number", "minimum": 0, "maximum": 1}
COUNT = {"type": "integer", "minimum": 0}
EXTENSIONS = {"^x_": {}}  # the contract allows extra fields only with the x_ prefix
MODES = ["causal", "one-way", "bidirectional", "two-way"]
# what both APIs take beside their own fields (api/checks.py); kwargs of another type is ignored
OPTIONS = {"attention_mode": {"enum": MODES},
           "kwargs": {"description": "per-request overrides (docs/configuration.md)",
                      "properties": {"attention_mode": {"enum": MODES},
                                     "layout": {"type": ["object", "null"]},
                                     "calibration": {"type": ["object", "null"]}}}}


def obj(properties: dict, required=(), extra=False, **more) -> dict:
    """An object schema; `extra` False closes it (x_ extensions stay open on answers)."""
    schema = {"type": "object", "properties": properties, **more}
    if required:
        schema["required"] = list(required)
    if extra is not True:
        schema["additionalProperties"] = False
    if extra == "x_":
        schema["patternProperties"] = EXTENSIONS
    return schema


def kind(name: str) -> dict:
    return {"const": name}


# -- /v1/systemone ------------------------------------------------------------------------------
def systemone_question(max_options: int) -> dict:
    noul = obj({"type": kind("noul"), "instructions": TEXT_OR_NULL,
                "criteria": {"type": ["object", "null"], "additionalProperties": False,
                             "properties": {"true": TEXT_OR_NULL, "false": TEXT_OR_NULL}}},
               ["type"], description="yes/no; needs instructions or a criteria side")
    choice = obj({"type": kind("choice"), "instructions": TEXT_OR_NULL,
                  "criteria": {"type": "object", "minProperties": 2,
                               "maxProperties": max_options,
                               "additionalProperties": TEXT_OR_NULL,
                               "description": "option name -> description (null: by name)"}},
                 ["type", "criteria"])
    score = obj({"type": kind("score"), "instructions": TEXT_OR_NULL,
                 "criteria": {"type": "array", "minItems": 2, "maxItems": 10, "items": TEXT,
                              "description": "level descriptions, level 0 first"}},
                ["type", "criteria"])
    box = obj({"type": kind("box"), "instructions": TEXT,
               "box": obj({"mode": {"enum": ["generate", "edges", "hybrid"]}})},
              ["type", "instructions"],
              description="where a named object is in the request's one image (vision "
                          "profiles only; elsewhere 422)")
    number = obj({"type": kind("number"), "instructions": TEXT}, ["type", "instructions"],
                 description="a number read from the state, with the text it was read from "
                             "(a server without the number kind answers 422)")
    return {"anyOf": [noul, choice, score, box, number]}


def systemone_request(max_questions: int, max_options: int) -> dict:
    asset = {"type": "object", "required": ["type"], "additionalProperties": False,
             "properties": {"type": kind("image"), "part": {"type": "string"},
                            "format": {"enum": ["png", "jpg", "jpeg"]},
                            "data_base64": {"type": "string"}},
             "anyOf": [{"required": ["part"]}, {"required": ["format", "data_base64"]}]}
    return obj({
        "model": {"type": "string", "examples": ["jev-latest"],
                  "description": "jev-latest or the concrete name (else 404)"},
        "state": TEXT,
        "questions": {"type": "object", "minProperties": 1, "maxProperties": max_questions,
                      "propertyNames": {"minLength": 1},
                      "additionalProperties": systemone_question(max_options),
                      "description": "question id -> question; answers come back under the ids"},
        "images": {"type": "array", "items": {"type": ["string", "object"]},
                   "description": "data URLs, base64 or https links (vision profiles)"},
        "assets": {"type": "object", "minProperties": 1, "propertyNames": {"minLength": 1},
                   "additionalProperties": asset},
        **OPTIONS,
    }, ["model", "state", "questions"], extra=True,
        description="unknown top-level fields are ignored")


def systemone_answer() -> dict:
    noul = obj({"type": kind("noul"), "noul": PROBABILITY}, ["type", "noul"], extra="x_")
    choice = obj({"type": kind("choice"), "choice": {"type": "string"},
                  "probabilities": {"type": "object", "additionalProperties": PROBABILITY},
                  "confidence": PROBABILITY},
                 ["type", "choice", "probabilities", "confidence"], extra="x_")
    score = obj({"type": kind("score"), "score": {"type": "number", "minimum": 0, "maximum": 9},
                 "legend": {"type": "object", "additionalProperties": TEXT},
                 "probabilities": {"type": "object", "additionalProperties": PROBABILITY},
                 "confidence": PROBABILITY},
                ["type", "score", "legend", "probabilities", "confidence"], extra="x_")
    edge = {"type": "number", "minimum": 0, "maximum": 1}
    box = obj({"type": kind("box"),
               "box": obj({k: edge for k in ("left", "top", "right", "bottom")},
                          ("left", "top", "right", "bottom")),
               "confidence": PROBABILITY, "present": PROBABILITY, "found": {"type": "boolean"},
               "x_box_mode": {"enum": ["generate", "edges", "hybrid"]},
               "x_box_logprob": {"type": ["number", "null"]},
               "x_box_raw": {"type": ["array", "null"], "items": {"type": "number"}}},
              ["type", "box", "confidence", "present", "found"], extra="x_")
    number = obj({"type": kind("number"), "number": {"type": ["number", "null"]},
                  "text": {"type": "string"}, "confidence": PROBABILITY},
                 ["type", "number", "text", "confidence"], extra="x_")
    return {"anyOf": [noul, choice, score, box, number]}


def effort_used() -> dict:
    return {"type": "object", "description": "what was done beyond one plain read per question",
            "properties": {
                "reread": obj({"below": {"type": "number"}, "first_weight": {"type": "number"},
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
        obj({"type": kind(n), **PART_FIELDS[n]}, ["type", *list(PART_FIELDS[n])[:1]], extra=True)
        for n in names]}}


def content(*names: str) -> dict:
    return {"anyOf": [{"type": "string"}, parts(*names)]}


def decisions_request(max_questions: int, max_options: int) -> dict:
    everything = tuple(PART_FIELDS)
    message = obj({"type": kind("message"),
                   "role": {"enum": ["user", "developer", "system", "assistant"]},
                   "content": content(*everything)}, ["role", "content"], extra=True)
    string = {"type": "string"}
    call = [obj({"type": kind(t), "call_id": string, "name": string, field: string},
                ["type", "call_id", "name", field], extra=True)
            for t, field in (("function_call", "arguments"), ("custom_tool_call", "input"))]
    output = obj({"type": {"enum": ["function_call_output", "custom_tool_call_output"]},
                  "call_id": string, "output": content("input_text", "input_image")},
                 ["type", "call_id", "output"], extra=True,
                 description="must follow a tool call with its call_id")
    common = {"name": {"type": ["string", "null"]},
              "instructions": content("input_text", "input_image", "input_json")}
    described = {"description": {"type": ["string", "null"]}}
    questions = [
        obj({"type": kind("predicate"), **common}, ["type", "instructions"]),
        obj({"type": kind("choice"), **common, "choices": {
            "type": "array", "minItems": 2, "maxItems": max_options, "uniqueItems": True,
            "items": obj({"value": {"type": ["string", "boolean"]}, **described}, ["value"])}},
            ["type", "instructions", "choices"]),
        obj({"type": kind("score"), **common, "levels": {
            "type": "array", "minItems": 2, "maxItems": 10,
            "items": obj({"label": string, **described}, ["label"])}},
            ["type", "instructions", "levels"])]
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
    name = {"type": ["string", "null"]}
    value = {"type": ["string", "boolean"]}
    answers = {"type": "array", "description": "in question order", "items": {"anyOf": [
        obj({"type": kind("predicate"), "name": name, "probability": PROBABILITY},
            ["type", "name", "probability"], extra="x_"),
        obj({"type": kind("choice"), "name": name, "choice": value, "confidence": PROBABILITY,
             "probabilities": {"type": "array", "items": obj(
                 {"value": value, "probability": PROBABILITY}, ["value", "probability"])}},
            ["type", "name", "choice", "confidence", "probabilities"], extra="x_"),
        obj({"type": kind("score"), "name": name,
             "score": {"type": "number", "minimum": 0, "maximum": 9},
             "confidence": PROBABILITY, "probabilities": {"type": "array", "items": obj(
                 {"value": COUNT, "label": {"type": "string"}, "probability": PROBABILITY},
                 ["value", "label", "probability"])}},
            ["type", "name", "score", "confidence", "probabilities"], extra="x_")]}}
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
HEALTH = obj({"status": {"enum": ["ok", "live", "warming", "failed", "draining"]},
              "warming": {"type": "boolean"}, "draining": {"type": "boolean"},
              "model": {"type": "string"}, "profile": {"type": "string"},
              "attention_modes": {"type": "array", "items": {"enum": ["causal", "bidirectional"]}},
              "default_attention_mode": {"type": "string"}, "reason": {"type": "string"}},
             ["status"])
# System One's list (typesafe-sdk) and OpenAI's (the openai client) in one document
MODELS = obj({"models": {"type": "array", "minItems": 1, "items": obj(
    {"name": {"type": "string"}, "description": {"type": "string"},
     "release_date": {"type": "string"}}, ["name", "description", "release_date"])},
    "object": kind("list"), "data": {"type": "array", "minItems": 1, "items": obj(
        {"id": {"type": "string"}, "object": kind("model"), "created": COUNT,
         "owned_by": {"type": "string"}}, ["id", "object", "created", "owned_by"])}},
    ["models", "object", "data"])
