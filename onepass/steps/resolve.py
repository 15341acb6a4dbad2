"""Resolve: a checked Request against the profile and the engine's facts, once, into the Decision
every later step reads.

Owns: the concrete model name (404 for another), the request's kwargs.layout and
kwargs.calibration over the profile's (422 for a bad value, 400 for option sets without the
plugin), the attention mode (400 for two-way without the plugin) and kwargs.reasoning (the
profile's default mode otherwise).
Never: reads images (images/), lays out prompts (prompt/) or calls vLLM.
In: the record with its Request (api/); the profile and the engine facts.
Out: the record with its Decision.
"""
from __future__ import annotations

from dataclasses import replace

from ..api.models import unknown as unknown_model
from ..decision_model import TWO_WAY, Decision
from ..errors import BadRequest, InvalidRequest, ModelNotFound, Problem
from ..profile import ConfigError, check_calibration, check_layout
from ..reasoning import Ask
from .record import Record

MAX_SAID = 400  # characters of a refused override's message (it quotes the values sent)


def resolve(r: Record) -> Record:
    """The resolve step: the record's Decision."""
    return replace(r, decision=decision(r.request, r.serving.profile, r.serving.facts))


def decision(request, profile, facts) -> Decision:
    """The Decision: the concrete model (404), the overrides' values (422), the mode (400),
    in that order; the layout and calibration that apply (the request's, else the profile's)
    are fixed here for every step."""
    model = profile.model_name if request.model in profile.names else None
    if model is None:
        raise ModelNotFound(unknown_model(request.model, profile))
    layout, calibration = options(request.overrides, profile, facts)
    return Decision(model=model, state=request.state, questions=request.questions,
                    attention_mode=mode(request.mode, profile, facts),
                    layout=layout or profile.layout,
                    calibration=calibration or profile.calibration,
                    reasoning=reasoning(request, profile))


def reasoning(request, profile) -> Ask | None:
    """The request's kwargs.reasoning, else the profile's default mode; None: no thought."""
    settings = profile.reasoning
    asked = request.reasoning or (Ask(settings.default_mode) if settings else None)
    if asked is not None and asked.mode != "off" and settings is None:
        raise InvalidRequest([Problem(("kwargs", "reasoning", "mode"), "this server's "
                                      "profile has no reasoning settings: only off",
                                      "value_error")])
    return asked


def options(overrides: dict, profile, facts):
    """The profile's prompt techniques and calibration with a request's `kwargs.layout` and
    `kwargs.calibration` on top (same keys and ranges; `temperature` may name some kinds);
    None where the request overrides nothing. A request asking for repetition or several
    orders without naming option_sets gets listings (the profile's option sets yield); one
    asking for option sets without naming repeat or orders gets one of each (the profile's
    yield)."""
    layout = calibration = None
    try:
        if "layout" in overrides:
            asked = dict(overrides["layout"])
            if "option_sets" not in asked and (asked.get("repeat", 1) != 1
                                               or asked.get("orders", 1) != 1):
                asked["option_sets"] = False  # a listing technique asked for: listings
            if asked.get("option_sets") is True:  # a set asked for: the profile's repetition
                asked.setdefault("repeat", 1)  # and orders yield (a set is read once)
                asked.setdefault("orders", 1)
            layout = replace(profile.layout, **asked)
            check_layout(layout, "kwargs.layout")
    except (TypeError, ValueError, ConfigError) as e:
        raise InvalidRequest([Problem(("kwargs", "layout"), _said(e), "value_error")]) \
            from None
    if layout is not None and layout.option_sets and not facts.sets:
        raise BadRequest("option_sets (a choice's options read as a set) is off on this "
                         "server: its vLLM did not pass the start-up probe of set reads (they "
                         "need the onepass engine plugin, on vLLM's V1 model runner; the "
                         "shim's log says why); send the request without it")
    try:
        if "calibration" in overrides:
            given = dict(overrides["calibration"])
            if "fitted" in given:
                raise TypeError("fitted is the profile's record; a request cannot set it")
            base = profile.calibration
            temps = given.pop("temperature", {})
            if not isinstance(temps, dict):
                raise TypeError("temperature must be an object of kind -> T")
            calibration = replace(base, temperature={**base.temperature, **temps}, **given)
            check_calibration(calibration, "kwargs.calibration")
    except (TypeError, ValueError, ConfigError) as e:
        raise InvalidRequest([Problem(("kwargs", "calibration"), _said(e),
                                      "value_error")]) from None
    return layout, calibration


def mode(requested: str | None, profile, facts) -> str:
    chosen = requested or profile.attention_mode
    if chosen == TWO_WAY and not facts.two_way:
        raise BadRequest("two-way (bidirectional) reading is off on this server: its vLLM "
                         "did not pass the start-up probes of two-way reads (they need the "
                         "onepass engine plugin; the shim's log says why); ask for "
                         "attention_mode causal")
    return chosen


def _said(error: Exception) -> str:
    """A refused override's message, cut: it may quote the values as sent, of any size."""
    text = str(error)
    return text if len(text) <= MAX_SAID else text[:MAX_SAID] + " ..."
