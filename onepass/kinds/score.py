"""The score kind: 2 to 10 ordered levels, the expected level as its answer.

Owns: the score prompt lines (levels lowest first), its answer (its payload: the expected level)
and confidence, and its adapters (a legend echoing the levels as sent on /v1/systemone,
labelled levels on /v1/decisions). It is the registry's LEVELS kind (a box's edge reads).
"""
from __future__ import annotations

import math

from ..decision_model import Answer, Option
from .adapters import Decisions, SystemOne, described, entries, is_criteria, unknown_fields
from .base import LEVELS, MAX_LEVELS, MIN_LEVELS, Kind, Listing, OwnLabels, best, listed_lines
from .schema_parts import COUNT, NAME, PROBABILITY, TEXT, TEXT_OR_NULL, const, obj


EXPECTED = {"type": "number", "minimum": 0, "maximum": MAX_LEVELS - 1}  # the expected level


def confidence(probs) -> float:
    """1 - expected distance from the most likely level, over the uniform spread D."""
    n = len(probs)
    if n == 1:
        return 1.0
    mode = max(range(n), key=probs.__getitem__)
    spread = math.fsum(abs(i - (n - 1) / 2) for i in range(n)) / n
    distance = math.fsum(p * abs(i - mode) for i, p in enumerate(probs))
    return min(1.0, max(0.0, 1 - distance / spread))


class OnSystemOne(SystemOne):
    type = "score"
    warmup_short = ("anger", {"type": "score", "criteria": ["Calm", "Annoyed", "Furious"]})

    def options(self, criteria, loc, check, max_options, instructions=None):
        if not is_criteria(criteria, list, loc, check,
                           "score criteria must be an ordered array of levels, lowest first"):
            return []
        if not MIN_LEVELS <= len(criteria) <= MAX_LEVELS:
            check.add(loc, f"a score takes {MIN_LEVELS} to {MAX_LEVELS} levels, got "
                      f"{len(criteria)}", "too_long" if len(criteria) > MAX_LEVELS
                      else "too_short")
        return [Option(str(i), check.text(level, loc + (i,), nullable=False))
                for i, level in enumerate(criteria)]

    def legend(self, raw: dict):
        return raw.get("criteria")  # echoed unchanged

    def answer(self, q, a, legend):
        return {"type": self.type, "score": a.payload,
                "legend": {str(j): lvl for j, lvl in enumerate(legend)},
                "probabilities": {str(j): p for j, p in enumerate(a.probabilities)},
                "confidence": a.confidence}

    def warmup_body(self, state, image_url=""):
        return {"state": {"ticket": state, "plan": "pro"}, "questions": {"anger": {
            "type": "score", "instructions": "How angry is the customer?",
            "criteria": ["Calm", "Annoyed", "Furious"]}}}

    def question_schema(self):
        return obj({"type": const("score"), "instructions": TEXT_OR_NULL,
                    "criteria": {"type": "array", "minItems": MIN_LEVELS,
                                 "maxItems": MAX_LEVELS, "items": TEXT,
                                 "description": "level descriptions, level 0 first"}},
                   ["type", "criteria"])

    def answer_schema(self):
        return obj({"type": const("score"), "score": EXPECTED,
                    "legend": {"type": "object", "additionalProperties": TEXT},
                    "probabilities": {"type": "object", "additionalProperties": PROBABILITY},
                    "confidence": PROBABILITY},
                   ["type", "score", "legend", "probabilities", "confidence"], extra="x_")


class OnDecisions(Decisions):
    type = "score"
    keys = frozenset({"type", "name", "instructions", "levels"})
    warmup = {"type": "score", "instructions": "How angry?",
              "levels": [{"label": "calm"}, {"label": "furious"}]}

    def options(self, raw, loc, check, max_choices):
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

    def answer(self, name, values, a):
        return {"type": "score", "name": name, "score": a.payload, "confidence": a.confidence,
                "probabilities": [{"value": j, "label": label, "probability": p}
                                  for j, (label, p) in enumerate(zip(values, a.probabilities))]}

    def question_schema(self, common):
        level = obj({"label": {"type": "string"}, "description": {"type": ["string", "null"]}},
                    ["label"])
        return obj({"type": const("score"), **common, "levels": {
            "type": "array", "minItems": MIN_LEVELS, "maxItems": MAX_LEVELS, "items": level}},
            ["type", "instructions", "levels"])

    def answer_schema(self):
        return obj({"type": const("score"), "name": NAME, "score": EXPECTED,
                    "confidence": PROBABILITY, "probabilities": {"type": "array", "items": obj(
                        {"value": COUNT, "label": {"type": "string"}, "probability": PROBABILITY},
                        ["value", "label", "probability"])}},
                   ["type", "name", "score", "confidence", "probabilities"], extra="x_")


class Score(Kind):
    name = "score"
    systemone, decisions = OnSystemOne(), OnDecisions()
    own_labels, options_are = OwnLabels(MAX_LEVELS), LEVELS  # a label for each level there is

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
        return Answer(self.name, tuple(probs), confidence(probs), best(probs), expected)

    def limits_text(self, settings):
        return f"{MIN_LEVELS} to {MAX_LEVELS} levels per score"


KIND = Score()
