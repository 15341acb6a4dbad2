"""The service behind the HTTP edge: routing, auth, limits, readiness and the one error renderer.

Owns: judging a request from its head (route, method, key, draining, warm-up, in-flight slots),
the request path (decide), /health and warm-up state, and rendering every error.
Never: touches sockets or HTTP framing (connections.py and framing.py do), validates API fields,
builds prompts or computes probabilities (the stages do).
In: a request's method, path, headers and then its body. Out: (status, doc) in the contract's shapes.
"""
from __future__ import annotations

import json
import logging
import math
import re
import time
from dataclasses import replace
from pathlib import Path

from . import admission, decisions, fetch, fitting, image_inputs, readout, systemone, transport
from .config import (MAX_REPEAT, Calibration, ConfigError, Layout, Settings, check_calibration,
                     check_layout)
from .decision import CAUSAL, NOUL, TWO_WAY, Decision, Outcome
from .engine import Engine
from .errors import (BadRequest, EngineUnavailable, InvalidRequest,
                     MethodNotAllowed, NotFound, NotReady, OnepassError, Overloaded, Problem,
                     ShuttingDown)
from .probes import GuardFailed, run_guard, two_way_live
from .warmup import warmup_bodies

log = logging.getLogger("onepass")
WARMING, READY, FAILED = "warming", "ready", "failed"
ROUTES = {"/health": ("GET",), "/v1/models": ("GET",), "/v1/systemone": ("POST",),
          "/systemone": ("POST",), "/v1/decisions": ("POST",), "/decisions": ("POST",)}
# The two APIs: each adapter module has parse(body, **limits) -> (Decision, meta),
# render(outcome, decision, meta) -> dict and render_error(err); everything between is shared.
ADAPTERS = {"/v1/systemone": systemone, "/systemone": systemone,
            "/v1/decisions": decisions, "/decisions": decisions}


