"""The noul (yes/no) kind: two fixed labels, P(true) as its answer, the yes/no floor.

Owns: the noul prompt lines, its answer, the floor (calibration.noul_floor) and its renderings
(`noul` on /v1/systemone, `predicate` on /v1/decisions).
"""
from __future__ import annotations

from ..decision import NOUL, Answer, Option
from .base import Kind, Listing, best

SIDES = ("true", "false")


class Noul(Kind):
    name, systemone, decisions = NOUL, "noul", "predicate"
    label_key, labels_needed = "noul_labels", "2"
    prior, rereads = True, False  # a yes/no is never read again
    warmup_short = ("refund", {"type": "noul", "criteria": {"true": "asks for a refund"}})
    warmup_decisions = {"type": "predicate", "name": "refund",
                        "instructions": "A refund is asked for."}

    def labels_ok(self, labels) -> bool:
        return len(labels) == 2

    def warmup_body(self, state: str, image_url: str = "") -> dict:
        return {"state": state, "questions": {"refund": {
            "type": "noul", "instructions": "Is the customer asking for money back?"}}}

    def listings(self, q, labels, opts):
        pairs = labels.noul
        (yes, _), (no, _) = pairs
        true_side, false_side = q.options
        lines = [f"Question: {q.instructions or 'Does the record meet the criteria below?'}"]
        if true_side.text is not None:
            lines.append(f"{yes} means: {true_side.text}")
        if false_side.text is not None:
            lines.append(f"{no} means: {false_side.text}")
        lines.append(f"Reply with {yes} or {no} only.")
        return [Listing(lines, pairs, (0, 1), (0, 0))]

    def calibrate(self, probs, calibration):
        """The chosen side is reported at no less than the floor; the choice never changes."""
        floor = calibration.noul_floor
        if not floor:
            return probs
        yes = max(probs[0], floor) if probs[0] >= 0.5 else min(probs[0], 1 - floor)
        return [yes, 1 - yes]

    def answer(self, probs, question):
        return Answer(self.name, tuple(probs), 1.0, probs[0], best(probs))

    def systemone_options(self, criteria, loc, check, max_options, instructions=None):
        if criteria is None:
            options = [Option(side, None) for side in SIDES]
        elif not isinstance(criteria, dict):
            check.add(loc, "noul criteria must be null or an object with \"true\"/\"false\"",
                      "dict_type")
            options = []
        else:
            for extra in sorted(set(criteria) - set(SIDES)):
                check.add(loc + (extra,), "noul criteria take only the keys \"true\" and \"false\"",
                          "extra_forbidden")
            options = [Option(side, check.text(criteria.get(side), loc + (side,)))
                       for side in SIDES]
        if instructions is None and all(o.text is None for o in options):
            check.add(loc[:-1], "a noul needs instructions or at least one criteria side",
                      "missing")
        return options

    def systemone_answer(self, q, a, legend):
        return {"type": NOUL, "noul": a.score}

    def decisions_options(self, raw, loc, check, max_choices):
        return (True, False), [Option(side, None) for side in SIDES]

    def decisions_answer(self, name, values, a):
        return {"type": "predicate", "name": name, "probability": a.score}


KIND = Noul()
