"""The /v1/systemone adapter: TypeSafe's request shape in, the internal Decision out, and back.

Owns: every System One field name, validation of a System One body (422 problems with
"body"-rooted locations), rendering answers and errors in the contract's shape.
Never: lays out prompts, calibrates or calls vLLM.
In: a parsed JSON value. Out: (Decision, Meta) and response dicts.
"""
from __future__ import annotations

from dataclasses import dataclass

from .checks import Checker, finish
from .decision import CHOICE, KINDS, NOUL, SCORE, Decision, Option, Outcome, Question
from .errors import InvalidRequest, OnepassError, Problem
from .image_inputs import Collector, replace_placeholders
from .readout import effort_used

QUESTION_KEYS = {"type", "instructions", "criteria"}
QUESTION_TEXTS = ("instructions", "criteria")  # where images and placeholders may stand
MIN_LEVELS, MAX_LEVELS = 2, 10
MAX_CHOICE_OPTIONS = 255  # the contract's official cap; the label set may lower it


@dataclass(frozen=True)
class Meta:
    """What the response needs beyond the Decision: question ids, and each score's levels as sent
    (echoed unchanged in its legend)."""
    ids: tuple
    legends: tuple  # per question: the score's criteria list, or None


def parse(body, *, max_choice_options: int, max_questions: int, resolve_model, resolve_mode,
          resolve_options, files=None, image_policy=None):
    """Validate a /v1/systemone body (its multipart `files` too); return the Decision and the
    response metadata. Images: the `images` list, then data URLs and image parts in the state,
    then data URLs in the questions' texts, then the assets, whose placeholders are replaced in
    the state and in the questions."""
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
    collector = Collector(check)
    if "images" in body:
        collector.listed(body["images"])
    state = collector.in_state(state)
    # Data URLs in question texts (strings only, never a part), then asset placeholders; the
    # legends still echo the criteria as sent.
    raw = _question_texts(body.get("questions"), lambda v, loc: collector.in_state(
        v, ("questions", *loc), parts=False))
    labels = collector.assets(body.get("assets"), files or {})
    if labels:
        raw = _question_texts(raw, lambda v, _: replace_placeholders(v, labels))
    ids, questions = _questions(raw, check, max_choice_options, max_questions) \
        if "questions" in body else ([], [])
    return finish(check, body, model=model, state=replace_placeholders(state, labels),
                  questions=questions, resolve_model=resolve_model, resolve_mode=resolve_mode,
                  resolve_options=resolve_options, collector=collector,
                  image_policy=image_policy), \
        Meta(tuple(ids), tuple(body["questions"][qid].get("criteria")
                               if questions[i].kind == SCORE else None for i, qid in enumerate(ids)))


def _question_texts(raw, fn):
    """The questions with fn(value, (qid, key)) applied to each instructions and criteria."""
    if not isinstance(raw, dict):
        return raw
    return {qid: {k: fn(v, (qid, k)) if k in QUESTION_TEXTS else v for k, v in q.items()}
            if isinstance(q, dict) else q for qid, q in raw.items()}


def _questions(raw, check, max_choice_options, max_questions):
    if not isinstance(raw, dict):
        check.add(("questions",), "questions must be an object of id -> question", "dict_type")
        return [], []
    if not raw:
        check.add(("questions",), "questions needs at least one entry", "too_short")
    elif len(raw) > max_questions:
        check.add(("questions",), f"this server accepts at most {max_questions} questions per "
                  f"request, got {len(raw)}", "too_long")
        return [], []
    ids, questions = [], []
    for qid, q in raw.items():
        loc = ("questions", qid)
        if qid == "":
            check.add(loc, "question ids must be non-empty", "string_too_short")
        question = _question(q, loc, check, max_choice_options)
        if question is not None:
            ids.append(qid)
            questions.append(question)
    return ids, questions