class Service:
    """The running shim: settings, the engine client and the readiness state."""

    def __init__(self, settings: Settings, root: Path):
        self.settings, self.profile, self.root = settings, settings.model, root
        vision = self.profile.vision
        self.engine = Engine(settings.vllm, self.profile.served_model_name,
                             timeout_s=settings.engine_timeout_s,
                             num_connections=settings.engine_connections,
                             image_slot=vision.placeholder if vision else None)
        links = None if settings.image_links == "off" else fetch.Rules(
            allow_http=settings.image_links_http == "true",
            timeout_s=settings.image_fetch_timeout_s,
            max_bytes=vision.max_bytes if vision else fetch.Rules.max_bytes,
            is_allowed=fetch.is_public if settings.image_links == "public" else fetch.is_unicast)
        self.image_policy = image_inputs.Policy(self.profile.model_name, vision, links)
        self.labels = None
        self.two_way = False  # set by the start-up probe: the engine plugin reads two-way
        self.max_len = self.profile.max_model_len  # the served context, learnt at start-up
        self.two_way_budget = None  # the plugin's one-step budget, learnt from its first refusal
        self.phase, self.reason = WARMING, "waiting for vLLM"
        self.slots = admission.Slots(settings.max_in_flight)

    def decide(self, raw: bytes, headers, api=systemone) -> dict:
        """The request path for either API, one line per stage."""
        body, files = transport.parse(transport.decode(raw, headers.get("Content-Encoding", ""),
                                      self.settings.max_decoded_bytes),
                                      headers.get("Content-Type", ""))
        decision, meta = api.parse(body, files=files, image_policy=self.image_policy,
                                   max_choice_options=self.max_choice_options,
                                   max_questions=self.settings.max_questions,
                                   resolve_model=self.resolve_model,
                                   resolve_mode=self.resolve_mode,
                                   resolve_options=self.resolve_options)
        return api.render(self.answer(decision), decision, meta)

    def answer(self, decision: Decision) -> Outcome:
        """Lay out (each question fitted to the context), read, turn into probabilities; then
        read uncertain choice and score questions a second time with the request written
        twice, blended 2:1 (first:second)."""
        calibration, opts = self.calibration(decision), decision.layout or self.profile.layout
        reads, selections, results = self.read(decision, self.settings.max_reads)
        probs = readout.probabilities(decision, reads, results, calibration, opts.shrink)
        unsure = [i for i, (q, p) in enumerate(zip(decision.questions, probs))
                  if q.kind != NOUL and max(p) < calibration.reread_below]
        rereads = 0
        if unsure:
            again = replace(decision, questions=tuple(decision.questions[i] for i in unsure),
                            layout=replace(opts, repeat=min(MAX_REPEAT, 2 * opts.repeat)))
            try:
                more_reads, _, more = self.read(again, self.settings.max_reads - len(reads))
            except InvalidRequest:  # it cannot fit, or more reads than allowed: the first stands
                return readout.outcome(decision, probs, results, 0, calibration.reread_below,
                                       reads, selections)
            second = readout.probabilities(again, more_reads, more, calibration, opts.shrink)
            for i, p in zip(unsure, second):
                probs[i] = readout.blend(probs[i], p, readout.REREAD_FIRST_WEIGHT)
            reads, results, rereads = reads + more_reads, results + more, len(unsure)
        return readout.outcome(decision, probs, results, rereads, calibration.reread_below,
                               reads, selections)

    def read(self, decision: Decision, max_reads: int):
        """(reads, selections, results): every question fitted into the context, then read. A
        two-way read refused for the plugin's one-step budget teaches the shim that budget; the
        question is then fitted to it and read again. More than max_reads reads is a 422."""
        needed = fitting.num_reads(decision, self.profile)
        if needed > max_reads:
            raise InvalidRequest([Problem(("questions",), f"this request needs {needed} reads of "
                                          f"the model; this server makes at most "
                                          f"{self.settings.max_reads} per request", "too_long")])
        for _ in range(2):
            budget = self.max_len - 1  # the one token to read follows the prompt
            if decision.attention_mode == TWO_WAY and self.two_way_budget:
                budget = min(budget, self.two_way_budget)
            reads, selections = fitting.fit(decision, self.profile, self.labels,
                                            self.engine.count, budget)
            try:
                return reads, selections, self.engine.read_all(reads)
            except InvalidRequest as e:
                learnt = re.search(r"one-step budget of (\d+)", e.message)
                if not learnt or decision.attention_mode != TWO_WAY or self.two_way_budget:
                    raise
                self.two_way_budget = int(learnt.group(1))
        raise AssertionError("unreachable: the second round re-raises")

    @property
    def max_choice_options(self) -> int:
        return min(systemone.MAX_CHOICE_OPTIONS, len(self.labels.choice))

    def resolve_model(self, name: str) -> str | None:
        if name == self.profile.model_name or name in self.profile.aliases:
            return self.profile.model_name
        return None

    def calibration(self, decision: Decision) -> Calibration:
        return decision.calibration or self.profile.calibration

    def resolve_options(self, overrides: dict) -> tuple[Layout | None, Calibration | None]:
        """The profile's prompt techniques and calibration with a request's `kwargs.layout` and
        `kwargs.calibration` on top (same keys and ranges; `temperature` may name some kinds);
        None where the request overrides nothing."""
        layout = calibration = None
        try:
            if "layout" in overrides:
                layout = replace(self.profile.layout, **overrides["layout"])
                check_layout(layout, "kwargs.layout")
        except (TypeError, ConfigError) as e:
            raise InvalidRequest([Problem(("kwargs", "layout"), str(e), "value_error")]) from None
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
        except (TypeError, ConfigError) as e:
            raise InvalidRequest([Problem(("kwargs", "calibration"), str(e),
                                          "value_error")]) from None
        return layout, calibration

    def resolve_mode(self, requested: str | None) -> str:
        mode = requested or self.profile.attention_mode
        if mode == TWO_WAY and not self.two_way:
            raise BadRequest("two-way (bidirectional) reading needs the onepass engine plugin, "
                             "and this server's vLLM does not run it; ask for attention_mode "
                             "causal, or start vLLM with the plugin (serve.sh does by default)")
        return mode

    # -- readiness --------------------------------------------------------------------
    def warm_up(self, poll_s: float = 1.0) -> None:
        """Guard, then every question type through the full path; only then ready."""
        while self.labels is None:
            try:
                labels, self.max_len = run_guard(self.engine, self.profile, self.root)
                self.two_way = two_way_live(self.engine, self.profile, labels)
                self.labels = labels
            except EngineUnavailable as e:  # not up yet: keep waiting, /health says why
                self.reason = f"waiting for vLLM: {e.message}"
                time.sleep(poll_s)
            except (OnepassError, GuardFailed, OSError, ValueError, KeyError) as e:
                return self._fail(f"start-up check failed: {getattr(e, 'message', e)}")
        self.reason = "warming up every question type"
        try:
            for route, body in warmup_bodies(self.two_way, self.profile.vision is not None):
                self.decide(json.dumps(body).encode(), {}, ADAPTERS[route])
        except OnepassError as e:
            return self._fail(f"warm-up request failed: {e.message}")
        self.phase, self.reason = READY, ""
        log.info("ready: %s via %s, %d choice labels, two-way %s", self.profile.model_name,
                 self.settings.vllm, len(self.labels.choice), "on" if self.two_way else "off")

    def _fail(self, reason: str) -> None:
        self.phase, self.reason = FAILED, reason
        log.error("%s", reason)

    def health(self, query: str, authorized: bool) -> tuple[int, dict]:
        """The status codes a load balancer needs for anyone; the model and the reason for a
        state only for a caller with the key (auth off: anyone), and always in the local log."""
        if "live=1" in query.split("&"):
            return 200, {"status": "live"}
        if self.slots.closed:
            return 503, {"status": "draining", "warming": False, "draining": True}
        if self.phase == READY:
            doc = {"status": "ok", "warming": False, "draining": False}
            if authorized:
                doc.update(model=self.profile.model_name, profile=self.settings.profile,
                           attention_modes=[CAUSAL, TWO_WAY] if self.two_way else [CAUSAL],
                           default_attention_mode=self.profile.attention_mode)
            return 200, doc
        doc = {"status": self.phase, "warming": self.phase == WARMING, "draining": False}
        return 503, {**doc, "reason": self.reason} if authorized else doc

    def models(self) -> dict:
        p = self.profile
        return {"models": [{"name": name, "description": p.description,
                            "release_date": p.release_date}
                           for name in (p.model_name, *p.aliases)]}

    # -- judging a request from its head ---------------------------------------------------
    def admit(self, method: str, path: str, query: str, headers) -> tuple[int | None, object]:
        """A request judged before its body is read: (status, doc) when it is answered now, or
        (None, adapter) when its body is to be read and decided; an in-flight slot is then
        taken (self.slots.give() returns it). Refusals raise, so no body is read for them."""
        if path not in ROUTES:
            raise NotFound(f"no route {path}")
        if method not in ROUTES[path]:
            raise MethodNotAllowed(f"{path} takes {', '.join(ROUTES[path])}, not {method}",
                                   ROUTES[path])
        key, authorization = self.settings.api_key, headers.get("Authorization")
        if path == "/health":
            return self.health(query, admission.authorized(key, authorization))
        if self.slots.closed:
            raise self.shutting_down()
        admission.check_auth(key, authorization)
        if path == "/v1/models":
            return 200, self.models()
        if self.phase == FAILED:
            raise NotReady(self.reason)
        if self.phase == WARMING:
            raise Overloaded(f"warming up ({self.reason}); retry shortly", retry_after_ms=1000)
        if not self.slots.take():
            if self.slots.closed:
                raise self.shutting_down()
            raise Overloaded(f"more than {self.settings.max_in_flight} requests in flight",
                             retry_after_ms=200)
        return None, ADAPTERS[path]

    @staticmethod
    def shutting_down() -> ShuttingDown:
        return ShuttingDown("this server is shutting down and takes no new requests; retry "
                            "(another instance answers)", retry_after_ms=1000)


def render_error(err: OnepassError, path: str = "") -> tuple[int, dict, dict]:
    """Every error response is built here: status, body (in the shape of the route's API) and
    retry headers."""
    headers = {}
    if err.retry_after_ms is not None:
        headers = {"retry-after-ms": str(err.retry_after_ms),
                   "Retry-After": str(max(1, math.ceil(err.retry_after_ms / 1000)))}
    if isinstance(err, MethodNotAllowed):
        headers["Allow"] = ", ".join(err.allow)
    return (*ADAPTERS.get(path, systemone).render_error(err), headers)
