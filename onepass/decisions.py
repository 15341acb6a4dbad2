"""The /v1/decisions adapter: OpenAI's Decisions request shape in, the internal Decision out, and
back (section 4 of the wire contract; openai 3.51).

Owns: every Decisions field name; rendering `input` (a string, or messages and tool items) into
the state text; predicate/choice/score into Questions (typed choice values kept aside so that
`true` and `"true"` come back as sent); answers as a list in question order; errors in OpenAI's
envelope, validation as 400 with `param` naming the field (`questions[0].choices`).
Never: lays out prompts, calibrates or calls vLLM (the same stages as /v1/systemone do).
In: a parsed JSON value. Out: (Decision, Meta) and response dicts.
"""
from __future__ import annotations

from dataclasses import dataclass

from .checks import Checker, finish
from .decision import CHOICE, NOUL, SCORE, Decision, Option, Outcome, Question, as_text
from .errors import (AuthInvalid, AuthMissing, InvalidRequest, ModelNotFound, OnepassError,
                     Problem, UnsupportedMediaType)
from .image_inputs import Collector
from .readout import effort_used

MIN_CHOICES, MAX_CHOICES = 2, 255
MIN_LEVELS, MAX_LEVELS = 2, 10
JSON_DEPTH, JSON_VALUES, JSON_BYTES = 32, 10_000, 256 * 1024  # input_json caps (OpenAI's)
KIND_OF = {"predicate": NOUL, "choice": CHOICE, "score": SCORE}
QUESTION_KEYS = {"predicate": {"type", "name", "instructions"},
                 "choice": {"type", "name", "instructions", "choices"},
                 "score": {"type", "name", "instructions", "levels"}}
TEXT_ROLES = {"developer", "system"}  # text parts only
TOOL_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
TOOL_OUTPUTS = {"function_call_output", "custom_tool_call_output"}


@dataclass(frozen=True)
class Meta:
    """What the response needs beyond the Decision: names and the typed choice values."""
    names: tuple  # per question: its name, or None
    values: tuple  # per question: choice values as sent (str or bool); level labels for scores


def parse(body, *, max_choice_options: int, max_questions: int, resolve_model, resolve_mode,
          resolve_options, files=None, image_policy=None) -> tuple[Decision, Meta]:
    """Validate a /v1/decisions body; return the Decision and the response metadata. Each
    input_image part becomes `[image N]` where it stands, numbered in reading order."""
    check = Checker()
    if files:
        raise UnsupportedMediaType("/v1/decisions takes application/json; images go in "
                                   "input_image parts")
    if not isinstance(body, dict):
        raise InvalidRequest([Problem((), "the body must be a JSON object", "invalid_type")])
    for key in ("model", "input", "questions"):
        if key not in body:
            check.add((key,), f"Missing required parameter: '{key}'.", "missing")
    model = body.get("model")
    if "model" in body and not isinstance(model, str):
        check.add(("model",), "model must be a string", "invalid_type")
    images = Collector(check)
    state = _input(body.get("input"), check, images) if "input" in body else None
    names, values, questions = [], [], []
    raw = body.get("questions")
    if "questions" in body and not isinstance(raw, list):
        check.add(("questions",), "questions must be an array", "invalid_type")
    elif isinstance(raw, list) and not 1 <= len(raw) <= max_questions:
        check.add(("questions",), f"questions must contain between 1 and {max_questions} "
                  f"items, got {len(raw)}", "array_length")
    elif isinstance(raw, list):
        limit = min(MAX_CHOICES, max_choice_options)
        for i, q in enumerate(raw):
            parsed = _question(q, ("questions", i), check, limit, images)
            if parsed:
                name, typed, question = parsed
                names.append(name)
                values.append(typed)
                questions.append(question)
    decision = finish(check, body, model=model, state=state, questions=questions,
                      resolve_model=resolve_model, resolve_mode=resolve_mode,
                      resolve_options=resolve_options, collector=images,
                      image_policy=image_policy)
    return decision, Meta(tuple(names), tuple(values))


