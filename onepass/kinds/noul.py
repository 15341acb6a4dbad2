"""The noul (yes/no) kind: two fixed labels, P(true) as its answer, the yes/no floor.

Owns: the noul prompt lines, its answer (its payload: P(true)), the floor (its calibration
setting noul_floor) and its adapters (`noul` on /v1/systemone, `predicate` on /v1/decisions:
fields, renderings, schemas, warm-up). It is the registry's YES_NO kind (the two-way probe, a
box's `present` read).
"""
from __future__ import annotations

from ..decision_model import Answer, Option
from .adapters import Decisions, SystemOne
from .base import YES_NO, Kind, Listing, OwnLabels, Tuning, best, finite
from .schema_parts import NAME, PROBABILITY, TEXT_OR_NULL, const, obj

SIDES = ("true", "false")


class OnSystemOne(SystemOne):
    type = "noul"
    warmup_short = ("refund", {"type": "noul", "criteria": {"true": "asks for a refund"}})
    warmup_image = ("red", {"type": "noul", "instructions": "Is [image 1] red?"})

    def options(self, criteria, loc, check, max_options, instructions=None):
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

    def answer(self, q, a, legend):
        return {"type": self.type, "noul": a.payload}

    def warmup_body(self, state, image_url=""):
        return {"state": state, "questions": {"refund": {
            "type": "noul", "instructions": "Is the customer asking for money back?"}}}

    def question_schema(self):
        return obj({"type": const("noul"), "instructions": TEXT_OR_NULL,
                    "criteria": {"type": ["object", "null"], "additionalProperties": False,
                                 "properties": {"true": TEXT_OR_NULL, "false": TEXT_OR_NULL}}},
                   ["type"], description="yes/no; needs instructions or a criteria side")

    def answer_schema(self):
        return obj({"type": const("noul"), "noul": PROBABILITY}, ["type", "noul"], extra="x_")


class OnDecisions(Decisions):
    type = "predicate"
    warmup = {"type": "predicate", "name": "refund", "instructions": "A refund is asked for."}

    def options(self, raw, loc, check, max_choices):
        return (True, False), [Option(side, None) for side in SIDES]

    def answer(self, name, values, a):
        return {"type": "predicate", "name": name, "probability": a.payload}

    def answer_schema(self):
        return obj({"type": const("predicate"), "name": NAME, "probability": PROBABILITY},
                   ["type", "name", "probability"], extra="x_")


def _floor_ok(floor) -> bool:
    return finite(floor) and (floor == 0 or 0.5 < floor < 1)


class Noul(Kind):
    name = "noul"
    systemone, decisions = OnSystemOne(), OnDecisions()
    own_labels, options_are = OwnLabels(2, 2, prior=True), YES_NO
    rereads = False  # a yes/no is never read again
    # the floor: 0 (off), or in (0.5, 1): the chosen side is reported at no less than it
    calibration = {"noul_floor": Tuning(0.0, _floor_ok,
                                        "noul_floor must be 0 (off) or in (0.5, 1)")}

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
        """P(true) is its payload (what both APIs render); confidence is unused."""
        return Answer(self.name, tuple(probs), 1.0, best(probs), probs[0])


KIND = Noul()
