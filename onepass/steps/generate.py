"""Generate: the planned generations (box and number answers) under vLLM's structured outputs,
all at once, and every question's answer from its kind's combine.

Owns: laying out each generation (after its question's thought, if it thought), fitting it within
the context less its token cap, sending them at once on the engine's threads after the reads and
thoughts (so the reads batch and hit the prefix cache as they would alone, and every form of a
request answers the same), and folding the reads' answers and the generations back into the
request's Outcome, in the request's order, through each kind's combine.
Never: knows a kind (no kind is named here) or decides who thinks (think.py).
In: the record with the Outcome of the reads (and thoughts). Out: the record with the
request's Outcome.
"""
from __future__ import annotations

from dataclasses import replace

from .. import kinds
from ..decision_model import CAUSAL, Outcome
from .record import Record


def generate(r: Record) -> Record:
    """The generate step: every planned generation, then each question's answer, in the
    record's outcome (with what the thinking step did)."""
    futures = start(r)
    outcome = fold(r, {i: f.result() for i, f in futures.items()})
    return replace(r, outcome=replace(outcome, effort=replace(outcome.effort,
                                                              reasoning=r.spent)))


def start(r: Record) -> dict:
    """{request index: future of its decision_model.Generated}: every planned generation
    laid out (after its question's thought, if it thought), fitted within the context less its
    token cap, all sent at once. Causal always: a generation decodes."""
    calls = r.serving.calls
    jobs = [(i, replace(p.generation.question, assistant=r.starts.get(i, "")),
             p.generation.structured, p.generation.max_tokens)
            for i, p in enumerate(r.plans) if p.generation is not None]
    futures = {}
    for cap in sorted({job[3] for job in jobs}):  # one fit per token cap
        same = [job for job in jobs if job[3] == cap]
        asked = replace(r.reads, attention_mode=CAUSAL, questions=tuple(q for _, q, _, _ in same))
        reads, _ = calls.fit(asked, cap)
        for (i, _, structured, _), read in zip(same, reads):
            futures[i] = calls.generate(read, structured, cap)
    return futures


def fold(r: Record, generated: dict) -> Outcome:
    """The request's Outcome: each question's answer from its kind's combine (its reads'
    answers in plan order, its generation or None); the generations' prompt and output tokens
    added to the reads' counts; fitted-state reports of first reads only."""
    outcome = r.outcome
    answers, extra_in, extra_out = [], 0, 0
    for i, q in enumerate(r.decision.questions):
        mine = ([outcome.answers[r.position[i]]] if r.position[i] is not None else []) + [
            outcome.answers[j] for j in r.parts[i]]
        made = generated.get(i)
        if made is not None:
            extra_in, extra_out = extra_in + made.prompt_tokens, extra_out + len(made.tokens)
        answers.append(kinds.get(q.kind).combine(q, mine, made, r.job))
    request_of = {p: i for i, p in enumerate(r.position) if p is not None}
    selections = tuple(replace(sel, question=request_of[sel.question])
                       for sel in outcome.effort.selections if sel.question in request_of)
    return replace(outcome, answers=tuple(answers),
                   effort=replace(outcome.effort, selections=selections),
                   num_input_tokens=outcome.num_input_tokens + extra_in,
                   output_tokens=outcome.output_tokens + extra_out)