# -- input -------------------------------------------------------------------------------
def _input(value, check: Checker, images: Collector) -> str | None:
    """A string stays the state as sent; a list of items becomes one text, an item per block."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not value:
        check.add(("input",), "input must be a string or a non-empty array of input items",
                  "invalid_type")
        return None
    blocks, calls = [], set()
    for i, item in enumerate(value):
        loc = ("input", i)
        if not isinstance(item, dict):
            check.add(loc, "an input item must be an object", "invalid_type")
            continue
        kind = item.get("type", "message")
        if kind == "message":
            blocks.append(_message(item, loc, check, images))
        elif isinstance(kind, str) and kind in TOOL_CALLS:
            blocks.append(_tool_call(item, kind, loc, check, calls))
        elif isinstance(kind, str) and kind in TOOL_OUTPUTS:
            blocks.append(_tool_output(item, loc, check, calls, images))
        else:
            check.add(loc + ("type",), f"unknown input item type {kind!r}", "invalid_value")
    return "\n\n".join(b for b in blocks if b is not None)


def _message(item: dict, loc, check: Checker, images: Collector) -> str | None:
    role, content = item.get("role"), item.get("content")
    if role not in ("user", "assistant", *TEXT_ROLES):
        check.add(loc + ("role",), "role must be user, developer, system or assistant",
                  "invalid_value")
        return None
    if "content" not in item:
        check.add(loc + ("content",), "Missing required parameter: 'content'.", "missing")
        return None
    allowed = ({"output_text", "refusal"} if role == "assistant" else
               {"input_text"} if role in TEXT_ROLES else {"input_text", "input_image", "input_json"})
    text = _content(content, loc + ("content",), check, allowed, images)
    return None if text is None else f"{role}: {text}"


def _tool_call(item: dict, kind: str, loc, check: Checker, calls: set) -> str | None:
    field = TOOL_CALLS[kind]
    parts = [item.get(key) for key in ("call_id", "name", field)]
    for key, got in zip(("call_id", "name", field), parts):
        if not isinstance(got, str):
            check.add(loc + (key,), f"{kind} needs {key} as a string", "invalid_type")
    if not all(isinstance(p, str) for p in parts):
        return None
    calls.add(parts[0])
    return f"tool call {parts[0]}: {parts[1]}({parts[2]})"


def _tool_output(item: dict, loc, check: Checker, calls: set,
                 images: Collector) -> str | None:
    call_id = item.get("call_id")
    if not isinstance(call_id, str):
        check.add(loc + ("call_id",), "a tool output needs call_id as a string", "invalid_type")
        return None
    if call_id not in calls:
        check.add(loc + ("call_id",), f"no earlier tool call has call_id {call_id!r}",
                  "invalid_value")
        return None
    text = _content(item.get("output"), loc + ("output",), check, {"input_text", "input_image"},
                    images)
    return None if text is None else f"tool output {call_id}: {text}"


def _content(value, loc, check: Checker, allowed: set, images: Collector) -> str | None:
    """A string, or parts of the allowed types joined by newlines."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        check.add(loc, "content must be a string or an array of parts", "invalid_type")
        return None
    texts = []
    for j, part in enumerate(value):
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str) or kind not in allowed:
            check.add(loc + (j,), f"a part here must be one of {', '.join(sorted(allowed))}",
                      "invalid_value")
        else:
            texts.append(_part(part, kind, loc + (j,), check, images))
    return "\n".join(t for t in texts if t is not None)


