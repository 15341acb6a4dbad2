"""The decision core: a request's body in, its response document out, the ten steps in one
function (Pipeline.decide), each a call into the module named for it.

Owns: the order of the steps (onepass.STEPS lists them; each line that runs one is marked
`# step:`), what they share (the profile, the engine's facts, the reader, the limits both APIs
apply: from the settings, the engine facts and each kind's limit) and the engine's cap on one
request's bodies in flight.
Never: touches HTTP (edge/), validates an API's fields (api/), knows a kind (kinds/), builds
prompts or computes probabilities: the steps' modules do.
In: the route's adapter, the body and its headers. Out: the response document.
"""
from __future__ import annotations

import contextlib

from dataclasses import replace

from .body import decode as body, limits as body_limits
from .steps import fit, generate, readout, read as reads, reread, resolve, think
from . import kinds
from .api import Limits
from .decision_model import CAUSAL, Decision
from .images import inputs
from .kinds.base import MAX_OPTIONS, Job
from .steps.engine_calls import Reader


class Pipeline:
    """The decision path for either API, with the facts start-up learnt about the engine."""

    def __init__(self, settings, engine, image_policy, facts, turn=contextlib.nullcontext):
        self.settings, self.profile, self.engine = settings, settings.model, engine
        self.image_policy, self.facts = image_policy, facts
        self.turn = turn  # a decision's turn at the engine (server.Service.engine_turn)
        self.reader = Reader(self.profile, facts, engine)
        self.body_limits = body_limits.limits(settings)
        vision = self.profile.vision
        self.limits = Limits(max_choice_options=min(MAX_OPTIONS, len(facts.labels.choice)),
                             max_questions=settings.max_questions,
                             kinds={k.name: k.limit(settings, facts)
                                    for k in kinds.KINDS.values()},
                             max_images=vision.max_images if vision else 0,
                             model=self.profile.model_name)

    def decide(self, adapter, raw: bytes, headers, hold=None) -> dict:
        """A decision request, from its body to its response document. `hold`: the body's hold
        on the body budget (server.claim_body), resized as the body is read."""
        request = adapter.parse(*body.read(raw, headers, self.body_limits, hold),  # step: parse
                                self.limits)
        decision = resolve.decision(request, self.profile, self.facts)  # step: resolve
        decision = replace(decision, images=inputs.resolve(  # step: images
            request.images, self.image_policy, hold))
        job = Job(decision.images, self.profile, self.settings, self.facts.labels)
        # its turn at the engine once parsed and checked (a refused body never queues), then
        # its bodies in flight to vLLM capped, as the server's are
        with self.turn(), self.engine.request():
            s = fit.plan(decision, job, self.reader, self.settings.max_reads)  # step: fit
            s = reads.read(s, self.reader)  # step: reads
            s = readout.first(s)  # step: readout
            outcome = reread.step(s, self.reader)  # step: reread
            outcome, starts, spent = think.step(s, outcome, self.reader)  # step: think
            outcome = generate.step(s, outcome, starts, spent, self.reader)  # step: generate
        return adapter.render(outcome, decision, request.meta)  # step: render


def offline(api, body, *, layout=None, image_policy=None, max_questions: int = 400):
    """(Decision, meta) for a body without a server or a profile (benches that call vLLM
    directly): the model as named, the mode asked for (else causal), `layout` for every read;
    images under image_policy (None: text only)."""
    request = api.parse(body, None, Limits(max_choice_options=MAX_OPTIONS,
                                           max_questions=max_questions))
    return Decision(model=request.model, state=request.state, questions=request.questions,
                    attention_mode=request.mode or CAUSAL, layout=layout,
                    images=inputs.resolve(request.images, image_policy)), request.meta
