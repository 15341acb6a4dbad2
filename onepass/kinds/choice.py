"""The choice kind: one of up to 255 named options, listed in one or more rotated orders.

Owns: the choice prompt lines (options in K rotated orders, in one prompt with labels of their
own per copy, or one read each, or one set), its answer and confidence, its option cap (its
single-token labels, one per option) and its adapters (option keys on /v1/systemone, typed
values on /v1/decisions: `true` and `"true"` are different choices). It is the registry's NAMED
kind and its set reader (the start-up probes of full precision and of option sets).
"""
from __future__ import annotations

from ..decision_model import Answer, Option
from ..errors import InvalidRequest, Problem
from .adapters import Decisions, SystemOne, described, entries, is_criteria, unknown_fields
from .base import (MAX_OPTIONS, MIN_OPTIONS, NAMED, Kind, Limit, Listing, OwnLabels,
                   listed_lines)
from .schema_parts import NAME, PROBABILITY, TEXT_OR_NULL, const, obj


def confidence(probs) -> float:
    """TypeSafe's formula: (p_max - 1/n) / (1 - 1/n), 1 for a single option."""
    n = len(probs)
    if n == 1:
        return 1.0
    return min(1.0, max(0.0, (max(probs) - 1 / n) / (1 - 1 / n)))


def _text(option: Option) -> str:
    return option.key if option.text is None else f"{option.key}: {option.text}"


def _rotation(n: int, j: int, k: int) -> tuple[int, ...]:
    """Copy j lists the options starting at option j*n/k, so each order differs most."""
    start = j * n // k
    return tuple((start + i) % n for i in range(n))


def _listing(q, lists, order: int | None):
    lines = listed_lines(q, lists, "Options:", "the label of the best option", _text)
    pairs = tuple(p for labels, _ in lists for p in labels)
    option_of_label = tuple(o for _, rot in lists for o in rot)
    order_of_label = tuple((order if order is not None else j) for j, (_, rot) in enumerate(lists)
                           for _ in rot)
    return Listing(lines, pairs, option_of_label, order_of_label)


class OnSystemOne(SystemOne):
    type = "choice"
    warmup_short = ("team", {"type": "choice", "criteria": {"billing": None, "tech": None}})

    def options(self, criteria, loc, check, max_options, instructions=None):
        if not is_criteria(criteria, dict, loc, check,
                           "choice criteria must be an object of option -> description"):
            return []
        if len(criteria) < MIN_OPTIONS:
            check.add(loc, f"a choice needs at least two options, got {len(criteria)}",
                      "too_short")
        elif len(criteria) > max_options:
            check.add(loc, f"this server accepts at most {max_options} options per choice, "
                      f"got {len(criteria)}", "too_long")
        return [Option(key, check.text(desc, loc + (key,))) for key, desc in criteria.items()]

    def answer(self, q, a, legend):
        return {"type": self.type, "choice": q.options[a.best].key,
                "probabilities": {o.key: p for o, p in zip(q.options, a.probabilities)},
                "confidence": a.confidence}

    def warmup_body(self, state, image_url=""):
        return {"state": state, "questions": {"team": {
            "type": "choice", "instructions": "Which team should handle it?",
            "criteria": {"billing": "Payments and refunds", "tech": None,
                         "sales": "Pricing and upgrades"}}}}

    def question_schema(self):
        return obj({"type": const("choice"), "instructions": TEXT_OR_NULL,
                    "criteria": {"type": "object", "minProperties": MIN_OPTIONS,
                                 "maxProperties": MAX_OPTIONS,
                                 "additionalProperties": TEXT_OR_NULL,
                                 "description": "option name -> description (null: by name)"}},
                   ["type", "criteria"])

    def answer_schema(self):
        return obj({"type": const("choice"), "choice": {"type": "string"},
                    "probabilities": {"type": "object", "additionalProperties": PROBABILITY},
                    "confidence": PROBABILITY},
                   ["type", "choice", "probabilities", "confidence"], extra="x_")