def _part(part: dict, kind: str, loc, check: Checker, images: Collector) -> str | None:
    if kind == "input_image":  # the image stands here as its label; file ids are not stored
        if "image_url" not in part:
            check.add(loc + ("image_url",), "this server reads images from image_url only "
                      "(a data: URL or an https link; file ids are not supported)", "missing")
            return None
        return images.url(part["image_url"], loc + ("image_url",))
    if kind == "input_json":
        data = part.get("data")
        if not isinstance(data, (dict, list)):
            check.add(loc + ("data",), "input_json data must be an object or an array",
                      "invalid_type")
            return None
        text = as_text(data)
        if _too_big(data, 0, [0]) or len(text.encode()) > JSON_BYTES:
            check.add(loc + ("data",), f"input_json data is limited to {JSON_DEPTH} levels, "
                      f"{JSON_VALUES} values and {JSON_BYTES // 1024} KiB", "invalid_value")
            return None
        return text
    field = {"input_text": "text", "output_text": "text", "refusal": "refusal"}[kind]
    if not isinstance(part.get(field), str):
        check.add(loc + (field,), f"{kind} needs {field} as a string", "invalid_type")
        return None
    return part[field]


def _too_big(value, depth: int, count: list) -> bool:
    """Deeper than JSON_DEPTH containers, or more than JSON_VALUES values in all."""
    count[0] += 1
    if count[0] > JSON_VALUES or depth > JSON_DEPTH:
        return True
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return any(_too_big(child, depth + 1, count) for child in children)


# -- questions ---------------------------------------------------------------------------
def _question(q, loc, check: Checker, max_choices: int, images: Collector):
    """(name, typed values, Question) or None, with every problem recorded."""
    if not isinstance(q, dict):
        check.add(loc, "a question must be an object", "invalid_type")
        return None
    api_kind = q.get("type")
    if not isinstance(api_kind, str) or api_kind not in KIND_OF:
        check.add(loc + ("type",), "question type must be predicate, choice or score",
                  "invalid_value")
        return None
    before = len(check.problems)
    for extra in sorted(set(q) - QUESTION_KEYS[api_kind]):
        check.add(loc + (extra,), f"Unknown parameter: '{extra}'.", "unknown_parameter")
    name = q.get("name")
    if name is not None and not isinstance(name, str):  # null: unnamed, as when left out
        check.add(loc + ("name",), "name must be a string", "invalid_type")
    if "instructions" not in q:
        check.add(loc + ("instructions",), "Missing required parameter: 'instructions'.",
                  "missing")
    instructions = _content(q.get("instructions"), loc + ("instructions",), check,
                            {"input_text", "input_image", "input_json"}, images) \
        if "instructions" in q else None
    if api_kind == "predicate":
        values, options = (True, False), [Option("true", None), Option("false", None)]
    elif api_kind == "choice":
        values, options = _choices(q.get("choices"), loc + ("choices",), check, max_choices)
    else:
        values, options = _levels(q.get("levels"), loc + ("levels",), check)
    if len(check.problems) > before:
        return None
    return name, values, Question(KIND_OF[api_kind], instructions, tuple(options))


def _entries(raw, loc, check: Checker, low: int, high: int, what: str) -> list:
    if not isinstance(raw, list):
        check.add(loc, f"{what} must be an array", "invalid_type" if raw is not None else "missing")
        return []
    if not low <= len(raw) <= high:
        check.add(loc, f"{what} must contain between {low} and {high} items.", "array_length")
        return []
    good = True
    for j, entry in enumerate(raw):
        if not isinstance(entry, dict):
            check.add(loc + (j,), f"each of {what} must be an object", "invalid_type")
            good = False
    return raw if good else []


