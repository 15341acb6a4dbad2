"""One work budget per request: every call of the model it may make, counted before the first,
and what its label reads cost in prompt tokens, priced before the first read.

Owns: the plan (the most calls a request can make: its label reads, a box's `present` and edge
reads included; when it reasons, a thought for every question that may think and the re-reads
after them; box and number generations), refusing a plan over `--max-reads` with a 422 before
any engine call, and the spare calls an optional re-read (calibration.reread_below) may use;
the token budget (`--max-prompt-tokens`): the prompt tokens the engine computes for the label
reads (a head several reads share once), each /tokenize call fitting makes and fitting's own
work, priced in tokens, a 422 as soon as the price passes the limit (fitting tells it before
it does the work: prompt/fitting.py).
Never: calls vLLM, lays out prompts or decides who thinks (reasoning.py, think.py do).
The limits are totals: no step starts a budget of its own.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from . import kinds
from .backend.engine import MAX_LOGPROB_TOKEN_IDS
from .decision_model import TWO_WAY, Page
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


TOKENIZE_CALL_TOKENS = 64  # a /tokenize call's price: its HTTP round trip in vLLM's one API
# process, about what the engine takes to compute this many prompt tokens
FIT_WORK_PER_TOKEN = 64  # parts ranked or scanned by fitting (prompt/fitting.py) per token


def computed(reads, tokens) -> int:
    """The prompt tokens the engine computes for `reads`, each `tokens[i]` long: a head shared
    by several one-way text reads (system turn and record, Engine.read_all prefills it once)
    counted once, its tokens taken as its share of the prompt's characters."""
    heads = defaultdict(list)
    for r, n in zip(reads, tokens):
        if r.head_chars and not r.images and r.attention_mode != TWO_WAY:
            heads[r.prompt[:r.head_chars]].append(n * r.head_chars // max(len(r.prompt), 1))
    return sum(tokens) - sum(sum(h) - max(h) for h in heads.values())


class Budget:
    """A request's calls of the model: the plan is refused over the limit; what the plan leaves
    is spare, for the optional re-read alone. And its price in tokens (`tokens`: the limit,
    None for none): fitting tells it the prompts, the /tokenize calls and its work as they
    come, each a 422 once the price is over the limit."""

    def __init__(self, limit: int, planned: Calls, tokens: int | None = None):
        self.limit_tokens, self.prompt_tokens, self.calls, self.work = tokens, 0, 0, 0
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

    # -- the price in tokens (prompt/fitting.py and the engine's counts tell it) --------------
    @property
    def price(self) -> int:
        return (self.prompt_tokens + self.calls * TOKENIZE_CALL_TOKENS
                + -(-self.work // FIT_WORK_PER_TOKEN))

    def prompts(self, reads, tokens, more: int = 0) -> None:
        """The label reads' prompts (`tokens` each: counted, or their UTF-8 bytes, a bound),
        and `more` tokens at most of prompts still to fit."""
        self.prompt_tokens = computed(reads, tokens) + more
        self._check()

    def tokenized(self, calls: int) -> None:
        self.calls += calls
        self._check()

    def fitting(self, work: int) -> None:
        self.work += work
        self._check()

    def _check(self) -> None:
        if self.limit_tokens is None or self.price <= self.limit_tokens:
            return
        raise InvalidRequest([Problem(("questions",), (
            f"this request would cost about {self.price} tokens of work ({self.prompt_tokens} "
            "prompt tokens the engine would compute for its label reads, counted or bounded by "
            f"their bytes, a question to cut at its whole budget; {self.calls} /tokenize calls at "
            f"{TOKENIZE_CALL_TOKENS} tokens each, {self.work} parts ranked or scanned to cut its "
            f"state at {FIT_WORK_PER_TOKEN} a token); this server spends at most "
            f"{self.limit_tokens} per request (--max-prompt-tokens): send fewer questions, a "
            "shorter state or a layout with fewer reads"), "too_long")])
