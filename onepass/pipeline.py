"""The decision core: a checked Request in, its Decision and Outcome out, one line per step.

Owns: the order of the steps after parse (decide, then answer; onepass.STEPS lists every step
and each line that runs one is marked `# step:`), resolving a Request against the profile once
(model name, attention mode, kwargs.layout, kwargs.calibration and kwargs.reasoning checked into
the Decision), the limits both APIs apply (from the settings, the engine facts and each kind's
limit); then the one path every request takes (parts.answer).
Never: touches HTTP or bodies (server.py, body.py, edge/), knows an API's field names (api/) or
a kind (kinds/), builds prompts or computes probabilities (prompt/, readout.py).
In: a Request (api/). Out: (Decision, Outcome) for the adapter to render.
"""
from __future__ import annotations

from dataclasses import replace

from . import kinds, parts
from .api import Limits
from .api.models import unknown as unknown_model
from .decision import CAUSAL, TWO_WAY, Decision, Outcome
from .errors import BadRequest, InvalidRequest, ModelNotFound, Problem
from .images import inputs
from .kinds.base import MAX_OPTIONS, Job
from .reader import Reader
from .reasoning import Ask
from .profile import ConfigError, check_calibration, check_layout

MAX_SAID = 400  # characters of a refused override's message (it quotes the values sent)


class Pipeline:
    """The decision path for either API, with the facts start-up learnt about the engine."""

    def __init__(self, settings, engine, image_policy, facts):
        self.settings, self.profile, self.engine = settings, settings.model, engine
        self.image_policy, self.facts = image_policy, facts
        self.reader = Reader(self.profile, facts, engine)
        vision = self.profile.vision
        self.limits = Limits(max_choice_options=min(MAX_OPTIONS, len(facts.labels.choice)),
                             max_questions=settings.max_questions,
                             kinds={k.name: k.limit(settings, facts)
                                    for k in kinds.KINDS.values()},
                             max_images=vision.max_images if vision else 0,
                             model=self.profile.model_name)

    def decide(self, request) -> tuple[Decision, Outcome]:
        """A checked request through every step after parse, in the order STEPS lists them."""
        decision = self.resolve(request)  # step: resolve
        decision = replace(decision, images=inputs.resolve(  # step: images
            request.images, self.image_policy))
        with self.engine.request():  # its bodies in flight to vLLM capped, as the server's are
            return decision, self.answer(decision)

    # -- resolve: the request against the profile, once -----------------------------------
    def resolve(self, request) -> Decision:
        """The Decision: the concrete model (404), the overrides' values (422), the mode (400),
        in that order; the layout and calibration that apply (the request's, else the
        profile's) are fixed here for every step."""
        model = self.resolve_model(request.model)
        if model is None:
            raise ModelNotFound(unknown_model(request.model, self.profile))
        layout, calibration = self.resolve_options(request.overrides)
        return Decision(model=model, state=request.state, questions=request.questions,
                        attention_mode=self.resolve_mode(request.mode),
                        layout=layout or self.profile.layout,
                        calibration=calibration or self.profile.calibration,
                        reasoning=self.resolve_reasoning(request))

    def resolve_reasoning(self, request) -> Ask | None:
        """The request's kwargs.reasoning, else the profile's default mode; None: no thought."""
        settings = self.profile.reasoning
        asked = request.reasoning or (Ask(settings.default_mode) if settings else None)
        if asked is not None and asked.mode != "off" and settings is None:
            raise InvalidRequest([Problem(("kwargs", "reasoning", "mode"), "this server's "
                                          "profile has no reasoning settings: only off",
                                          "value_error")])
        return asked

    def resolve_model(self, name: str) -> str | None:
        if name in self.profile.names:
            return self.profile.model_name
        return None

    def resolve_options(self, overrides: dict):
        """The profile's prompt techniques and calibration with a request's `kwargs.layout` and
        `kwargs.calibration` on top (same keys and ranges; `temperature` may name some kinds);
        None where the request overrides nothing. A request asking for repetition or several
        orders without naming option_sets gets listings (the profile's option sets yield)."""
        layout = calibration = None
        try:
            if "layout" in overrides:
                asked = dict(overrides["layout"])
                if "option_sets" not in asked and (asked.get("repeat", 1) != 1
                                                   or asked.get("orders", 1) != 1):
                    asked["option_sets"] = False  # a listing technique asked for: listings
                layout = replace(self.profile.layout, **asked)
                check_layout(layout, "kwargs.layout")
        except (TypeError, ValueError, ConfigError) as e:
            raise InvalidRequest([Problem(("kwargs", "layout"), _said(e), "value_error")]) \
                from None
        if layout is not None and layout.option_sets and not self.facts.sets:
            raise BadRequest("option_sets (a choice's options read as a set) needs the onepass "
                             "engine plugin, and this server's vLLM does not run it; send the "
                             "request without it, or start vLLM with the plugin (serve.sh "
                             "does by default)")
        try:
            if "calibration" in overrides:
                given = dict(overrides["calibration"])
                if "fitted" in given:
                    raise TypeError("fitted is the profile's record; a request cannot set it")
                base = self.profile.calibration
                temps = given.pop("temperature", {})
                if not isinstance(temps, dict):
                    raise TypeError("temperature must be an object of kind -> T")
                calibration = replace(base, temperature={**base.temperature, **temps}, **given)
                check_calibration(calibration, "kwargs.calibration")
        except (TypeError, ValueError, ConfigError) as e:
            raise InvalidRequest([Problem(("kwargs", "calibration"), _said(e),
                                          "value_error")]) from None
        return layout, calibration

    def resolve_mode(self, requested: str | None) -> str:
        mode = requested or self.profile.attention_mode
        if mode == TWO_WAY and not self.facts.two_way:
            raise BadRequest("two-way (bidirectional) reading needs the onepass engine plugin, "
                             "and this server's vLLM does not run it; ask for attention_mode "
                             "causal, or start vLLM with the plugin (serve.sh does by default)")
        return mode

    def answer(self, decision: Decision) -> Outcome:
        """Every question answered, on the one path every request takes (parts.answer)."""
        return parts.answer(decision, Job(decision.images, self.profile, self.settings,
                                          self.facts.labels), self.reader, self.settings.max_reads)


def _said(error: Exception) -> str:
    """A refused override's message, cut: it may quote the values as sent, of any size."""
    text = str(error)
    return text if len(text) <= MAX_SAID else text[:MAX_SAID] + " ..."


def offline(api, body, *, layout=None, image_policy=None, max_questions: int = 400):
    """(Decision, meta) for a body without a server or a profile (benches that call vLLM
    directly): the model as named, the mode asked for (else causal), `layout` for every read;
    images under image_policy (None: text only)."""
    request = api.parse(body, None, Limits(max_choice_options=MAX_OPTIONS,
                                           max_questions=max_questions))
    return Decision(model=request.model, state=request.state, questions=request.questions,
                    attention_mode=request.mode or CAUSAL, layout=layout,
                    images=inputs.resolve(request.images, image_policy)), request.meta
