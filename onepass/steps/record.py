"""The request record: one request on its way through the decision path. Every step takes the
record and returns it with what that step found; nothing else passes between steps.

Owns: Record (what the request brought, then each step's fields, grouped below by the step that
fills them; docs/architecture.md shows the record after each step) and Serving (what the server
brings to every request, the same for all of them).
Never: does a step's work, knows a kind or an API's fields.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from email.message import Message
from types import ModuleType
from typing import TYPE_CHECKING, Callable

from ..decision_model import Decision, Outcome, Page, Read, ReadResult, Spent

if TYPE_CHECKING:  # the types only: these modules import the steps' neighbours at run time
    from ..api import Limits, Request
    from ..backend.probes import Facts
    from ..body.limits import Limits as BodyLimits
    from ..config import Settings
    from ..edge.body_budget import Hold
    from ..images.inputs import Policy
    from ..kinds.base import Job, Plan
    from ..profile import Profile
    from ..prompt.fitting import Selection
    from ..work import Budget
    from .engine_calls import EngineCalls


@dataclass(frozen=True)
class Serving:
    """The server's side of every request: built once by the Pipeline."""
    profile: Profile
    settings: Settings
    facts: Facts  # what start-up learnt of the engine
    calls: EngineCalls  # the engine, with prompts fitted first
    limits: Limits | None = None  # what both APIs check
    image_policy: Policy | None = None  # None: text only
    body_limits: BodyLimits | None = None


@dataclass(frozen=True)
class Record:
    """One request, step by step (every field has a default so a test can start anywhere)."""
    # given: Pipeline.decide
    serving: Serving | None = None
    adapter: ModuleType | None = None  # the route's API (api/systemone.py, api/decisions.py)
    raw: bytes = b""  # the body as received
    headers: Message | None = None
    hold: Hold | None = None  # the body's hold on the body budget, resized as it is read
    priced: Callable[[int], None] | None = None  # its turn at the engine's: a 529 when a
    # decision of that cost would end past its deadline (server.engine_turn; None: no turn)
    # parse
    request: Request | None = None  # checked fields, in no API's shape
    # resolve (images adds the checked images)
    decision: Decision | None = None
    # fit
    job: Job | None = None  # what a kind's plan and combine may look at
    reads: Page | None = None  # what the label reads show: first reads, then the rest
    # per request question, its first read's index in reads (None: none)
    position: tuple[int | None, ...] = ()
    parts: tuple[tuple[int, ...], ...] = ()  # per request question, its further reads' indices
    plans: tuple[Plan, ...] = ()  # per request question, its kind's Plan
    fixed: frozenset[int] = frozenset()  # reads that are parts of another answer (never re-read)
    budget: Budget | None = None  # the request's calls of the model
    known: int | None = None  # the two-way budget the reads were fitted to (None: the context)
    fitted: tuple[Read, ...] = ()  # per label read, fitted
    selections: tuple[Selection, ...] = ()  # per state cut to fit
    # read
    results: tuple[ReadResult, ...] = ()  # per fitted read
    # readout
    probs: tuple[list[float], ...] = ()  # per question of reads, its option probabilities
    # reread (think and generate replace it)
    outcome: Outcome | None = None
    # think
    # {request index: answer-turn start} of thoughts
    starts: dict[int, str] = field(default_factory=dict)
    spent: Spent | None = None  # what the thinking step did (None: it did not run)
    # render
    response: dict | None = None  # the response document

    @property
    def own(self) -> int:
        """How many of the reads are first reads (further reads follow them)."""
        return sum(p is not None for p in self.position)
