"""What a question kind is: the one place that knows a kind's labels, prompt lines, the calls
its answer needs, how they make its answer, its limits, warm-up and renderings on both APIs.

Owns: the Kind base class (every hook a kind must or may provide), the plan a kind makes for
one question (Plan: its label reads and its constrained generation), the size limits both APIs
share, and the helpers several kinds share (option listings, the criteria and entries checks).
Never: imports another kind, or the steps that call it (fit, layout, readout, generate, the
adapters):
they ask the registry (kinds/__init__.py) for a kind by name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..decision import Answer, Option, Question

MIN_LEVELS, MAX_LEVELS = 2, 10  # a score's levels, on both APIs
MIN_OPTIONS, MAX_OPTIONS = 2, 255  # a choice's options (the contract's cap; labels may lower it)


class Listing(NamedTuple):
    """One way a read writes a question's options: its prompt lines (the question, the options
    with their labels, the reply line) and, per label read, its (label, token id) pair, the
    option it names and the listing order it sits in (several listings may share a read)."""
    lines: list
    pairs: tuple = ()
    option_of_label: tuple = ()
    order_of_label: tuple = ()


@dataclass(frozen=True)
class Generation:
    """A short generation a kind answers from: the question its prompt is laid out for (its
    kind's listings give the lines), vLLM's structured_outputs, the token cap."""
    question: Question
    structured: dict | None
    max_tokens: int


@dataclass(frozen=True)
class Plan:
    """The engine calls one question needs. reads[0] is read where the question stands among
    the request's reads; the rest (parts, such as a box's edges) after every question's first."""
    reads: tuple = ()  # Question per label read
    generation: Generation | None = None


@dataclass(frozen=True)
class Limit:
    """A kind's per-request cap and, when this server cannot answer it, why (a 422 at the
    question)."""
    most: int | None = None  # questions of the kind in one request (None: only max_questions)
    refusal: str | None = None


@dataclass(frozen=True)
class Job:
    """What a kind's plan and combine may look at: the request's images, the profile and
    settings, the verified labels."""
    images: tuple
    profile: object
    settings: object
    labels: object


