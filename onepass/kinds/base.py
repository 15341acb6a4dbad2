"""What a question kind is: the one place that knows a kind's labels, prompt lines, readout,
warm-up question and renderings on both APIs.

Owns: the Kind base class (every hook a kind must or may provide) and the helpers several kinds
share (option listings, the criteria and entries checks).
Never: imports another kind, or the stages that call it (layout, readout, the adapters): they
ask the registry (kinds/__init__.py) for a kind by name.
"""
from __future__ import annotations

from ..decision import Answer, Option, Question


class Kind:
    """One question kind. Subclasses set the names and override the hooks that differ."""
    name: str  # the internal name (Question.kind)
    systemone: str  # its `type` on /v1/systemone
    decisions: str | None  # its `type` on /v1/decisions (None: that API has no such type)
    reads: bool = True  # answered by label reads (the shared layout, readout, temperature and
    # warm-up); False for a kind with its own path (box: a generation)
    systemone_keys: frozenset = frozenset({"type", "instructions", "criteria"})
    label_key: str | None = None  # the profile's label list for it (serve_config.json)
    labels_needed: str = ""  # how many labels the profile must list, as messages say it
    all_labels_single: bool = True  # every label one distinct token (else the single ones kept)
    min_labels: int = 2  # the profile must list at least this many
    prior: bool = False  # calibration.label_prior may hold a fitted position prior for it
    rereads: bool = True  # an uncertain answer is read a second time (calibration.reread_below)
    decisions_keys: frozenset = frozenset({"type", "name", "instructions"})
    warmup_short: tuple = ()  # (question id, System One question) in the mixed warm-up body
    warmup_decisions: dict | None = None  # its /v1/decisions warm-up question

    def labels_ok(self, labels) -> bool:
        """The profile lists enough labels for this kind."""
        raise NotImplementedError

    def warmup_body(self, state: str) -> dict:
        """A System One body (state and questions) asking this kind alone, read before ready."""
        raise NotImplementedError

    def listings(self, q: Question, labels, opts) -> list:
        """(lines, label pairs, option_of_label, order_of_label) per read of the question."""
        raise NotImplementedError

    def calibrate(self, probs: list[float], calibration) -> list[float]:
        """The kind's own step after the shared readout (none by default)."""
        return probs

    def answer(self, probs: list[float], question) -> Answer:
        """The answer from the calibrated probabilities of `question`'s options (in its order)."""
        raise NotImplementedError

    # -- /v1/systemone -------------------------------------------------------------------
    def systemone_options(self, criteria, loc, check, max_options: int,
                          instructions=None) -> list[Option]:
        """The options from a System One question's `criteria`, every problem into `check`."""
        raise NotImplementedError

    def systemone_extras(self, q: dict, loc, check, kwargs) -> dict:
        """Question fields beyond instructions and options, from the question as sent and the
        request's `kwargs` (none by default)."""
        return {}

    def systemone_legend(self, raw: dict):
        """What the answer echoes of the question as sent (None: nothing)."""
        return None

    def systemone_answer(self, q: Question, a: Answer, legend) -> dict:
        raise NotImplementedError

    # -- /v1/decisions -------------------------------------------------------------------
    def decisions_options(self, raw: dict, loc, check, max_choices: int):
        """(typed values kept for the answer, options)."""
        raise NotImplementedError

    def decisions_answer(self, name, values, a: Answer) -> dict:
        raise NotImplementedError


def best(probs) -> int:
    return max(range(len(probs)), key=probs.__getitem__)


def listed_lines(q: Question, lists, heading: str, what: str, text_of) -> list[str]:
    """The question, then each listing of the options (its own labels, its own order)."""
    lines = [f"Question: {q.instructions}"] if q.instructions is not None else []
    for j, (pairs, order) in enumerate(lists):
        lines.append(heading if j == 0 else "The same options again, in another order:")
        for (label, _), o in zip(pairs, order):
            lines.append(f"{label}. {text_of(q.options[o])}")
    lines.append(f"Reply with {what} only.")
    return lines


def is_criteria(criteria, kind, loc, check, what: str) -> bool:
    """Required System One criteria of the right JSON type; otherwise one problem, and False."""
    if isinstance(criteria, kind):
        return True
    if criteria is None:
        check.add(loc, "Field required", "missing")
    else:
        check.add(loc, what, "dict_type" if kind is dict else "list_type")
    return False


def entries(raw, loc, check, low: int, high: int, what: str) -> list:
    """A /v1/decisions array of low..high objects (choices, levels); [] with a problem else."""
    if not isinstance(raw, list):
        check.add(loc, f"{what} must be an array", "invalid_type" if raw is not None else "missing")
        return []
    if not low <= len(raw) <= high:
        check.add(loc, f"{what} must contain between {low} and {high} items.", "array_length")
        return []
    good = True
    for j, entry in enumerate(raw):
        if not isinstance(entry, dict):
            check.add(loc + (j,), f"each of {what} must be an object", "invalid_type")
            good = False
    return raw if good else []


def unknown_fields(entry: dict, allowed: set, loc, check) -> None:
    for extra in sorted(set(entry) - allowed):
        check.add(loc + (extra,), f"Unknown parameter: '{extra}'.", "unknown_parameter")


def described(entry: dict, loc, check) -> None:
    """A /v1/decisions entry's optional description must be a string."""
    description = entry.get("description")
    if description is not None and not isinstance(description, str):
        check.add(loc + ("description",), "description must be a string", "invalid_type")
