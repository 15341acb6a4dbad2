"""Readout: label log-probs become option probabilities, then the contract's summaries.

Owns: renormalising over the labels (with the profile's temperature), summing an option's
labels, and choice / score / confidence from the probabilities actually returned.
Never: rounds (sums stay within 1e-9 of 1) or returns NaN/Infinity.
In: a Question, its Read and ReadResult. Out: an Answer.
"""
from __future__ import annotations

import math

from .decision import CHOICE, NOUL, Answer, Decision, Outcome, Question, Read, ReadResult
from .errors import EngineFailed


def label_distribution(logprobs, temperature: float = 1.0) -> list[float]:
    """Softmax of logprob / temperature over the labels only (exact up to float rounding)."""
    scaled = [lp / temperature for lp in logprobs]
    if not scaled or any(math.isnan(x) for x in scaled) or max(scaled) == -math.inf:
        raise EngineFailed("vLLM returned no finite log-probability for any label")
    top = max(scaled)
    weights = [math.exp(x - top) for x in scaled]  # -inf becomes 0.0
    total = math.fsum(weights)
    return [w / total for w in weights]


def option_probabilities(read: Read, result: ReadResult, num_options: int,
                         temperature: float) -> list[float]:
    per_label = label_distribution(result.label_logprobs, temperature)
    sums = [[] for _ in range(num_options)]
    for option, p in zip(read.option_of_label, per_label):
        sums[option].append(p)
    return [math.fsum(s) for s in sums]


def choice_confidence(probs) -> float:
    """TypeSafe's formula: (p_max - 1/n) / (1 - 1/n), 1 for a single option."""
    n = len(probs)
    if n == 1:
        return 1.0
    return min(1.0, max(0.0, (max(probs) - 1 / n) / (1 - 1 / n)))


def score_confidence(probs) -> float:
    """1 - expected distance from the most likely level, over the uniform spread D."""
    n = len(probs)
    if n == 1:
        return 1.0
    mode = max(range(n), key=probs.__getitem__)
    spread = math.fsum(abs(i - (n - 1) / 2) for i in range(n)) / n
    distance = math.fsum(p * abs(i - mode) for i, p in enumerate(probs))
    return min(1.0, max(0.0, 1 - distance / spread))


def answer(question: Question, read: Read, result: ReadResult, temperature: float) -> Answer:
    probs = option_probabilities(read, result, len(question.options), temperature)
    best = max(range(len(probs)), key=probs.__getitem__)
    if question.kind == NOUL:
        return Answer(question.kind, tuple(probs), 1.0, probs[0], best)
    if question.kind == CHOICE:
        return Answer(question.kind, tuple(probs), choice_confidence(probs), 0.0, best)
    expected = math.fsum(i * p for i, p in enumerate(probs))
    return Answer(question.kind, tuple(probs), score_confidence(probs), expected, best)


def outcome(decision: Decision, reads: list[Read], results: list[ReadResult],
            temperature: float) -> Outcome:
    answers = tuple(answer(q, r, res, temperature)
                    for q, r, res in zip(decision.questions, reads, results))
    return Outcome(answers, sum(res.num_prompt_tokens for res in results),
                   decision.attention_mode)
