"""The /v1/systemone adapter: TypeSafe's request shape in, the internal Decision out, and back.

Owns: every System One field name, validation of a System One body (422 problems with
"body"-rooted locations), rendering answers and errors in the contract's shape.
Never: lays out prompts, calibrates or calls vLLM.
In: a parsed JSON value. Out: a Request (its meta: Meta) and response dicts.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import kinds
from ..decision_model import Outcome, Question
from ..errors import InvalidRequest, OnepassError, Problem
from ..images.inputs import Collector, check_expansion, replace_placeholders
from .effort import extensions
from . import Limits, Request
from .checks import WIDE, Checker, request

QUESTION_TEXTS = ("instructions", "criteria")  # where images and placeholders may stand


@dataclass(frozen=True)
class Meta:
    """What the response needs beyond the Decision: question ids, and what each kind echoes of
    its question as sent (a score's levels, unchanged, in its legend)."""
    ids: tuple
    legends: tuple  # per question: its kind's systemone.legend of it (None: nothing to echo)


def parse(body, files: dict | None, limits: Limits) -> Request:
    """Check a /v1/systemone body (its multipart `files` too) into a Request. Images: the
    `images` list, then data URLs and image parts in the state, then data URLs in the
    questions' texts, then the assets, whose placeholders are replaced in the state and in the
    questions."""
    check = Checker()
    if not isinstance(body, dict):
        raise InvalidRequest([Problem((), "the body must be a JSON object", "model_attributes_type")])
    for key in ("model", "state", "questions"):
        if key not in body:
            check.add((key,), "Field required", "missing")
    model = body.get("model")
    if "model" in body and not isinstance(model, str):
        check.add(("model",), "model must be a string", "string_type")
    state = body.get("state")
    if "state" in body and not isinstance(state, (str, dict, list)):
        check.add(("state",), "state must be text, an object or an array", "string_type")
    collector = Collector(check, limits.max_images, limits.model)
    if "images" in body:
        collector.listed(body["images"])
    state = collector.in_state(state)
    # Data URLs in question texts (strings only, never a part), then asset placeholders; the
    # legends still echo the criteria as sent.
    raw = _question_texts(body.get("questions"), lambda v, loc: collector.in_state(
        v, ("questions", *loc), parts=False))
    labels = collector.assets(body.get("assets"), files or {})
    if labels:
        check_expansion(labels, state, raw)
        raw = _question_texts(raw, lambda v, _: replace_placeholders(v, labels))
    ids, questions = (_questions(raw, check, limits, body.get("kwargs"))
                      if "questions" in body else ([], []))
    for qid, q in zip(ids, questions):  # what a kind needs of the request's images
        kinds.get(q.kind).systemone.check_images(len(collector.sources),
                                                 ("questions", qid, q.kind), check)
    meta = Meta(tuple(ids), tuple(kinds.get(q.kind).systemone.legend(body["questions"][qid])
                                  for qid, q in zip(ids, questions)))
    return request(check, {k: body[k] for k in WIDE if k in body}, model=model,
                   state=replace_placeholders(state, labels), questions=questions,
                   images=collector.sources, meta=meta)


def _question_texts(raw, fn):
    """The questions with fn(value, (qid, key)) applied to each instructions and criteria."""
    if not isinstance(raw, dict):
        return raw
    return {qid: {k: fn(v, (qid, k)) if k in QUESTION_TEXTS else v for k, v in q.items()}
            if isinstance(q, dict) else q for qid, q in raw.items()}


def _questions(raw, check, limits: Limits, kwargs):
    if not isinstance(raw, dict):
        check.add(("questions",), "questions must be an object of id -> question", "dict_type")
        return [], []
    if not raw:
        check.add(("questions",), "questions needs at least one entry", "too_short")
    elif len(raw) > limits.max_questions:
        check.add(("questions",), f"this server accepts at most {limits.max_questions} questions per "
                  f"request, got {len(raw)}", "too_long")
        return [], []
    for kind, limit in limits.kinds.items():  # a kind's own cap (each may cost a generation)
        count = sum(isinstance(q, dict) and q.get("type") == kind for q in raw.values())
        if limit.most is not None and count > limit.most and limit.refusal is None:
            check.add(("questions",), f"this server accepts at most {limit.most} {kind} "
                      f"questions per request, got {count}", "too_long")
            return [], []
    ids, questions = [], []
    for qid, q in raw.items():
        loc = ("questions", qid)
        if qid == "":
            check.add(loc, "question ids must be non-empty", "string_too_short")
        question = _question(q, loc, check, limits, kwargs)
        if question is not None:
            ids.append(qid)
            questions.append(question)
    return ids, questions


def _question(q, loc, check, limits: Limits, kwargs):
    if not isinstance(q, dict):
        check.add(loc, "a question must be an object", "dict_type")
        return None
    kind, unit = q.get("type"), kinds.named(q.get("type"), "systemone")
    limit = unit and limits.kinds.get(unit.name)
    refusal = limit and limit.refusal
    if unit is None or refusal:
        msg = ("Field required" if "type" not in q else
               f"unknown question type {kind!r}; expected one of "
               f"{', '.join(kinds.by_api('systemone'))}" if unit is None else refusal)
        check.add(loc + ("type",), msg, "missing" if "type" not in q else "union_tag_invalid")
        return None
    loc = loc + (kind,)
    api = unit.systemone
    for extra in sorted(set(q) - api.keys):
        check.add(loc + (extra,), f"unknown field {extra!r} in a {kind} question", "extra_forbidden")
    before = check.found
    instructions = check.text(q.get("instructions"), loc + ("instructions",))
    options = api.options(q.get("criteria"), loc + ("criteria",), check,
                          limits.max_options, instructions)
    params = api.params(q, loc, check, kwargs)
    if check.found > before:
        return None
    return Question(kind=unit.name, instructions=instructions, options=tuple(options),
                    params=params)


def render(outcome: Outcome, decision, meta: Meta) -> dict:
    """Answers keyed by question id, each in its kind's shape."""
    answers = {qid: kinds.get(q.kind).systemone.answer(q, a, legend) for qid, q, a, legend
               in zip(meta.ids, decision.questions, outcome.answers, meta.legends)}
    usage = {"input_tokens": outcome.num_input_tokens, "output_tokens": outcome.output_tokens}
    spent = outcome.effort.reasoning
    if spent is not None and spent.mode != "off":
        usage["reasoning_tokens"] = outcome.reasoning_tokens  # of output_tokens, the thoughts
    if outcome.images:  # input_tokens include the image tokens
        usage["images"] = outcome.images
    doc = {"model": decision.model, "answers": answers, "usage": usage,
           "x_attention_mode": outcome.attention_mode}
    key = lambda i: {"question": meta.ids[i]}  # noqa: E731
    doc.update(extensions(outcome.effort, len(outcome.answers), key))  # the contract's x_ prefix
    return doc


def render_error(err: OnepassError) -> tuple[int, dict]:
    """The contract's shapes: 422 `detail[]` for validation, `detail{error_type,message}` else."""
    if isinstance(err, InvalidRequest):
        return err.status, {"detail": [{"loc": ["body", *p.loc], "msg": p.msg, "type": p.type}
                                       for p in err.problems]}
    return err.status, {"detail": {"error_type": err.error_type, "message": err.message}}
