"""Request checks both adapters share: the problem collector, text-valued fields, the limits
both APIs apply, and the options every decision request may carry (attention mode, kwargs.layout,
kwargs.calibration).

Owns: turning a checked body's parts into a Request (request): every problem at once as one
InvalidRequest, then the mode conflict (400). The model name, the overrides' values and the
images are the pipeline's (they need the profile, or I/O).
Never: knows either API's question shapes, resolves anything or renders a response.
"""
from __future__ import annotations

from ..decision_model import MODE_NAMES, as_text
from .. import reasoning
from ..errors import BadRequest, InvalidRequest, Problem
from . import Request

OPTION_KEYS = ("layout", "calibration")
# request-wide fields both APIs share, read by request(): each adapter hands it a new dict of
# them built in place, not the body (a call given the body would carry the request another stop)
WIDE = ("attention_mode", "kwargs")


MAX_PROBLEMS = 100  # problems listed in one refusal; a last entry counts the rest


class Checker:
    """Collects problems so that one error names the mistakes in the body: each once (a
    request-wide field is checked once per question), the first MAX_PROBLEMS listed, the rest
    counted. Linear in the problems: a set finds the repeats, not a scan of the list."""

    def __init__(self):
        self.problems: list[Problem] = []
        self.found = 0  # distinct problems, listed or not
        self._seen: set[Problem] = set()

    def add(self, loc, msg, kind):
        problem = Problem(tuple(loc), msg, kind)
        if problem in self._seen:
            return
        self._seen.add(problem)
        self.found += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)

    def error(self) -> InvalidRequest:
        """Every listed problem, then one saying how many more were found."""
        more = self.found - len(self.problems)
        tail = [Problem((), f"{more} more problems in this request are not listed (at most "
                        f"{MAX_PROBLEMS} are)", "too_many_problems")] if more else []
        return InvalidRequest(self.problems + tail)

    def text(self, value, loc, *, nullable=True):
        if value is None and nullable:
            return None
        if not isinstance(value, (str, dict, list)):
            self.add(loc, "expected text, an object or an array", "string_type")
            return None
        return as_text(value)  # objects and arrays are read as compact JSON


def requested_modes(wide: dict, check: Checker) -> set[str]:
    """The modes named by `attention_mode` at top level and in `kwargs` (empty: neither)."""
    kwargs = wide.get("kwargs")
    found = {}
    for loc, holder in ((("attention_mode",), wide),
                        (("kwargs", "attention_mode"), kwargs if isinstance(kwargs, dict) else {})):
        if "attention_mode" in holder:
            value = holder["attention_mode"]
            if not isinstance(value, str) or value not in MODE_NAMES:
                check.add(loc, f"attention_mode must be one of {', '.join(MODE_NAMES)}; "
                          f"got {value!r}", "enum")
            else:
                found[loc] = MODE_NAMES[value]
    return set(found.values())


def option_overrides(wide: dict, check: Checker) -> dict:
    """`kwargs.layout` / `kwargs.calibration`: this request's overrides of the profile's prompt
    techniques and calibration (their values are checked by the pipeline)."""
    kwargs = wide.get("kwargs")
    found = {}
    for key in OPTION_KEYS:
        value = kwargs.get(key) if isinstance(kwargs, dict) else None
        if value is not None and not isinstance(value, dict):
            check.add(("kwargs", key), f"kwargs.{key} must be an object", "dict_type")
        elif value:
            found[key] = value
    return found


def request(check: Checker, wide: dict, *, model, state, questions, images=(),
            meta=None) -> Request:
    """The Request, once the adapter has checked its own fields into `check`; `wide`: the
    body's request-wide fields (WIDE) as sent."""
    modes = requested_modes(wide, check)
    overrides = option_overrides(wide, check)
    kwargs = wide.get("kwargs")
    asked = reasoning.ask(kwargs.get("reasoning") if isinstance(kwargs, dict) else None,
                          ("kwargs", "reasoning"), check)
    if not questions and not check.found:  # never a Decision without a question
        check.add(("questions",), "at least one question is needed", "too_short")
    if check.found:
        raise check.error()
    if len(modes) > 1:
        raise BadRequest("attention_mode and kwargs.attention_mode name different modes "
                         f"({' and '.join(sorted(modes))}); send one")
    return Request(model=model, state=state, questions=tuple(questions),
                   mode=next(iter(modes), None), overrides=overrides, images=tuple(images),
                   meta=meta, reasoning=asked)
