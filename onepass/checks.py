"""Request checks both adapters share: the problem collector, text-valued fields, and the options
every decision request may carry (attention mode, kwargs.layout, kwargs.calibration).

Owns: turning a validated request's parts into the internal Decision (finish): every problem at
once as one InvalidRequest, then the mode conflict (400), the model name (404) and the
profile overrides (checked by the server's resolvers).
Never: knows either API's question shapes or renders a response.
"""
from __future__ import annotations

from .decision import MODE_NAMES, Decision, as_text
from .errors import BadRequest, InvalidRequest, ModelNotFound, Problem

OPTION_KEYS = ("layout", "calibration")


class Checker:
    """Collects problems so that one error names every mistake in the body."""

    def __init__(self):
        self.problems: list[Problem] = []

    def add(self, loc, msg, kind):
        self.problems.append(Problem(tuple(loc), msg, kind))

    def text(self, value, loc, *, nullable=True):
        if value is None and nullable:
            return None
        if not isinstance(value, (str, dict, list)):
            self.add(loc, "expected text, an object or an array", "string_type")
            return None
        return as_text(value)  # objects and arrays are read as compact JSON


def requested_modes(body: dict, check: Checker) -> set[str]:
    """The modes named by `attention_mode` at top level and in `kwargs` (empty: neither)."""
    kwargs = body.get("kwargs")
    found = {}
    for loc, holder in ((("attention_mode",), body),
                        (("kwargs", "attention_mode"), kwargs if isinstance(kwargs, dict) else {})):
        if "attention_mode" in holder:
            value = holder["attention_mode"]
            if not isinstance(value, str) or value not in MODE_NAMES:
                check.add(loc, f"attention_mode must be one of {', '.join(MODE_NAMES)}; "
                          f"got {value!r}", "enum")
            else:
                found[loc] = MODE_NAMES[value]
    return set(found.values())


def option_overrides(body: dict, check: Checker) -> dict:
    """`kwargs.layout` / `kwargs.calibration`: this request's overrides of the profile's prompt
    techniques and calibration (their values are checked by the server)."""
    kwargs = body.get("kwargs")
    found = {}
    for key in OPTION_KEYS:
        value = kwargs.get(key) if isinstance(kwargs, dict) else None
        if value is not None and not isinstance(value, dict):
            check.add(("kwargs", key), f"kwargs.{key} must be an object", "dict_type")
        elif value:
            found[key] = value
    return found


def finish(check: Checker, body: dict, *, model, state, questions, resolve_model,
           resolve_mode, resolve_options, collector=None, image_policy=None) -> Decision:
    """The Decision, once the adapter has checked its own fields into `check`; images are
    checked (and links fetched) last, when everything else is in order."""
    modes = requested_modes(body, check)
    overrides = option_overrides(body, check)
    if not questions and not check.problems:  # never a Decision without a question
        check.add(("questions",), "at least one question is needed", "too_short")
    if check.problems:
        raise InvalidRequest(check.problems)
    if len(modes) > 1:
        raise BadRequest("attention_mode and kwargs.attention_mode name different modes "
                         f"({' and '.join(sorted(modes))}); send one")
    concrete = resolve_model(model)
    if concrete is None:
        raise ModelNotFound(f"Unknown model: {model}")
    layout, calibration = resolve_options(overrides)
    mode = resolve_mode(next(iter(modes), None))
    images = collector.resolve(image_policy) if collector else ()
    if check.problems:
        raise InvalidRequest(check.problems)
    return Decision(model=concrete, state=state, questions=tuple(questions), attention_mode=mode,
                    layout=layout, calibration=calibration, images=images)