class OnDecisions(Decisions):
    type = "choice"
    keys = frozenset({"type", "name", "instructions", "choices"})
    warmup = {"type": "choice", "instructions": "Refund approved?",
              "choices": [{"value": True}, {"value": False}]}
    warmup_image = {"type": "choice", "instructions": "Its colour?",
                    "choices": [{"value": "red"}, {"value": "blue"}]}

    def options(self, raw, loc, check, max_choices):
        loc = loc + ("choices",)
        values, options, seen = [], [], set()
        for j, entry in enumerate(entries(raw.get("choices"), loc, check, MIN_OPTIONS,
                                          min(MAX_OPTIONS, max_choices), "choices")):
            value = entry.get("value")
            unknown_fields(entry, {"value", "description"}, loc + (j,), check)
            if not isinstance(value, (str, bool)):
                check.add(loc + (j, "value"), "a choice value must be a string or a boolean",
                          "invalid_type")
                continue
            typed = (type(value), value)  # "true" and true are different choices
            if typed in seen:
                check.add(loc + (j, "value"), f"duplicate choice value {value!r}",
                          "duplicate_value")
            seen.add(typed)
            described(entry, loc + (j,), check)
            key = value if isinstance(value, str) else ("true" if value else "false")
            values.append(value)
            options.append(Option(key, entry.get("description")))
        return tuple(values), options

    def answer(self, name, values, a):
        return {"type": "choice", "name": name, "choice": values[a.best],
                "confidence": a.confidence,
                "probabilities": [{"value": v, "probability": p}
                                  for v, p in zip(values, a.probabilities)]}

    def question_schema(self, common):
        value = obj({"value": {"type": ["string", "boolean"]},
                     "description": {"type": ["string", "null"]}}, ["value"])
        return obj({"type": const("choice"), **common, "choices": {
            "type": "array", "minItems": MIN_OPTIONS, "maxItems": MAX_OPTIONS, "uniqueItems": True,
            "items": value}}, ["type", "instructions", "choices"])

    def answer_schema(self):
        value = {"type": ["string", "boolean"]}
        return obj({"type": const("choice"), "name": NAME, "choice": value,
                    "confidence": PROBABILITY, "probabilities": {"type": "array", "items": obj(
                        {"value": value, "probability": PROBABILITY},
                        ["value", "probability"])}},
                   ["type", "name", "choice", "confidence", "probabilities"], extra="x_")


class Choice(Kind):
    name = "choice"
    systemone, decisions = OnSystemOne(), OnDecisions()
    own_labels = OwnLabels(2, all_single=False, prior=True)  # the single-token ones kept
    options_are, as_set = NAMED, True

    def listings(self, q, labels, opts):
        n, usable = len(q.options), labels.choice
        if n > len(usable):  # the adapter checks this too; keep layout safe
            raise InvalidRequest([Problem(("questions",), "this server accepts at most "
                                          f"{len(usable)} options per choice", "too_long")])
        if opts.option_sets:  # labels bound by key: any listing of the options reads the same
            canonical = tuple(sorted(range(n), key=lambda i: (q.options[i].key,
                                                           q.options[i].text or "")))
            return [_listing(q, [(usable[:n], canonical)], 0)]
        k = min(opts.orders, n)  # n orders: each option once in each position
        rotations = [_rotation(n, j, k) for j in range(k)]
        directions = [rotations]
        if opts.both_directions:  # a reversal already read is not read twice (two options)
            back = [r[::-1] for r in rotations if r[::-1] not in rotations]
            directions += [back] if back else []
        if opts.orders_as_reads:
            flat = [order for orders in directions for order in orders]
            return [_listing(q, [(usable[:n], order)], i) for i, order in enumerate(flat)]
        copies = min(k, len(usable) // n)  # each copy needs labels of its own
        return [_listing(q, [(usable[j * n:(j + 1) * n], orders[j]) for j in range(copies)],
                      None) for orders in directions]

    def answer(self, probs, question):
        """The most probable option; a tie goes to the smallest option key, never to the
        option listed first (that would make the answer follow the request's order)."""
        top = max(probs)
        pick = min((o.key, i) for i, (o, p) in enumerate(zip(question.options, probs))
                   if p == top)[1]
        return Answer(self.name, tuple(probs), confidence(probs), pick)

    def limit(self, settings, facts):
        """As many options as it has single-token labels, at most the contracts' cap."""
        return Limit(options=min(MAX_OPTIONS, len(getattr(facts.labels, self.name))))

    def limits_text(self, settings):
        return f"{MIN_OPTIONS} to {MAX_OPTIONS} options per choice"


KIND = Choice()
