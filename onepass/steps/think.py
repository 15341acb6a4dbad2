"""The thinking step of the decision path: after the first reads, the questions the gate picks
write a bounded greedy thought, and the read ones are read again with it in the answer turn.

Owns: laying out the thought prompts (each question's own prompt, its answer turn opened for a
thought), sending them at once (they share the request's cached head), the re-read after the
thoughts, the 0.5/0.5 blend, and the counts (prompt, output and reasoning tokens).
Never: decides the gate or the cap (reasoning.py), renders (the adapters), or logs a thought.
In: the record with the first reads' Outcome.
Out: the record with the blended answers, {request index: answer-turn start} for the questions
that thought (number questions use it for their generation) and what the step did.
"""
from __future__ import annotations

import time
from dataclasses import replace

from .. import kinds, reasoning
from ..decision_model import CAUSAL, Outcome, Spent, Thought
from ..prompt.neutral import neutral
from . import reread
from .record import Record


def think(r: Record) -> Record:
    """The think step: the record with the blended outcome, the answer-turn start of each
    question that thought and what the step did (spent None: the request does not reason)."""
    decision, calls, outcome = r.decision, r.serving.calls, r.outcome
    ask, settings = decision.reasoning, calls.profile.reasoning
    if ask is None or ask.mode == "off":
        return r
    tops = []
    for i, q in enumerate(decision.questions):
        kind, p = kinds.get(q.kind), r.position[i]
        tops.append((kind.thinks, max(outcome.answers[p].probabilities)
                     if p is not None and kind.reads else None))
    who = reasoning.thinkers(ask.mode, tops, settings.tau)
    if not who:
        return replace(r, spent=Spent(ask.mode, trace=ask.trace))
    cap = reasoning.token_cap(settings, outcome.num_input_tokens, len(decision.images),
                              len(decision.questions), len(who))
    deadline = time.monotonic() + ask.budget_ms / 1000 if ask.budget_ms else None
    opened = replace(r.reads, attention_mode=CAUSAL, questions=tuple(
        replace(decision.questions[i], assistant=settings.open) for i in who))
    reads, _ = calls.fit(opened, cap)
    firsts = {}
    for read in reads:  # a question read in several listings thinks once, over the first
        firsts.setdefault(read.question, read)
    futures = [calls.generate(firsts[j], None, cap, settings.stop, deadline)
               for j in range(len(who))]
    written = [f.result() for f in futures]
    thoughts = tuple(Thought(i, w.text, len(w.tokens), w.cut) for i, w in zip(who, written))
    # a thought is the model's text about the client's: it is read again as text, whatever
    # markers the client led it to write
    starts = {t.question: reasoning.block(settings, neutral(t.text, calls.profile))
              for t in thoughts}
    spent_in = sum(w.prompt_tokens for w in written)
    spent_out = sum(len(w.tokens) for w in written)
    outcome = _read_again(r, starts)
    return replace(r, outcome=replace(
        outcome, num_input_tokens=outcome.num_input_tokens + spent_in,
        output_tokens=outcome.output_tokens + spent_out,
        reasoning_tokens=outcome.reasoning_tokens + spent_out),
        starts=starts, spent=Spent(ask.mode, cap, thoughts, ask.trace))


def _read_again(r: Record, starts: dict) -> Outcome:
    """The questions that thought and are answered by their read, read again with their
    thought; each answer becomes 0.5 x the first + 0.5 x the one after the thought."""
    outcome = r.outcome
    again = [i for i in sorted(starts) if kinds.get(r.decision.questions[i].kind).reads]
    if not again:
        return outcome
    asked = replace(r.reads, questions=tuple(
        replace(r.reads.questions[r.position[i]], assistant=starts[i]) for i in again))
    second = reread.read_page(r.serving.calls, asked, r.decision.calibration,
                              fixed=frozenset(range(len(again))))
    answers = list(outcome.answers)
    for j, i in enumerate(again):
        p = r.position[i]
        first = answers[p]
        probs = reasoning.blend(first.probabilities, second.answers[j].probabilities)
        answers[p] = kinds.get(first.kind).answer(probs, r.reads.questions[p])
    return replace(outcome, answers=tuple(answers),
                   num_input_tokens=outcome.num_input_tokens + second.num_input_tokens,
                   num_cached_tokens=outcome.num_cached_tokens + second.num_cached_tokens)
