"""The /v1/decisions adapter: OpenAI's Decisions request shape in, the internal Decision out, and
back (section 4 of the wire contract; openai 3.51).

Owns: every Decisions field name (`input` through openai_input.py); predicate/choice/score into
Questions, each kind's own fields through its unit in kinds/ (typed choice values kept aside so
that `true` and `"true"` come back as sent); answers as a list in question order; errors in OpenAI's
envelope, validation as 400 with `param` naming the field (`questions[0].choices`).
Never: lays out prompts, calibrates or calls vLLM (the same stages as /v1/systemone do).
In: a parsed JSON value. Out: a Request (its meta: Meta) and response dicts.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import kinds
from ..decision_model import Outcome, Question
from ..errors import (AuthInvalid, AuthMissing, InvalidRequest, ModelNotFound, OnepassError,
                      Problem, UnsupportedMediaType)
from ..images.inputs import Collector
from .effort import extensions
from . import Limits, Request
from .checks import WIDE, Checker, request
from .openai_input import QUESTION_PARTS, content_text, state as input_state


@dataclass(frozen=True)
class Meta:
    """What the response needs beyond the Decision: names and the typed choice values."""
    names: tuple  # per question: its name, or None
    values: tuple  # per question: choice values as sent (str or bool); level labels for scores


def parse(body, files: dict | None, limits: Limits) -> Request:
    """Check a /v1/decisions body into a Request. Each input_image part becomes `[image N]`
    where it stands, numbered in reading order."""
    check = Checker()
    if files:
        raise UnsupportedMediaType("/v1/decisions takes application/json; images go in "
                                   "input_image parts")
    if not isinstance(body, dict):
        raise InvalidRequest([Problem((), "the body must be a JSON object", "invalid_type")])
    for key in ("model", "input", "questions"):
        if key not in body:
            check.add((key,), f"Missing required parameter: '{key}'.", "missing")
    _no_stream(body.get("stream"), check)
    model = body.get("model")
    if "model" in body and not isinstance(model, str):
        check.add(("model",), "model must be a string", "invalid_type")
    images = Collector(check, limits.max_images, limits.model)
    state = input_state(body.get("input"), check, images) if "input" in body else None
    names, values, questions = [], [], []
    raw = body.get("questions")
    if "questions" in body and not isinstance(raw, list):
        check.add(("questions",), "questions must be an array", "invalid_type")
    elif isinstance(raw, list) and not 1 <= len(raw) <= limits.max_questions:
        check.add(("questions",), f"questions must contain between 1 and "
                  f"{limits.max_questions} items, got {len(raw)}", "array_length")
    elif isinstance(raw, list):
        for i, q in enumerate(raw):
            parsed = _question(q, ("questions", i), check, limits.max_options, images)
            if parsed:
                name, typed, question = parsed
                names.append(name)
                values.append(typed)
                questions.append(question)
    return request(check, {k: body[k] for k in WIDE if k in body}, model=model, state=state,
                   questions=questions, images=images.sources,
                   meta=Meta(tuple(names), tuple(values)))


def _no_stream(stream, check: Checker) -> None:
    """Every answer is one JSON document: a client asking for events is told so, rather than
    handed a document where it waits for `data:` lines."""
    if stream is True:
        check.add(("stream",), "streaming is not supported: this server answers each request "
                  "with one JSON document; leave stream out or send false", "unsupported_value")
    elif stream is not None and stream is not False:
        check.add(("stream",), "stream must be a boolean", "invalid_type")


def _question(q, loc, check: Checker, max_choices: int, images: Collector):
    """(name, typed values, Question) or None, with every problem recorded."""
    if not isinstance(q, dict):
        check.add(loc, "a question must be an object", "invalid_type")
        return None
    unit = kinds.named(q.get("type"), "decisions")
    elsewhere = kinds.named(q.get("type"), "systemone")
    if unit is None and elsewhere is not None:  # a System One type OpenAI's API does not have
        check.add(loc + ("type",), f"{q['type']} questions exist only on /v1/systemone; "
                  "/v1/decisions question type must be "
                  f"{kinds.spoken(kinds.by_api('decisions'), 'or')}", "invalid_value")
        return None
    if unit is None:
        check.add(loc + ("type",), "question type must be "
                  f"{kinds.spoken(kinds.by_api('decisions'), 'or')}", "invalid_value")
        return None
    before, api = check.found, unit.decisions
    for extra in sorted(set(q) - api.keys):
        check.add(loc + (extra,), f"Unknown parameter: '{extra}'.", "unknown_parameter")
    name = q.get("name")
    if name is not None and not isinstance(name, str):  # null: unnamed, as when left out
        check.add(loc + ("name",), "name must be a string", "invalid_type")
    if "instructions" not in q:
        check.add(loc + ("instructions",), "Missing required parameter: 'instructions'.",
                  "missing")
    instructions = content_text(q.get("instructions"), loc + ("instructions",), check,
                                QUESTION_PARTS, images) if "instructions" in q else None
    values, options = api.options(q, loc, check, max_choices)
    if check.found > before:
        return None
    return name, values, Question(unit.name, instructions, tuple(options))


# -- response ----------------------------------------------------------------------------
def render(outcome: Outcome, decision, meta: Meta) -> dict:
    """Answers in question order, `name` on every one, each in its kind's shape; choice values
    keep their JSON type."""
    answers = [kinds.get(q.kind).decisions.answer(name, values, a) for q, name, values, a
               in zip(decision.questions, meta.names, meta.values, outcome.answers)]
    tokens = outcome.num_input_tokens
    usage = {"input_tokens": tokens,
             "input_tokens_details": {"cached_tokens": outcome.num_cached_tokens,
                                      "cache_write_tokens": 0},
             "output_tokens": outcome.output_tokens,
             "output_tokens_details": {"reasoning_tokens": outcome.reasoning_tokens},
             "total_tokens": tokens + outcome.output_tokens}
    if outcome.images:  # input_tokens include the image tokens
        usage["images"] = outcome.images
    doc = {"model": decision.model, "answers": answers, "usage": usage,
           "x_attention_mode": outcome.attention_mode}
    key = lambda i: {"question": i, "name": meta.names[i]}  # noqa: E731
    doc.update(extensions(outcome.effort, len(outcome.answers), key))  # the contract's x_ prefix
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