def _choices(raw, loc, check: Checker, max_choices: int):
    values, options, seen = [], [], set()
    for j, entry in enumerate(_entries(raw, loc, check, MIN_CHOICES, max_choices, "choices")):
        value, description = entry.get("value"), entry.get("description")
        for extra in sorted(set(entry) - {"value", "description"}):
            check.add(loc + (j, extra), f"Unknown parameter: '{extra}'.", "unknown_parameter")
        if not isinstance(value, (str, bool)):
            check.add(loc + (j, "value"), "a choice value must be a string or a boolean",
                      "invalid_type")
            continue
        typed = (type(value), value)  # "true" and true are different choices
        if typed in seen:
            check.add(loc + (j, "value"), f"duplicate choice value {value!r}", "duplicate_value")
        seen.add(typed)
        if description is not None and not isinstance(description, str):
            check.add(loc + (j, "description"), "description must be a string", "invalid_type")
        key = value if isinstance(value, str) else ("true" if value else "false")
        values.append(value)
        options.append(Option(key, description))
    return tuple(values), options


def _levels(raw, loc, check: Checker):
    labels, options = [], []
    for j, entry in enumerate(_entries(raw, loc, check, MIN_LEVELS, MAX_LEVELS, "levels")):
        label, description = entry.get("label"), entry.get("description")
        for extra in sorted(set(entry) - {"label", "description"}):
            check.add(loc + (j, extra), f"Unknown parameter: '{extra}'.", "unknown_parameter")
        if not isinstance(label, str):
            check.add(loc + (j, "label"), "a level needs label as a string", "invalid_type")
            continue
        if description is not None and not isinstance(description, str):
            check.add(loc + (j, "description"), "description must be a string", "invalid_type")
        labels.append(label)
        options.append(Option(str(j), label if description is None else f"{label}: {description}"))
    return tuple(labels), options


# -- response ----------------------------------------------------------------------------
def render(outcome: Outcome, decision: Decision, meta: Meta) -> dict:
    """Answers in question order, `name` on every one; choice values keep their JSON type."""
    answers = []
    for q, name, values, a in zip(decision.questions, meta.names, meta.values, outcome.answers):
        if q.kind == NOUL:
            answers.append({"type": "predicate", "name": name, "probability": a.score})
        elif q.kind == CHOICE:
            answers.append({"type": "choice", "name": name, "choice": values[a.best],
                            "confidence": a.confidence,
                            "probabilities": [{"value": v, "probability": p}
                                              for v, p in zip(values, a.probabilities)]})
        else:
            answers.append({"type": "score", "name": name, "score": a.score,
                            "confidence": a.confidence,
                            "probabilities": [{"value": j, "label": label, "probability": p}
                                              for j, (label, p) in
                                              enumerate(zip(values, a.probabilities))]})
    tokens = outcome.num_input_tokens
    usage = {"input_tokens": tokens,
             "input_tokens_details": {"cached_tokens": outcome.num_cached_tokens,
                                      "cache_write_tokens": 0},
             "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": tokens}
    if outcome.images:  # input_tokens include the image tokens
        usage["images"] = outcome.images
    doc = {"model": decision.model, "answers": answers, "usage": usage,
           "x_attention_mode": outcome.attention_mode}
    effort = effort_used(outcome, lambda i: {"question": i, "name": meta.names[i]})
    if effort:
        doc["x_effort_used"] = effort
    return doc


def param(loc: tuple) -> str | None:
    """("questions", 0, "choices", 2) -> "questions[0].choices[2]"; the state is `input`."""
    if not loc:
        return None
    out = "input" if loc[0] == "state" else str(loc[0])
    for part in loc[1:]:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def render_error(err: OnepassError) -> tuple[int, dict]:
    """OpenAI's envelope. Validation is 400 naming the first field; a missing or wrong key 401."""
    status, kind, code, where = err.status, err.error_type, err.code, None
    message = err.message
    if isinstance(err, InvalidRequest):
        status, kind, where = 400, "invalid_request_error", param(err.problems[0].loc)
        message = "; ".join(f"{param(p.loc) or 'body'}: {p.msg}" for p in err.problems)
    elif isinstance(err, (AuthMissing, AuthInvalid)):
        status, code = 401, "invalid_api_key"
    elif isinstance(err, ModelNotFound):
        kind, where = "invalid_request_error", "model"
    return status, {"error": {"message": message, "type": kind, "param": where, "code": code}}
