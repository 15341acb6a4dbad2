"""One work budget per request: every call of the model it may make, counted before the first.

Owns: the plan (the most calls a request can make: its label reads, a box's `present` and edge
reads included; when it reasons, a thought for every question that may think and the re-reads
after them; box and number generations), refusing a plan over `--max-reads` with a 422 before
any engine call, and the spare calls an optional re-read (calibration.reread_below) may use.
Never: calls vLLM, lays out prompts or decides who thinks (reasoning.py, think.py do).
The limit is a total: no step starts a budget of its own.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import kinds
from .backend.engine import MAX_LOGPROB_TOKEN_IDS
from .decision_model import Page
from .errors import InvalidRequest, Problem
from .reasoning import ON, UNSURE


@dataclass(frozen=True)
class Calls:
    reads: int  # the first label reads' calls (box presents and edges included)
    thoughts: int  # at most one per question that may think
    rereads: int  # the reads again after those thoughts
    generations: int  # box and number answers

    @property
    def total(self) -> int:
        return self.reads + self.thoughts + self.rereads + self.generations


def read_calls(questions, labels, opts) -> int:
    """The engine calls of the label reads of `questions`, laid out as layout would: a read
    with more label ids than vLLM returns per call is read in slices (Engine.read), a call
    each."""
    return sum(-(-len(listing.pairs) // MAX_LOGPROB_TOKEN_IDS) for q in questions
               for listing in kinds.get(q.kind).listings(q, labels, opts))


def plan(reads: Page, plans, asked, ask, labels) -> Calls:
    """The most calls a request can make: its label reads (`reads`, fit.split's: every
    question's, a box's present and edges included), the generations its kinds planned
    (`plans`), and when it reasons (`ask`) a thought for each question `asked` that may think
    and the reads after them."""
    opts = reads.layout  # resolved: resolve.py
    first = read_calls(reads.questions, labels, opts)
    thinkers = []
    if ask is not None and ask.mode != "off":  # auto: any of them may turn out unsure
        may = (UNSURE, ON) if ask.mode == "on" else (UNSURE,)
        thinkers = [q for q in asked if kinds.get(q.kind).thinks in may]
    again = read_calls([q for q in thinkers if kinds.get(q.kind).reads], labels, opts)
    made = sum(p.generation is not None for p in plans)
    return Calls(first, len(thinkers), again, made)


class Budget:
    """A request's calls of the model: the plan is refused over the limit; what the plan leaves
    is spare, for the optional re-read alone."""

    def __init__(self, limit: int, planned: Calls):
        if planned.total > limit:
            raise InvalidRequest([Problem(("questions",), (
                f"this request needs up to {planned.total} calls of the model ({planned.reads} "
                f"reads, {planned.thoughts} thoughts, {planned.rereads} reads after them, "
                f"{planned.generations} generations); this server makes at most {limit} per "
                "request, every step counted"), "too_long")])
        self.spare = limit - planned.total

    def take_spare(self, calls: int) -> bool:
        """True, and the calls taken, when the spare covers them."""
        if calls > self.spare:
            return False
        self.spare -= calls
        return True
