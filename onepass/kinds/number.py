"""The number kind: a number the model writes after the question, with a confidence from its own
token log-probs.

Owns: the number question on /v1/systemone (its adapter: instructions only, no criteria; its
rendering and schemas), its prompt lines, its plan (one generation, constrained by a regular
expression for a plain decimal; no read), its limits and settings, its calibration setting
(number_confidence), its structured-outputs probe, reading the generated text into a value, its
confidence, its answer (its payload: Written).
Never: calls vLLM (backend/decoding.py does) or decides when a question thinks first.
/v1/decisions has no numeric question (the OpenAI Decisions contract lists predicate, choice
and score): the kind has no Decisions adapter, and that API says so (400).
"""
from __future__ import annotations

import math
import re
from typing import NamedTuple

from ..decision_model import Answer, Question
from . import registry
from .adapters import SystemOne
from .base import (YES_NO, Generation, Kind, Limit, Listing, Plan, Probe, Tuning, finite,
                   generation_refusal, logistic)
from .schema_parts import PROBABILITY, TEXT, const, obj

# A plain decimal: an optional minus, an integer of at most 12 digits without leading zeros, an
# optional fraction of at most 6. Every prefix the grammar lets the model stop at is a whole
# number, and the bound makes it stop: unbounded, a model can write "12.5000000000000" until
# the token cap cuts it. At most 20 characters, so 24 tokens always finish.
PATTERN = r"-?(0|[1-9][0-9]{0,11})(\.[0-9]{1,6})?"
WHOLE = re.compile(PATTERN)
MAX_DIGITS = 40  # a value read from more digits is not a float worth reporting
PROBE_PROMPT = "How many items are in the order? Answer with a number.\n"
NAME = "number"


class Written(NamedTuple):
    """A number answer's payload: the value (None: not a number, or cut) and the text written."""
    value: float | None
    text: str


class OnSystemOne(SystemOne):
    type = "number"
    keys = frozenset({"type", "instructions"})

    def options(self, criteria, loc, check, max_options, instructions=None):
        if instructions is None:
            check.add(loc[:-1] + ("instructions",), "a number question needs instructions "
                      "saying what to count or read", "missing")
        return []

    def answer(self, q, a, legend):
        return {"type": self.type, "number": a.payload.value, "text": a.payload.text,
                "confidence": a.confidence}

    def warmup_body(self, state, image_url=""):
        """Its grammar compiled before ready (a thought is a plain generation: nothing to
        compile, not warmed)."""
        yes_no = registry.shaped(YES_NO).systemone.type  # a read beside it
        return {"state": state, "questions": {
            "order": {"type": "number", "instructions": "What is the order number?"},
            "refund": {"type": yes_no, "instructions": "Is a refund asked for?"}}}

    def question_schema(self):
        return obj({"type": const("number"), "instructions": TEXT}, ["type", "instructions"],
                   description="a number read from the state, with the text it was read from "
                               "(a server without the number kind answers 422)")

    def answer_schema(self):
        return obj({"type": const("number"), "number": {"type": ["number", "null"]},
                    "text": {"type": "string"}, "confidence": PROBABILITY},
                   ["type", "number", "text", "confidence"], extra="x_")


def _fit_ok(fit) -> bool:
    return fit is None or (isinstance(fit, dict) and set(fit) == {"a", "b"}
                           and all(finite(v) and abs(v) <= 1e3 for v in fit.values()))


class NumberKind(Kind):
    name, systemone = NAME, OnSystemOne()
    reads, rereads = False, False  # a generation, not label reads; never read again
    thinks = "on"  # with reasoning on, it writes its thought first and its number after it
    settings = {
        "max_number_questions": (int, 8, "ONEPASS_MAX_NUMBER_QUESTIONS",
                                 "number questions in one request (each costs a generation; "
                                 "more: 422)"),
        "number_max_tokens": (int, 24, "ONEPASS_NUMBER_MAX_TOKENS",
                              "generation tokens per number answer (a number cut by it is null)"),
    }
    calibration = {"number_confidence": Tuning(None, _fit_ok, "number_confidence needs numbers "
                                               "a and b within ±1000, or null")}
    # {a, b}: confidence = sigmoid(a * mean log-prob + b) of its tokens; None: exp(mean), unfitted

    def plan(self, q, job):
        return Plan(generation=Generation(q, constraint(), job.settings.number_max_tokens))

    def combine(self, q, answers, generated, job):
        return answer(generated.text, generated.tokens, generated.cut,
                      job.profile.calibration.number_confidence)

    def limit(self, settings, facts):
        return Limit(settings.max_number_questions,
                     generation_refusal(self.name, facts.structured))

    def limits_text(self, settings):
        return f"{settings.max_number_questions} number questions"

    def listings(self, q: Question, labels, opts):
        """The generation's prompt: the question and the reply line, no labels."""
        lines = [f"Question: {q.instructions}",
                 "Reply with the number only, as plain decimal digits."]
        return [Listing(lines)]

    def probe(self, settings):
        """A text generation under its regular expression: a plain decimal, nothing else."""
        return Probe(PROBE_PROMPT, constraint(), settings.number_max_tokens,
                     lambda text: value(text) is not None and text == text.strip(),
                     "the number pattern")


def constraint() -> dict:
    """vLLM's structured_outputs for a number: the regular expression, nothing else."""
    return {"regex": PATTERN}


def value(text: str) -> float | None:
    """The number the text is, or None when it is not exactly one plain decimal (a cut
    generation may still be one: the caller decides what a cut means)."""
    text = text.strip()
    if not WHOLE.fullmatch(text) or len(text) > MAX_DIGITS:
        return None
    number = float(text)
    return number if math.isfinite(number) else None


def answer_tokens(text: str, tokens) -> list:
    """The (token, log-prob) pairs that wrote `text`: the stop token after it is not part of
    the answer."""
    out, written = [], 0
    for token, lp in tokens:
        if written >= len(text):
            break
        out.append((token, lp))
        written += len(token)
    return out


def confidence(tokens, fit: dict | None) -> float:
    """exp(mean log-prob of the generated answer tokens); with a profile fit {a, b}, the
    logistic map of that mean instead. 0 when nothing was generated."""
    if not tokens:
        return 0.0
    mean = math.fsum(lp for _, lp in tokens) / len(tokens)
    if fit is None:
        return math.exp(mean)
    z = fit["a"] * mean + fit["b"]
    return logistic(z)


def answer(text: str, tokens, cut: bool, fit: dict | None) -> Answer:
    """The number answer: the parsed value (None when cut by the token cap or not a number),
    the text as written, the confidence of its tokens."""
    number = None if cut else value(text)
    conf = confidence(answer_tokens(text, tokens), fit) if number is not None else 0.0
    return Answer(NAME, (), conf, 0, Written(number, text))


KIND = NumberKind()