class Kind:
    """One question kind. Subclasses set the names and override the hooks that differ."""
    name: str  # the internal name (Question.kind)
    systemone: str  # its `type` on /v1/systemone
    decisions: str | None  # its `type` on /v1/decisions (None: that API has no such type)
    reads: bool = True  # answered by label reads (the shared layout, readout, temperature and
    # warm-up); False for a kind with its own path (box: a generation)
    systemone_keys: frozenset = frozenset({"type", "instructions", "criteria"})
    label_key: str | None = None  # the profile's label list for it (serve_config.json)
    labels_needed: str = ""  # how many labels the profile must list, as messages say it
    all_labels_single: bool = True  # every label one distinct token (else the single ones kept)
    min_labels: int = 2  # the profile must list at least this many
    prior: bool = False  # calibration.label_prior may hold a fitted position prior for it
    rereads: bool = True  # an uncertain answer is read a second time (calibration.reread_below)
    decisions_keys: frozenset = frozenset({"type", "name", "instructions"})
    warmup_short: tuple = ()  # (question id, System One question) in the mixed warm-up body
    warmup_decisions: dict | None = None  # its /v1/decisions warm-up question
    thinks: str | None = "unsure"  # with reasoning: "unsure" thinks in mode on, and in auto
    # when its first read is unsure; "on" only in mode on; None never
    settings: dict = {}  # its own server settings, in config.SETTINGS' form (name: row)

    # -- the decision path ---------------------------------------------------------------
    def plan(self, q: Question, job: Job) -> Plan:
        """The calls question q needs: by default one label read of itself."""
        return Plan(reads=(q,))

    def combine(self, q: Question, answers: list, generated, job: Job) -> Answer:
        """q's answer from its reads' answers (in plan order) and its generation (a
        decision.Generated, or None). By default its one read's."""
        return answers[0]

    def limit(self, settings, facts) -> Limit:
        """Its per-request cap and refusal on this server (settings and engine facts)."""
        return Limit()

    def labels_ok(self, labels) -> bool:
        """The profile lists enough labels for this kind."""
        raise NotImplementedError

    def warmup_body(self, state: str, image_url: str = "") -> dict:
        """A System One body (state and questions) asking this kind alone, run before ready
        wherever the kind is served; `image_url`: a small picture (a data URL) for a kind that
        needs one."""
        raise NotImplementedError

    def listings(self, q: Question, labels, opts) -> list[Listing]:
        """A Listing per read of the question."""
        raise NotImplementedError

    def parallel_lines(self, q: Question, opts) -> int:
        """How many lines before the reply line are read as a set (layout option_sets): none
        by default."""
        return 0

    def calibrate(self, probs: list[float], calibration) -> list[float]:
        """The kind's own step after the shared readout (none by default)."""
        return probs

    def answer(self, probs: list[float], question) -> Answer:
        """The answer from the calibrated probabilities of `question`'s options (in its order)."""
        raise NotImplementedError

    # -- /v1/systemone -------------------------------------------------------------------
    def systemone_options(self, criteria, loc, check, max_options: int,
                          instructions=None) -> list[Option]:
        """The options from a System One question's `criteria`, every problem into `check`."""
        raise NotImplementedError

    def systemone_extras(self, q: dict, loc, check, kwargs) -> dict:
        """Question fields beyond instructions and options, from the question as sent and the
        request's `kwargs` (none by default)."""
        return {}

    def check_images(self, count: int, loc, check) -> None:
        """What the kind needs of the request's images (`count` of them), into `check`."""

    def systemone_legend(self, raw: dict):
        """What the answer echoes of the question as sent (None: nothing)."""
        return None

    def systemone_answer(self, q: Question, a: Answer, legend) -> dict:
        raise NotImplementedError

    # -- /v1/decisions -------------------------------------------------------------------
    def decisions_options(self, raw: dict, loc, check, max_choices: int):
        """(typed values kept for the answer, options)."""
        raise NotImplementedError

    def decisions_answer(self, name, values, a: Answer) -> dict:
        raise NotImplementedError


def generation_refusal(kind: str, structured: str) -> str | None:
    """Why a kind answered by a constrained generation is refused: vLLM's structured outputs
    failed the start-up check (`structured` says how; "" when they passed: None)."""
    if structured:
        return (f"{kind} questions need vLLM's structured outputs (a generation constrained "
                f"by a grammar), and this server's vLLM failed that check at start-up: "
                f"{structured}; questions of other types are answered")
    return None


def best(probs) -> int:
    return max(range(len(probs)), key=probs.__getitem__)


def listed_lines(q: Question, lists, heading: str, what: str, text_of) -> list[str]:
    """The question, then each listing of the options (its own labels, its own order)."""
    lines = [f"Question: {q.instructions}"] if q.instructions is not None else []
    for j, (pairs, order) in enumerate(lists):
        lines.append(heading if j == 0 else "The same options again, in another order:")
        for (label, _), o in zip(pairs, order):
            lines.append(f"{label}. {text_of(q.options[o])}")
    lines.append(f"Reply with {what} only.")
    return lines


def is_criteria(criteria, kind, loc, check, what: str) -> bool:
    """Required System One criteria of the right JSON type; otherwise one problem, and False."""
    if isinstance(criteria, kind):
        return True
    if criteria is None:
        check.add(loc, "Field required", "missing")
    else:
        check.add(loc, what, "dict_type" if kind is dict else "list_type")
    return False


def entries(raw, loc, check, low: int, high: int, what: str) -> list:
    """A /v1/decisions array of low..high objects (choices, levels); [] with a problem else."""
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


def unknown_fields(entry: dict, allowed: set, loc, check) -> None:
    for extra in sorted(set(entry) - allowed):
        check.add(loc + (extra,), f"Unknown parameter: '{extra}'.", "unknown_parameter")


def described(entry: dict, loc, check) -> None:
    """A /v1/decisions entry's optional description must be a string."""
    description = entry.get("description")
    if description is not None and not isinstance(description, str):
        check.add(loc + ("description",), "description must be a string", "invalid_type")
