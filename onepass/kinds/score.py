"""The score kind: 2 to 10 ordered levels, the expected level as its answer.

Owns: the score prompt lines (levels lowest first), its answer (expected level) and confidence,
and its renderings (a legend echoing the levels as sent on /v1/systemone, labelled levels on
/v1/decisions).
"""
from __future__ import annotations

import math

from ..decision import SCORE, Answer, Option
from .base import (MAX_LEVELS, MIN_LEVELS, Kind, Listing, best, described, entries,
                   is_criteria, listed_lines, unknown_fields)


def confidence(probs) -> float:
    """1 - expected distance from the most likely level, over the uniform spread D."""
    n = len(probs)
    if n == 1:
        return 1.0
    mode = max(range(n), key=probs.__getitem__)
    spread = math.fsum(abs(i - (n - 1) / 2) for i in range(n)) / n
    distance = math.fsum(p * abs(i - mode) for i, p in enumerate(probs))
    return min(1.0, max(0.0, 1 - distance / spread))


class Score(Kind):
    name, systemone, decisions = SCORE, "score", "score"
    label_key, labels_needed = "score_labels", "10"
    decisions_keys = frozenset({"type", "name", "instructions", "levels"})
    warmup_short = ("anger", {"type": "score", "criteria": ["Calm", "Annoyed", "Furious"]})
    warmup_decisions = {"type": "score", "instructions": "How angry?",
                        "levels": [{"label": "calm"}, {"label": "furious"}]}

    def labels_ok(self, labels) -> bool:
        return len(labels) >= MAX_LEVELS

    def warmup_body(self, state: str, image_url: str = "") -> dict:
        return {"state": {"ticket": state, "plan": "pro"}, "questions": {"anger": {
            "type": "score", "instructions": "How angry is the customer?",
            "criteria": ["Calm", "Annoyed", "Furious"]}}}

    def listings(self, q, labels, opts):
        """Levels lowest first; with both_directions also highest first, as a second read.
        A level keeps its label (its number) in either direction."""
        n = len(q.options)
        ways = [("Levels, lowest first:", tuple(range(n)))]
        if opts.both_directions:
            ways.append(("Levels, highest first:", tuple(range(n - 1, -1, -1))))
        out = []
        for d, (heading, levels) in enumerate(ways):
            pairs = tuple(labels.score[i] for i in levels)
            lines = listed_lines(q, [(pairs, levels)], heading, "the label of the right level",
                                 lambda option: option.text)
            out.append(Listing(lines, pairs, levels, (d,) * n))
        return out

    def answer(self, probs, question):
        expected = math.fsum(i * p for i, p in enumerate(probs))
        return Answer(self.name, tuple(probs), confidence(probs), expected, best(probs))

    def systemone_options(self, criteria, loc, check, max_options, instructions=None):
        if not is_criteria(criteria, list, loc, check,
                           "score criteria must be an ordered array of levels, lowest first"):
            return []
        if not MIN_LEVELS <= len(criteria) <= MAX_LEVELS:
            check.add(loc, f"a score takes {MIN_LEVELS} to {MAX_LEVELS} levels, got "
                      f"{len(criteria)}", "too_long" if len(criteria) > MAX_LEVELS
                      else "too_short")
        return [Option(str(i), check.text(level, loc + (i,), nullable=False))
                for i, level in enumerate(criteria)]

    def systemone_legend(self, raw: dict):
        return raw.get("criteria")  # echoed unchanged

    def systemone_answer(self, q, a, legend):
        return {"type": SCORE, "score": a.score,
                "legend": {str(j): lvl for j, lvl in enumerate(legend)},
                "probabilities": {str(j): p for j, p in enumerate(a.probabilities)},
                "confidence": a.confidence}

    def decisions_options(self, raw, loc, check, max_choices):
        loc = loc + ("levels",)
        labels, options = [], []
        for j, entry in enumerate(entries(raw.get("levels"), loc, check, MIN_LEVELS, MAX_LEVELS,
                                          "levels")):
            label, description = entry.get("label"), entry.get("description")
            unknown_fields(entry, {"label", "description"}, loc + (j,), check)
            if not isinstance(label, str):
                check.add(loc + (j, "label"), "a level needs label as a string", "invalid_type")
                continue
            described(entry, loc + (j,), check)
            labels.append(label)
            options.append(Option(str(j), label if description is None
                                  else f"{label}: {description}"))
        return tuple(labels), options

    def decisions_answer(self, name, values, a):
        return {"type": "score", "name": name, "score": a.score, "confidence": a.confidence,
                "probabilities": [{"value": j, "label": label, "probability": p}
                                  for j, (label, p) in enumerate(zip(values, a.probabilities))]}


KIND = Score()
