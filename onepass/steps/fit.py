"""Fit: a Decision's questions as the engine calls they need, counted and fitted before the first.

Owns: the split (each question's Plan from its kind; the label reads' Page: each question's
first read in its place, further reads, such as a box's edges, after them), which
reads are parts of another answer (never read again on their own), the request's work budget
(work.py: refused over --max-reads before any call, over --max-prompt-tokens as fitting prices
the reads, before the first), fitting the label reads into the context (engine_calls.py,
prompt/), to the plugin's two-way budget once it is known, and the price told to the request's
turn at the engine (its deadline judged at its own cost: edge/pace.py).
Never: knows a kind (no kind is named here), calls vLLM or turns reads into probabilities.
In: the record with its Decision. Out: the record with its plans, budget and fitted reads.
"""
from __future__ import annotations

from dataclasses import replace

from .. import kinds, work
from ..decision_model import Page
from ..kinds.base import Job
from .record import Record


def fit(r: Record) -> Record:
    """The fit step: each question's plan, the request's budget (a 422 over --max-reads, or
    over --max-prompt-tokens) and its label reads fitted (none when no question reads)."""
    serving = r.serving
    r = split(replace(r, job=Job(r.decision.images, serving.profile, serving.settings,
                                 serving.facts.labels)))
    r = replace(r, fixed=frozenset(internal(r)), budget=work.Budget(
        serving.settings.max_reads, work.plan(r.reads, r.plans, r.decision.questions,
                                              r.decision.reasoning, r.job.labels),
        serving.settings.max_prompt_tokens or None))
    if not r.reads.questions:
        return r
    known = serving.calls.two_way_budget(r.reads.attention_mode)
    fitted, selections = serving.calls.fit(r.reads, 1, known, r.budget)
    if r.priced is not None:  # its own cost against its deadline, before the first read
        r.priced(r.budget.price)
    return replace(r, known=known, fitted=tuple(fitted), selections=tuple(selections))


def split(r: Record) -> Record:
    """Each question's plan; the reads' Page (first reads in request order, then every
    question's further reads in request order)."""
    decision = r.decision
    plans = tuple(kinds.get(q.kind).plan(q, r.job) for q in decision.questions)
    questions, position, parts = [], [], []
    for p in plans:
        position.append(len(questions) if p.reads else None)
        questions += p.reads[:1]
    for p in plans:
        parts.append(tuple(range(len(questions), len(questions) + len(p.reads[1:]))))
        questions += p.reads[1:]
    reads = Page(decision.state, tuple(questions), decision.attention_mode, decision.layout,
                 decision.images)
    return replace(r, reads=reads, position=tuple(position), parts=tuple(parts), plans=plans)


def internal(r: Record) -> set[int]:
    """Reads that are parts of another answer (a kind whose answer is not its read): never
    read again or thought about on their own."""
    return ({p for q, p in zip(r.decision.questions, r.position)
             if p is not None and not kinds.get(q.kind).reads}
            | set(range(r.own, len(r.reads.questions))))
