"""What a question kind is, stated as three protocols a Kind implements (each with its defaults):
Reading (how its label reads are laid out and made an answer), Generating (the engine calls its
answer needs and how they combine, the start-up check a constrained generation needs) and
Serving (its API adapters, settings, calibration settings, profile checks, limits and what
/openapi.json says of them). What it gives each API lives in its adapters (adapters.py).

Owns: the protocols and Kind, the records their hooks exchange (Plan, Generation, Limit, Job,
Probe, Listing, OwnLabels, Tuning), the shapes a kind's options may have (YES_NO, NAMED,
LEVELS: what callers outside kinds/ build a question of a kind with, asking the registry by
shape), the size bounds both APIs share and the helpers several kinds share.
Never: imports another kind, or the steps that call it (fit, layout, readout, generate, the
API adapters in api/): they ask the registry (registry.py) for a kind by name or capability.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Protocol

from ..decision_model import Answer, Question
from .adapters import Decisions, SystemOne

MIN_LEVELS, MAX_LEVELS = 2, 10  # ordered levels, on both APIs
MIN_OPTIONS, MAX_OPTIONS = 2, 255  # named options (the contracts' cap; labels may lower it)
# What a kind's options are (Kind.options_are), so a caller can ask for "a yes/no kind":
YES_NO = "yes/no"  # two sides, yes first; its answer's probabilities are [P(yes), P(no)]
NAMED = "named options"  # any number of options, each keyed and listed with a label of its own
LEVELS = "ordered levels"  # levels lowest first, each with its label


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
    """A kind's caps on this server and, when this server cannot answer it, why (a 422 at the
    question)."""
    most: int | None = None  # questions of the kind in one request (None: only max_questions)
    refusal: str | None = None
    options: int | None = None  # options in one question (its labels: one each; None: its own
    # bounds); the APIs hold every question to the least of the kinds' (registry.option_cap)


@dataclass(frozen=True)
class OwnLabels:
    """The labels a kind reads with, listed in the profile as `<kind>_labels`: how many it
    needs, whether each must be a distinct single token (else the single ones are kept, still
    at least `least`), and whether calibration.label_prior may hold a fitted prior over their
    listing positions."""
    least: int
    most: int | None = None  # None: no upper bound
    all_single: bool = True
    prior: bool = False

    def allow(self, labels) -> bool:
        return self.least <= len(labels) and (self.most is None or len(labels) <= self.most)

    @property
    def needed(self) -> str:
        """How many, as messages say it: "2", "10+", "2 to 4"."""
        return (str(self.least) if self.least == self.most else f"{self.least}+"
                if self.most is None else f"{self.least} to {self.most}")


class Tuning(NamedTuple):
    """A calibration setting a kind owns: `calibration.<name>` in the profile and in a request's
    kwargs.calibration. Its default is also its value in a raw read (the try-it page's)."""
    default: Any
    good: Callable[[Any], bool]  # whether a value may stand
    needs: str  # what a bad value is told: "noul_floor must be 0 (off) or in (0.5, 1)"


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
    calibration: Any  # profile.Calibration: temperatures, each kind's Tunings among them
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


class Reading(Protocol):
    """Read from label log-probs: prompt/layout.py lays its listings out, steps/readout.py makes
    the labels' probabilities its answer, reread and think read it again."""
    reads: bool = True  # answered by its own label reads (the shared layout, readout, temperature
    # and warm-up); False: its reads, if any, are parts of an answer it combines (box)
    rereads: bool = True  # an uncertain answer is read a second time (calibration.reread_below)
    own_labels: OwnLabels | None = None  # None: no labels of its own in the profile
    options_are: str | None = None  # YES_NO, NAMED or LEVELS (registry.shaped), or None
    as_set: bool = False  # with layout option_sets, its options are read as one set

    def listings(self, q: Question, labels, opts) -> list[Listing]:
        """A Listing per read of the question."""
        raise NotImplementedError

    def parallel_lines(self, q: Question, opts) -> int:
        """How many lines before the reply line are read as a set: every option's line when
        the kind reads its options as a set and the layout asks for it, else none."""
        return len(q.options) if self.as_set and opts.option_sets else 0

    def calibrate(self, probs: list[float], calibration) -> list[float]:
        """The kind's own step after the shared readout (none by default)."""
        return probs

    def answer(self, probs: list[float], question) -> Answer:
        """The answer from the calibrated probabilities of `question`'s options (in its order)."""
        raise NotImplementedError


class Generating(Protocol):
    """The engine calls a question needs (steps/fit.py, work.py) and its answer from them
    (steps/generate.py); whether reasoning makes it think first (steps/think.py)."""
    thinks: str | None = "unsure"  # with reasoning: "unsure" thinks in mode on, and in auto
    # when its first read is unsure; "on" only in mode on; None never

    def plan(self, q: Question, job: Job) -> Plan:
        """The calls question q needs: by default one label read of itself."""
        return Plan(reads=(q,))

    def combine(self, q: Question, answers: list, generated, job: Job) -> Answer:
        """q's answer from its reads' answers (in plan order) and its generation (a
        decision_model.Generated, or None). By default its one read's."""
        return answers[0]

    def probe(self, settings) -> Probe | None:
        """The structured-outputs check a kind answered by a constrained generation offers
        (the registry's first is run at start-up); None by default."""
        return None


class Serving(Protocol):
    """What the server asks of a kind around the decision path: its adapters (its type, fields,
    answers, schemas and warm-up bodies on each API: adapters.py), its settings and profile
    checks, its limits and what /openapi.json says of them."""
    name: str  # the internal name (Question.kind)
    systemone: SystemOne  # its /v1/systemone adapter
    decisions: Decisions | None = None  # its /v1/decisions adapter (None: no such type there)
    settings: dict = {}  # its own server settings, in config.SETTINGS' form (name: row)
    calibration: dict = {}  # its own calibration settings: name -> Tuning
    # (settings and calibration are read when config.py and profile.py are imported: a kind
    # registered after that, such as a test's, declares none)

    def check_profile(self, profile) -> None:
        """The kind's own settings in a profile beyond its calibration (a ValueError says what
        is wrong); none by default."""

    def limit(self, settings, facts) -> Limit:
        """Its caps and refusal on this server (settings and engine facts)."""
        return Limit()

    def limits_text(self, settings) -> str:
        """What /openapi.json's description says of its limits ("2 to 10 levels per score";
        "": nothing)."""
        return ""


class Kind(Reading, Generating, Serving):
    """One question kind. Subclasses set the name and the adapters, and override the hooks
    that differ."""


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


def finite(v) -> bool:
    """A finite JSON number: an int of any size (10**400 too: no float is made of it) or a
    finite float; never a boolean."""
    return not isinstance(v, bool) and (isinstance(v, int)
                                        or isinstance(v, float) and math.isfinite(v))


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
