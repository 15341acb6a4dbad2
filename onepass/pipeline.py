"""The decision path: a request body in, the response document out, one line per step.

Owns: the order of the steps (decide; onepass.STEPS lists them, and each line that runs one is
marked `# step:`), resolving a Request against the profile once (model name, attention mode,
kwargs.layout and kwargs.calibration checked into the Decision), the engine facts learnt at
start-up (labels, context length, two-way) and from the plugin's typed refusal (its one-step
budget), the re-read policy and blend.
Never: touches HTTP or readiness (server.py, edge/), knows an API's field names (api/) or a
kind's (kinds/), builds prompts or computes probabilities (prompt/, readout.py).
In: body bytes, their headers and the route's adapter. Out: the adapter's response document.
"""
from __future__ import annotations

from dataclasses import replace

from . import kinds, parts, readout, think, work
from .api import Limits
from .api.checks import MAX_LEVELS, MAX_OPTIONS
from .api.models import unknown as unknown_model
from .decision import BOX, CAUSAL, TWO_WAY, Decision, Outcome
from .edge import transport
from .errors import BadRequest, InvalidRequest, ModelNotFound, OverBudget, Problem
from .images import inputs
from .reasoning import Ask
from .profile import MAX_REPEAT, Calibration, ConfigError, check_calibration, check_layout
from .prompt import fitting
from .prompt.layout import techniques

MAX_SAID = 400  # characters of a refused override's message (it quotes the values sent)


