"""The decision core: a request's body in, its response document out, through the ten steps of
STEPS, each a function `step(record) -> record` in the module named for it (onepass/steps/).

Owns: the steps and their order (STEPS; the docs' lists and the tests take it from here), when
a request takes its turn at the engine (around the steps that call it: a refused body never
queues), what every request shares (steps/record.py's Serving: the profile, the engine's facts
and calls, the limits both APIs apply) and the engine's cap on one request's bodies in flight.
Never: touches HTTP (edge/), validates an API's fields (api/), knows a kind (kinds/), builds
prompts or computes probabilities: the steps do.
In: the route's adapter, the body and its headers. Out: the response document.
"""
from __future__ import annotations

import contextlib
from dataclasses import replace

from . import kinds
from .api import Limits
from .body import limits as body_limits
from .decision_model import CAUSAL, Decision
from .images import inputs
from .kinds.base import MAX_OPTIONS
from .steps import (fit, generate, images, parse, read, readout, render, reread, resolve,
                    think)
from .steps.engine_calls import EngineCalls
from .steps.record import Record, Serving

BEFORE_ENGINE = (parse.parse, resolve.resolve, images.images)  # checked before any turn
AT_ENGINE = (fit.fit, read.read, readout.readout, reread.reread, think.think,
             generate.generate)  # in the request's turn at the engine
AFTER_ENGINE = (render.render,)
STEPS = BEFORE_ENGINE + AT_ENGINE + AFTER_ENGINE
NAMES = tuple(step.__name__ for step in STEPS)  # "parse", ..., "render"


class Pipeline:
    """The decision path for either API, with the facts start-up learnt about the engine."""

    def __init__(self, settings, engine, image_policy, facts, turn=contextlib.nullcontext):
        self.settings, self.profile, self.engine = settings, settings.model, engine
        self.facts = facts
        self.turn = turn  # a decision's turn at the engine (server.Service.engine_turn)
        vision = self.profile.vision
        self.limits = Limits(max_options=kinds.option_cap(settings, facts),
                             max_questions=settings.max_questions,
                             kinds={k.name: k.limit(settings, facts)
                                    for k in kinds.KINDS.values()},
                             max_images=vision.max_images if vision else 0,
                             model=self.profile.model_name)
        self.body_limits = body_limits.limits(settings)
        self.serving = Serving(self.profile, settings, facts,
                               EngineCalls(self.profile, facts, engine), self.limits,
                               image_policy, self.body_limits)

    def decide(self, adapter, raw: bytes, headers, hold=None) -> dict:
        """A decision request, from its body to its response document. `hold`: the body's hold
        on the body budget (server.claim_body), resized as the body is read."""
        r = Record(self.serving, adapter, raw, headers, hold)
        for step in BEFORE_ENGINE:
            r = step(r)
        # its turn at the engine once parsed and checked, then its bodies in flight to vLLM
        # capped, as the server's are
        with self.turn() as priced, self.engine.request():
            r = replace(r, priced=priced)
            for step in AT_ENGINE:
                r = step(r)
        for step in AFTER_ENGINE:
            r = step(r)
        return r.response


def offline(api, body, *, layout=None, image_policy=None, max_questions: int = 400):
    """(Decision, meta) for a body without a server or a profile (benches that call vLLM
    directly): the model as named, the mode asked for (else causal), `layout` for every read;
    images under image_policy (None: text only)."""
    request = api.parse(body, None, Limits(max_options=MAX_OPTIONS,
                                           max_questions=max_questions))
    return Decision(model=request.model, state=request.state, questions=request.questions,
                    attention_mode=request.mode or CAUSAL, layout=layout,
                    images=inputs.resolve(request.images, image_policy)), request.meta