def _question(q, loc, check, max_choice_options):
    if not isinstance(q, dict):
        check.add(loc, "a question must be an object", "dict_type")
        return None
    kind = q.get("type")
    if kind not in KINDS:
        msg = ("Field required" if "type" not in q else
               f"unknown question type {kind!r}; expected one of noul, choice, score"
               if kind != "box" else "box questions need a vision-language model profile")
        check.add(loc + ("type",), msg, "missing" if "type" not in q else "union_tag_invalid")
        return None
    loc = loc + (kind,)
    for extra in sorted(set(q) - QUESTION_KEYS):
        check.add(loc + (extra,), f"unknown field {extra!r} in a {kind} question", "extra_forbidden")
    before = len(check.problems)
    instructions = check.text(q.get("instructions"), loc + ("instructions",))
    parse_options = {NOUL: _noul, CHOICE: _choice, SCORE: _score}[kind]
    options = parse_options(q.get("criteria"), loc + ("criteria",), check, max_choice_options)
    if kind == NOUL and instructions is None and all(o.text is None for o in options or ()):
        check.add(loc, "a noul needs instructions or at least one criteria side", "missing")
    if len(check.problems) > before:
        return None
    return Question(kind=kind, instructions=instructions, options=tuple(options))


def _noul(criteria, loc, check, _):
    if criteria is None:
        return [Option("true", None), Option("false", None)]
    if not isinstance(criteria, dict):
        check.add(loc, "noul criteria must be null or an object with \"true\"/\"false\"", "dict_type")
        return []
    for extra in sorted(set(criteria) - {"true", "false"}):
        check.add(loc + (extra,), "noul criteria take only the keys \"true\" and \"false\"",
                  "extra_forbidden")
    return [Option(side, check.text(criteria.get(side), loc + (side,))) for side in ("true", "false")]


def _is_criteria(criteria, kind, loc, check, what: str) -> bool:
    """Required criteria of the right JSON type; otherwise one problem, and False."""
    if isinstance(criteria, kind):
        return True
    if criteria is None:
        check.add(loc, "Field required", "missing")
    else:
        check.add(loc, what, "dict_type" if kind is dict else "list_type")
    return False


def _choice(criteria, loc, check, max_options):
    if not _is_criteria(criteria, dict, loc, check,
                        "choice criteria must be an object of option -> description"):
        return []
    if len(criteria) < 2:
        check.add(loc, f"a choice needs at least two options, got {len(criteria)}", "too_short")
    elif len(criteria) > max_options:
        check.add(loc, f"this server accepts at most {max_options} options per choice, "
                  f"got {len(criteria)}", "too_long")
    return [Option(key, check.text(desc, loc + (key,))) for key, desc in criteria.items()]


def _score(criteria, loc, check, _):
    if not _is_criteria(criteria, list, loc, check,
                        "score criteria must be an ordered array of levels, lowest first"):
        return []
    if not MIN_LEVELS <= len(criteria) <= MAX_LEVELS:
        check.add(loc, f"a score takes 2 to 10 levels, got {len(criteria)}", "too_long"
                  if len(criteria) > MAX_LEVELS else "too_short")
    return [Option(str(i), check.text(level, loc + (i,), nullable=False))
            for i, level in enumerate(criteria)]


def render(outcome: Outcome, decision: Decision, meta: Meta) -> dict:
    """Answers keyed by question id; score legends echo the request's levels unchanged."""
    answers = {}
    for qid, q, a, legend in zip(meta.ids, decision.questions, outcome.answers, meta.legends):
        if q.kind == NOUL:
            answers[qid] = {"type": NOUL, "noul": a.score}
        elif q.kind == CHOICE:
            answers[qid] = {"type": CHOICE, "choice": q.options[a.best].key,
                            "probabilities": {o.key: p for o, p in zip(q.options, a.probabilities)},
                            "confidence": a.confidence}
        else:
            answers[qid] = {"type": SCORE, "score": a.score,
                            "legend": {str(j): lvl for j, lvl in
                                       enumerate(legend)},
                            "probabilities": {str(j): p for j, p in enumerate(a.probabilities)},
                            "confidence": a.confidence}
    usage = {"input_tokens": outcome.num_input_tokens, "output_tokens": 0}
    if outcome.images:  # input_tokens include the image tokens
        usage["images"] = outcome.images
    doc = {"model": decision.model, "answers": answers, "usage": usage,
           "x_attention_mode": outcome.attention_mode}
    effort = effort_used(outcome, lambda i: {"question": meta.ids[i]})
    if effort:  # extensions carry the contract's x_ prefix
        doc["x_effort_used"] = effort
    return doc


def render_error(err: OnepassError) -> tuple[int, dict]:
    """The contract's shapes: 422 `detail[]` for validation, `detail{error_type,message}` else."""
    if isinstance(err, InvalidRequest):
        return err.status, {"detail": [{"loc": ["body", *p.loc], "msg": p.msg, "type": p.type}
                                       for p in err.problems]}
    return err.status, {"detail": {"error_type": err.error_type, "message": err.message}}
