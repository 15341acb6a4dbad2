"""The thinking step of the decision path: after the first reads, the questions the gate picks
write a bounded greedy thought, and the read ones are read again with it in the answer turn.

Owns: laying out the thought prompts (each question's own prompt, its answer turn opened for a
thought), sending them at once (they share the request's cached head), the re-read after the
thoughts, the 0.5/0.5 blend, and the counts (prompt, output and reasoning tokens).
Never: decides the gate or the cap (reasoning.py), renders (the adapters), or logs a thought.
In: the request's fit.Split and the first reads' Outcome.
Out: the Outcome with the blended answers, {request index: answer-turn start} for the questions
that thought (number questions use it for their generation) and what the step did.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

from .. import kinds, reasoning
from . import reread
from ..decision_model import CAUSAL, Outcome
from ..prompt.neutral import neutral


@dataclass(frozen=True)
class Thought:
    question: int  # request index
    text: str
    tokens: int
    cut: bool  # stopped by the token cap or the wall-clock budget


@dataclass(frozen=True)
class Spent:
    """What the step did, for the response's x_effort_used and usage."""
    mode: str
    cap: int = 0  # the thoughts' token cap (0: nobody thought)
    thoughts: tuple = ()  # Thought per question that thought, request order
    trace: bool = False


def step(s, outcome: Outcome, reader):
    """(Outcome, {request index: answer-turn start}, Spent); the Outcome as it was, no starts
    and None when the request does not reason."""
    decision = s.asked
    ask, settings = decision.reasoning, reader.profile.reasoning
    if ask is None or ask.mode == "off":
        return outcome, {}, None
    tops = []
    for i, q in enumerate(decision.questions):
        kind, p = kinds.get(q.kind), s.position[i]
        tops.append((kind.thinks, max(outcome.answers[p].probabilities)
                     if p is not None and kind.reads else None))
    who = reasoning.thinkers(ask.mode, tops, settings.tau)
    if not who:
        return outcome, {}, Spent(ask.mode, trace=ask.trace)
    cap = reasoning.token_cap(settings, outcome.num_input_tokens, len(decision.images),
                              len(decision.questions), len(who))
    deadline = time.monotonic() + ask.budget_ms / 1000 if ask.budget_ms else None
    opened = replace(s.reads, attention_mode=CAUSAL, questions=tuple(
        replace(decision.questions[i], assistant=settings.open) for i in who))
    reads, _ = reader.fit(opened, cap)
    firsts = {}
    for read in reads:  # a question read in several listings thinks once, over the first
        firsts.setdefault(read.question, read)
    futures = [reader.generate(firsts[j], None, cap, settings.stop, deadline)
               for j in range(len(who))]
    written = [f.result() for f in futures]
    thoughts = tuple(Thought(i, w.text, len(w.tokens), w.cut) for i, w in zip(who, written))
    # a thought is the model's text about the client's: it is read again as text, whatever
    # markers the client led it to write
    starts = {t.question: reasoning.block(settings, neutral(t.text, reader.profile))
              for t in thoughts}
    spent_in = sum(w.prompt_tokens for w in written)
    spent_out = sum(len(w.tokens) for w in written)
    outcome = _read_again(reader, s, outcome, starts)
    return (replace(outcome, num_input_tokens=outcome.num_input_tokens + spent_in,
                    output_tokens=outcome.output_tokens + spent_out,
                    reasoning_tokens=outcome.reasoning_tokens + spent_out),
            starts, Spent(ask.mode, cap, thoughts, ask.trace))


def _read_again(reader, s, outcome: Outcome, starts: dict) -> Outcome:
    """The questions that thought and are answered by their read, read again with their
    thought; each answer becomes 0.5 x the first + 0.5 x the one after the thought."""
    again = [i for i in sorted(starts) if kinds.get(s.asked.questions[i].kind).reads]
    if not again:
        return outcome
    asked = replace(s.reads, questions=tuple(
        replace(s.reads.questions[s.position[i]], assistant=starts[i]) for i in again))
    second = reread.answer(reader, asked, s.asked.calibration,
                           fixed=frozenset(range(len(again))))
    answers = list(outcome.answers)
    for j, i in enumerate(again):
        p = s.position[i]
        first = answers[p]
        probs = reasoning.blend(first.probabilities, second.answers[j].probabilities)
        answers[p] = kinds.get(first.kind).answer(probs, s.reads.questions[p])
    return replace(outcome, answers=tuple(answers),
                   num_input_tokens=outcome.num_input_tokens + second.num_input_tokens,
                   num_cached_tokens=outcome.num_cached_tokens + second.num_cached_tokens)
