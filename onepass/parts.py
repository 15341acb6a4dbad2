"""The request's questions as engine calls and back, on the one path every request takes: a
generic planner driven by each kind's plan and combine (kinds/base.py).

Owns: the order of the calls (answer: plan, the work budget, label reads, thoughts,
generations, combine), the split (each question's Plan from its kind; the label reads' Decision: each
question's first read in its place, further reads, such as a box's edges, after them), the
generations (every Plan's, fitted like any read within the context less its token cap, all
sent at once on the engine's threads after the reads and thoughts, a question's thought before
its own), and folding the reads' answers and the generations back into the request's Outcome,
in the request's order, through each kind's combine.
Never: knows a kind (no kind is named here), parses or renders an API, builds prompts itself
(prompt/ does), or decides who thinks (think.py).
In: a Decision. Out: the reads' Decision, then the request's Outcome.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from . import answering, kinds, readout, think, work
from .decision import CAUSAL, Decision, Outcome


def answer(decision: Decision, job, reader, max_reads: int) -> Outcome:
    """Every question answered: each kind plans its calls; the request's calls are counted
    against `max_reads` before the first; the label reads (answering.py: fit, reads, readout,
    reread); when the request reasons, the thoughts and the re-reads after them (think.py);
    then every planned generation, all at once; each kind combines its reads and generation
    into its answer, in the request's order. Generations run after the reads, not beside
    them: the reads then batch and hit the prefix cache as they would alone, so every form of
    a request answers the same."""
    s = split(decision, job)
    budget = work.Budget(max_reads, work.plan(decision, s, job.labels))
    outcome = (answering.answer(reader, s.reads, internal(decision, s), budget)
               if s.reads.questions else readout.outcome(s.reads, [], []))
    starts, spent = {}, None
    if decision.reasoning is not None and decision.reasoning.mode != "off":  # step: think
        outcome, starts, spent = think.step(reader, decision, s, outcome)
    futures = start(decision, s, reader, starts)  # step: generate
    outcome = fold(decision, s, outcome, {i: f.result() for i, f in futures.items()}, job)
    return replace(outcome, reasoning=spent)


@dataclass(frozen=True)
class Split:
    reads: Decision  # what the label reads answer: each question's first read, then the rest
    position: tuple  # per request question, its first read's index in reads (None: no read)
    parts: tuple  # per request question, the indices of its further reads in reads
    plans: tuple  # per request question, its kind's Plan

    @property
    def own(self) -> int:
        """How many of the reads are first reads (further reads follow them)."""
        return sum(p is not None for p in self.position)


def split(decision: Decision, job) -> Split:
    """Each question's plan; the reads' Decision (first reads in request order, then every
    question's further reads in request order)."""
    plans = tuple(kinds.get(q.kind).plan(q, job) for q in decision.questions)
    questions, position, parts = [], [], []
    for plan in plans:
        position.append(len(questions) if plan.reads else None)
        questions += plan.reads[:1]
    for plan in plans:
        parts.append(tuple(range(len(questions), len(questions) + len(plan.reads[1:]))))
        questions += plan.reads[1:]
    return Split(replace(decision, questions=tuple(questions)), tuple(position), tuple(parts),
                 plans)


def internal(decision: Decision, s: Split) -> set[int]:
    """Reads that are parts of another answer (a kind whose answer is not its read): never
    read again or thought about on their own."""
    return ({p for q, p in zip(decision.questions, s.position)
             if p is not None and not kinds.get(q.kind).reads}
            | set(range(s.own, len(s.reads.questions))))


def start(decision: Decision, s: Split, reader, thoughts: dict) -> dict:
    """{request index: future of (text, tokens, cut, prompt tokens)}: every planned generation
    laid out (after its question's thought, if it thought), fitted within the context less its
    token cap, all sent at once. Causal always: a generation decodes."""
    jobs = [(i, replace(p.generation.question, assistant=thoughts.get(i, "")),
             p.generation.structured, p.generation.max_tokens)
            for i, p in enumerate(s.plans) if p.generation is not None]
    futures = {}
    for cap in sorted({job[3] for job in jobs}):  # one fit per token cap
        same = [job for job in jobs if job[3] == cap]
        asked = replace(decision, attention_mode=CAUSAL, questions=tuple(q for _, q, _, _ in same))
        reads, _ = reader.fit(asked, cap)
        for (i, _, structured, _), read in zip(same, reads):
            futures[i] = reader.generate(read, structured, cap)
    return futures


def fold(decision: Decision, s: Split, outcome: Outcome, generated: dict, job) -> Outcome:
    """The request's Outcome: each question's answer from its kind's combine (its reads'
    answers in plan order, its generation or None); the generations' prompt and output tokens
    added to the reads' counts; fitted-state reports of first reads only."""
    answers, extra_in, extra_out = [], 0, 0
    for i, q in enumerate(decision.questions):
        mine = ([outcome.answers[s.position[i]]] if s.position[i] is not None else []) + [
            outcome.answers[j] for j in s.parts[i]]
        made = generated.get(i)
        if made is not None:
            extra_in, extra_out = extra_in + made[3], extra_out + len(made[1])
        answers.append(kinds.get(q.kind).combine(q, mine, made, job))
    request_of = {p: i for i, p in enumerate(s.position) if p is not None}
    selections = tuple(replace(sel, question=request_of[sel.question])
                       for sel in outcome.selections if sel.question in request_of)
    return replace(outcome, answers=tuple(answers), selections=selections,
                   num_input_tokens=outcome.num_input_tokens + extra_in,
                   output_tokens=outcome.output_tokens + extra_out)
