"""What a question kind is: the one place that knows a kind's labels, prompt lines, the calls
its answer needs, how they make its answer, its limits, settings and profile checks; what it
gives each API lives in its adapters (adapters.py: `kind.systemone`, `kind.decisions`).

Owns: the Kind base class (every hook of the decision path a kind must or may provide), the
plan a kind makes for one question (Plan: its label reads and its constrained generation), what
its plan and combine may look at (Job), its start-up probe of vLLM's structured outputs (Probe),
the size limits both APIs share, and the helpers several kinds share (option listings, best).
Never: imports another kind, or the steps that call it (fit, layout, readout, generate, the
API adapters in api/): they ask the registry (kinds/__init__.py) for a kind by name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Protocol

from ..decision_model import Answer, Question
from .adapters import Decisions, SystemOne

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


# What a kind's plan and combine may read, stated here as shapes (kinds/ imports nothing above
# it): the real classes are images.formats.Image, profile.Profile, config.Settings and
# prompt.layout.LabelSet (tests/unit/kinds/test_base.py holds them to these shapes).
class Picture(Protocol):
    """A request's image, checked and not decoded."""
    width: int
    height: int


class Profile(Protocol):
    """The model's serving profile (serve_config.json)."""
    model_name: str
    labels: dict  # kind -> its label candidates
    calibration: Any  # profile.Calibration: temperatures, fits (number_confidence, ...)
    vision: Any  # profile.Vision (its `box` settings among them), or None: text only


class Settings(Protocol):
    """The shim's settings: the shared ones and each kind's own (Kind.settings)."""
    model: Profile

    def __getattr__(self, name: str) -> Any: ...


class Labels(Protocol):
    """The labels start-up proved single tokens: `labels.<kind>` is ((label, token id), ...)."""
    def __getattr__(self, kind: str) -> tuple: ...


@dataclass(frozen=True)
class Job:
    """What a kind's plan and combine may look at: the request's images, the profile and
    settings, the verified labels."""
    images: tuple[Picture, ...]
    profile: Profile
    settings: Settings
    labels: Labels


@dataclass(frozen=True)
class Probe:
    """A kind's start-up check that vLLM constrains a generation (text only, so it proves the
    engine): the prompt, the structured_outputs sent, the token cap, whether a text obeys the
    constraint, and how messages name it."""
    prompt: str
    structured: dict
    max_tokens: int
    obeys: Callable[[str], bool]
    named: str  # "the box schema"


class Kind:
    """One question kind. Subclasses set the name and the adapters, and override the hooks
    that differ."""
    name: str  # the internal name (Question.kind)
    systemone: SystemOne  # its /v1/systemone adapter (its `type`, fields, answer, schemas)
    decisions: Decisions | None = None  # its /v1/decisions adapter (None: no such type there)
    reads: bool = True  # answered by label reads (the shared layout, readout, temperature and
    # warm-up); False for a kind with its own path (box: a generation)
    label_key: str | None = None  # the profile's label list for it (serve_config.json)
    labels_needed: str = ""  # how many labels the profile must list, as messages say it
    all_labels_single: bool = True  # every label one distinct token (else the single ones kept)
    min_labels: int = 2  # the profile must list at least this many
    prior: bool = False  # calibration.label_prior may hold a fitted position prior for it
    rereads: bool = True  # an uncertain answer is read a second time (calibration.reread_below)
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

    # -- start-up --------------------------------------------------------------------------
    def check_profile(self, profile) -> None:
        """The kind's own settings in a profile (a ValueError says what is wrong); none by
        default."""

    def probe(self, settings) -> Probe | None:
        """The structured-outputs check a kind answered by a constrained generation offers
        (the registry's first is run at start-up); None by default."""
        return None


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


def logistic(z: float) -> float:
    """1 / (1 + e^-z), written so that neither sign of z overflows."""
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def listed_lines(q: Question, lists, heading: str, what: str, text_of) -> list[str]:
    """The question, then each listing of the options (its own labels, its own order)."""
    lines = [f"Question: {q.instructions}"] if q.instructions is not None else []
    for j, (pairs, order) in enumerate(lists):
        lines.append(heading if j == 0 else "The same options again, in another order:")
        for (label, _), o in zip(pairs, order):
            lines.append(f"{label}. {text_of(q.options[o])}")
    lines.append(f"Reply with {what} only.")
    return lines