class Pipeline:
    """The request path for either API, with what start-up learnt about the engine."""

    def __init__(self, settings, engine, image_policy):
        self.settings, self.profile, self.engine = settings, settings.model, engine
        self.image_policy = image_policy
        self.labels = None  # the verified LabelSet, set by the start-up guard
        self.two_way = False  # set by the start-up probe: the engine plugin reads two-way
        self.max_len = self.profile.max_model_len  # the served context, learnt at start-up
        self.two_way_budget = None  # the plugin's one-step budget, learnt from its first refusal
        self.structured = "not checked yet"  # why vLLM cannot constrain a generation, found
        # by the start-up probe ("" once it can: box and number questions are answered)

    def decide(self, raw: bytes, headers, api) -> dict:
        """One request through every step, in the order onepass/__init__.py lists them."""
        request = api.parse(*self.body(raw, headers), self.limits)  # step: parse
        decision = self.resolve(request)  # step: resolve
        decision = replace(decision, images=inputs.resolve(  # step: images
            request.images, self.image_policy))
        with self.engine.request():  # its bodies in flight to vLLM capped, as the server's are
            outcome = self.answer(decision)  # steps: fit, reads, readout, reread, think, generate
        return api.render(outcome, decision, request.meta)  # step: render

    def body(self, raw: bytes, headers) -> tuple:
        """(JSON value, multipart files): the body decoded and parsed, before any API field."""
        return transport.parse(transport.decode(raw, headers.get("Content-Encoding", ""),
                                                self.settings.max_decoded_bytes),
                               headers.get("Content-Type", ""))

    @property
    def limits(self) -> Limits:
        return Limits(max_choice_options=min(MAX_OPTIONS, len(self.labels.choice)),
                      max_questions=self.settings.max_questions,
                      max_box_questions=self.settings.max_box_questions,
                      max_number_questions=self.settings.max_number_questions,
                      box_refusal=self.box_refusal(), number_refusal=self.number_refusal(),
                      max_images=self.profile.vision.max_images if self.profile.vision else 0,
                      model=self.profile.model_name)

    def box_refusal(self) -> str | None:
        """Why this server refuses box questions (a 422 at the question), or None."""
        vision = self.profile.vision
        if vision is None or vision.box is None:
            return (f"box questions need a vision-language model profile with a box convention; "
                    f"this server's profile ({self.profile.model_name}) has none")
        return self.number_refusal("box")

    def number_refusal(self, kind: str = "number") -> str | None:
        """Why this server refuses generated answers (number, box): vLLM's structured outputs
        failed the start-up check; None when they passed."""
        if self.structured:
            return (f"{kind} questions need vLLM's structured outputs (a generation constrained "
                    f"by a grammar), and this server's vLLM failed that check at start-up: "
                    f"{self.structured}; questions of other types are answered")
        return None

    # -- resolve: the request against the profile, once -----------------------------------
    def resolve(self, request) -> Decision:
        """The Decision: the concrete model (404), the overrides' values (422), the mode (400),
        in that order; the layout and calibration that apply are fixed here for every step."""
        model = self.resolve_model(request.model)
        if model is None:
            raise ModelNotFound(unknown_model(request.model, self.profile))
        layout, calibration = self.resolve_options(request.overrides)
        return Decision(model=model, state=request.state, questions=request.questions,
                        attention_mode=self.resolve_mode(request.mode), layout=layout,
                        calibration=calibration, reasoning=self.resolve_reasoning(request))

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
        None where the request overrides nothing."""
        layout = calibration = None
        try:
            if "layout" in overrides:
                layout = replace(self.profile.layout, **overrides["layout"])
                check_layout(layout, "kwargs.layout")
        except (TypeError, ValueError, ConfigError) as e:
            raise InvalidRequest([Problem(("kwargs", "layout"), _said(e), "value_error")]) \
                from None
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
        if mode == TWO_WAY and not self.two_way:
            raise BadRequest("two-way (bidirectional) reading needs the onepass engine plugin, "
                             "and this server's vLLM does not run it; ask for attention_mode "
                             "causal, or start vLLM with the plugin (serve.sh does by default)")
        return mode

    def calibration(self, decision: Decision) -> Calibration:
        return decision.calibration or self.profile.calibration

    # -- fit, reads, readout, re-read ------------------------------------------------------
    def answer(self, decision: Decision) -> Outcome:
        """Every question answered: label reads first; then, when the request reasons, the
        thoughts and the re-reads after them (think.py); then the generations of box and number
        answers, all at once; folded back in the request's order (parts.py). Generations run
        after the reads, not beside them: the reads then batch and hit the prefix cache as they
        would alone, so every form of a request answers the same."""
        thinking = decision.reasoning is not None and decision.reasoning.mode != "off"
        if not thinking and all(kinds.get(q.kind).reads for q in decision.questions):
            budget = work.Budget(self.settings.max_reads, work.plan(
                decision, decision, self.profile, self.labels))
            return self.answer_reads(decision, budget=budget)
        s = parts.split(decision, min(MAX_LEVELS, len(self.labels.score)))
        budget = work.Budget(self.settings.max_reads, work.plan(decision, s.reads,
                                                                self.profile, self.labels))
        outcome = (self.answer_reads(s.reads, parts.internal(s), budget) if s.reads.questions
                   else readout.outcome(s.reads, [], []))
        starts, spent = {}, None
        if thinking:  # step: think
            outcome, starts, spent = think.step(self, decision, s, outcome)
        futures = parts.start(decision, s, self, starts)  # step: generate
        outcome = parts.fold(decision, s, outcome, {i: f.result() for i, f in futures.items()},
                             self.profile)
        return replace(outcome, reasoning=spent)

    def answer_reads(self, decision: Decision, fixed=frozenset(), budget=None) -> Outcome:
        """Fit and read every question, turn the reads into probabilities; then read uncertain
        questions of kinds that re-read (save those in `fixed`) a second time with the request
        written twice, blended 2:1 (first:second), when the request's budget has the calls to
        spare (the reads are in its plan; None: nothing spare)."""
        calibration, opts = self.calibration(decision), techniques(decision, self.profile)
        reads, selections, results = self.read(decision)
        probs = readout.probabilities(decision, reads, results,  # step: readout
                                      calibration, opts.shrink)
        unsure = [i for i, (q, p) in enumerate(zip(decision.questions, probs))
                  if kinds.get(q.kind).rereads and i not in fixed
                  and max(p) < calibration.reread_below]
        rereads = 0
        again = replace(decision, questions=tuple(decision.questions[i] for i in unsure),
                        layout=replace(opts, repeat=min(MAX_REPEAT, 2 * opts.repeat)))
        if unsure and budget and budget.take_spare(work.read_calls(
                again.questions, self.labels, techniques(again, self.profile))):
            try:  # step: reread
                more_reads, _, more = self.read(again)
            except InvalidRequest:  # it cannot fit, or more reads than allowed: the first stands
                return readout.outcome(decision, probs, results, 0, calibration.reread_below,
                                       reads, selections)
            second = readout.probabilities(again, more_reads, more, calibration, opts.shrink)
            for i, p in zip(unsure, second):
                probs[i] = readout.blend(probs[i], p, readout.REREAD_FIRST_WEIGHT)
            reads, results, rereads = reads + more_reads, results + more, len(unsure)
        return readout.outcome(decision, probs, results, rereads, calibration.reread_below,
                               reads, selections)

    def read(self, decision: Decision):
        """(reads, selections, results): every question fitted into the context, then read. A
        two-way read the plugin refuses for its one-step budget (its typed refusal, OverBudget)
        teaches the shim that budget; the question is then fitted to it and read again. The
        calls are in the request's work budget (work.py), checked before the first."""
        for _ in range(2):
            budget = self.max_len - 1  # the one token to read follows the prompt
            if decision.attention_mode == TWO_WAY and self.two_way_budget:
                budget = min(budget, self.two_way_budget)
            reads, selections = fitting.fit(decision, self.profile, self.labels,  # step: fit
                                            self.engine.count, budget)
            try:
                return reads, selections, self.engine.read_all(reads)  # step: reads
            except OverBudget as e:
                if decision.attention_mode != TWO_WAY or self.two_way_budget:
                    raise
                self.two_way_budget = e.budget_tokens
        raise AssertionError("unreachable: the second round re-raises")


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
