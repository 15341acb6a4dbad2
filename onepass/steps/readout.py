"""Readout: label log-probs become option probabilities, then the contract's summaries.

Owns: renormalising over the labels (less the fitted prior of each label position, with the
profile's temperature for the question type),
summing an option's labels over every listing, averaging several reads of a question, the
agreement shrink, the re-read blend and the outcome's counts; each kind's own step (the yes/no
floor) and summary (choice / score / confidence) come from its unit in kinds/.
Never: rounds (sums stay within 1e-9 of 1) or returns NaN/Infinity.
In: a Question, its Read and ReadResult. Out: an Answer.
"""
from __future__ import annotations

import math
from dataclasses import replace

from .. import kinds
from ..decision_model import Answer, Effort, Outcome, Page, Question, Read, ReadResult
from ..profile import Calibration
from ..softmax import label_distribution

def debiased(read: Read, result: ReadResult, prior) -> list[float]:
    """Label log-probs less the fitted prior of each label's position in its listing: the
    model's preference for that position whatever the options (raw nats)."""
    if not prior:
        return list(result.label_logprobs)
    orders = read.order_of_label or (0,) * len(result.label_logprobs)
    seen, out = {}, []
    for lp, order in zip(result.label_logprobs, orders):
        position = seen[order] = seen.get(order, -1) + 1
        out.append(lp - prior[position])
    return out


def option_probabilities(read: Read, result: ReadResult, num_options: int,
                         temperature: float, prior: list = ()) -> list[float]:
    per_label = label_distribution(debiased(read, result, prior), temperature)
    sums = [[] for _ in range(num_options)]
    for option, p in zip(read.option_of_label, per_label):
        sums[option].append(p)
    return [math.fsum(s) for s in sums]


def order_distributions(read: Read, result: ReadResult, n: int,
                        temperature: float, prior: list = ()) -> list[list[float]]:
    """One distribution over the options per listing order in the read (its own labels)."""
    per_label = label_distribution(debiased(read, result, prior), temperature)
    orders = read.order_of_label or (0,) * len(per_label)
    out = []
    for j in sorted(set(orders)):
        idx = [i for i, o in enumerate(orders) if o == j]
        total = math.fsum(per_label[i] for i in idx)
        mass = [0.0] * n
        for i in idx:
            mass[read.option_of_label[i]] += per_label[i] / total if total else 1 / len(idx)
        out.append(mass)
    return out


def disagreement(per_order: list[list[float]], mean: list[float]) -> float:
    """Mean total-variation distance of each order's distribution from their mean, in [0, 1]."""
    return math.fsum(0.5 * math.fsum(abs(a - b) for a, b in zip(d, mean))
                     for d in per_order) / len(per_order)


def temperature(calibration: Calibration, kind: str, images: bool) -> float:
    """The question type's temperature; with images, the profile's image temperature if set."""
    temps = calibration.temperature
    return temps["image"] if images and "image" in temps else temps[kind]


def question_probabilities(question: Question, pairs, calibration: Calibration,
                           shrink: float, images: bool = False) -> list[float]:
    """Option probabilities from a question's reads: temperature per question type (or for
    images), the listings' label mass summed (one read) or the reads averaged, agreement
    shrink, then the kind's own step (the noul floor)."""
    n, temp = len(question.options), temperature(calibration, question.kind, images)
    prior = calibration.label_prior.get(question.kind, {}).get(str(n), ())
    per_read = [option_probabilities(r, res, n, temp, prior) for r, res in pairs]
    probs = [math.fsum(col) / len(per_read) for col in zip(*per_read)]
    per_order = [d for r, res in pairs for d in order_distributions(r, res, n, temp, prior)]
    if shrink and len(per_order) > 1:
        # Mixing with uniform keeps the ranking: the top answer never changes.
        weight = shrink * disagreement(per_order, probs)
        probs = [(1 - weight) * p + weight / n for p in probs]
    return kinds.get(question.kind).calibrate(probs, calibration)


def summary(question: Question, probs: list[float]) -> Answer:
    """The kind's summary of its probabilities (choice, score, confidence)."""
    return kinds.get(question.kind).answer(probs, question)


def blend(first: list[float], second: list[float], first_weight: float) -> list[float]:
    return [first_weight * a + (1 - first_weight) * b for a, b in zip(first, second)]


def probabilities(page: Page, reads: list[Read], results: list[ReadResult],
                  calibration: Calibration, shrink: float) -> list[list[float]]:
    """Per question of the page, in order: its reads (grouped by Read.question) made
    probabilities."""
    grouped = [[] for _ in page.questions]
    for read, result in zip(reads, results):
        grouped[read.question].append((read, result))
    return [question_probabilities(q, pairs, calibration, shrink, bool(page.images))
            for q, pairs in zip(page.questions, grouped)]


def readout(r):
    """The readout step: the record's reads made option probabilities, per read question."""
    return replace(r, probs=tuple(probabilities(r.reads, r.fitted, r.results,
                                                r.decision.calibration, r.reads.layout.shrink)))


def outcome(page: Page, probs: list[list[float]], results: list[ReadResult],
            rereads: int = 0, reread_below: float = 0.0, reads: list[Read] = (),
            selections: tuple = ()) -> Outcome:
    """The answers and the counts. Input tokens count the whole input: a read whose state was
    cut to fit counts the uncut prompt's tokens."""
    answers = tuple(summary(q, p) for q, p in zip(page.questions, probs))
    whole = [r.whole_tokens for r in reads] or [0] * len(results)
    sets = {r.question for r in reads if r.spans}
    listed = tuple(i for i, q in enumerate(page.questions) if reads and i not in sets
                   and kinds.get(q.kind).parallel_lines(q, page.layout))
    return Outcome(answers, sum(max(res.num_prompt_tokens, w) for res, w in zip(results, whole)),
                   page.attention_mode, sum(res.num_cached_tokens for res in results),
                   len(page.images), effort=Effort(rereads, reread_below, tuple(selections),
                                                   listed))
