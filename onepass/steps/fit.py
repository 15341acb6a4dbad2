"""Fit: a Decision's questions as the engine calls they need, counted and fitted before the first.

Owns: the split (each question's Plan from its kind; the label reads' Page: each question's
first read in its place, further reads, such as a box's edges, after them), which
reads are parts of another answer (never read again on their own), the request's work budget
(work.py: refused over --max-reads before any call) and fitting the label reads into the
context (reader.py, prompt/), to the plugin's two-way budget once it is known.
Never: knows a kind (no kind is named here), calls vLLM or turns reads into probabilities.
In: the request's Decision and Job. Out: a Split, which the later steps fill in.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .. import kinds, work
from ..decision_model import Decision, Page


@dataclass(frozen=True)
class Split:
    """The request's engine calls and, step by step, what they gave."""
    asked: Decision  # the request's Decision (after resolve and images)
    job: object  # kinds.base.Job: what a kind's plan and combine may look at
    reads: Page  # what the label reads show: each question's first read, then the rest
    position: tuple  # per request question, its first read's index in reads (None: no read)
    parts: tuple  # per request question, the indices of its further reads in reads
    plans: tuple  # per request question, its kind's Plan
    fixed: frozenset = frozenset()  # reads that are parts of another answer (internal)
    budget: work.Budget | None = None
    known: int | None = None  # the two-way budget the reads were fitted to (None: the context)
    fitted: tuple = ()  # decision.Read per label read, fitted
    selections: tuple = ()  # prompt.fitting.Selection per state cut to fit
    results: tuple = ()  # decision.ReadResult per fitted read (the reads step)
    probs: tuple = ()  # per read question, its option probabilities (the readout step)

    @property
    def own(self) -> int:
        """How many of the reads are first reads (further reads follow them)."""
        return sum(p is not None for p in self.position)


def plan(decision: Decision, job, reader, max_reads: int) -> Split:
    """Each question's calls, the request's budget (a 422 over max_reads) and its label reads
    fitted (none when no question reads)."""
    s = split(decision, job)
    s = replace(s, fixed=frozenset(internal(decision, s)), budget=work.Budget(
        max_reads, work.plan(s.reads, s.plans, decision.questions, decision.reasoning,
                             job.labels)))
    if not s.reads.questions:
        return s
    known = reader.two_way_budget(s.reads.attention_mode)
    fitted, selections = reader.fit(s.reads, 1, known)
    return replace(s, known=known, fitted=tuple(fitted), selections=tuple(selections))


def split(decision: Decision, job) -> Split:
    """Each question's plan; the reads' Page (first reads in request order, then every
    question's further reads in request order)."""
    plans = tuple(kinds.get(q.kind).plan(q, job) for q in decision.questions)
    questions, position, parts = [], [], []
    for p in plans:
        position.append(len(questions) if p.reads else None)
        questions += p.reads[:1]
    for p in plans:
        parts.append(tuple(range(len(questions), len(questions) + len(p.reads[1:]))))
        questions += p.reads[1:]
    reads = Page(decision.state, tuple(questions), decision.attention_mode, decision.layout,
                 decision.images)
    return Split(decision, job, reads, tuple(position), tuple(parts), plans)


def internal(decision: Decision, s: Split) -> set[int]:
    """Reads that are parts of another answer (a kind whose answer is not its read): never
    read again or thought about on their own."""
    return ({p for q, p in zip(decision.questions, s.position)
             if p is not None and not kinds.get(q.kind).reads}
            | set(range(s.own, len(s.reads.questions))))
