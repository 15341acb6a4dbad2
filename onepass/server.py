"""The service behind the HTTP edge: routes, auth, health, readiness and the one error renderer.

Owns: judging a request from its head (route, method, key or local caller, draining, warm-up,
room in the in-flight slots; then its body's claim on the body budget), its in-flight slot
once its body is read (the server's cap, its source's share, the expected time to answer
against its deadline), /health, /v1/models, /metrics, /openapi.json, the start-up guard and
warm-up (readiness), and rendering every error.
Never: touches sockets or HTTP framing (edge/ does), validates API fields (api/ does) or
decides (pipeline.Pipeline.decide runs the ten steps, from the body to the response document).
In: a request's method, path, headers. Out: (status, doc) in the contract's shapes, or the
route's adapter.
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from .body import limits as body_limits
from . import config, inflight, metrics, openapi, telemetry, tryit
from .api import decisions, models, systemone
from .backend import heartbeat, probes
from .backend.engine import Engine
from .backend.warmup import warmup_bodies
from .config import Settings
from .decision_model import CAUSAL, TWO_WAY
from .edge import admission, body_budget, door, pace, slots
from .edge.responses import Raw
from .errors import (AuthInvalid, AuthMissing, EngineUnavailable, Forbidden, MethodNotAllowed,
                     NotFound, NotReady, OnepassError, Overloaded, ShuttingDown)
from .images import fetch, inputs
from .pipeline import Pipeline

log = logging.getLogger("onepass")
WARMING, READY, FAILED = "warming", "ready", "failed"
UNRESPONSIVE = "unresponsive"  # ready, but vLLM has stopped answering its heartbeat
WARM_UP_AT_ONCE = 4  # warm-up requests in flight together (docs/production.md, health)
WAIT_CEILING_S = 30.0  # the longest pause between start-up checks vLLM did not answer
# HEAD is answered wherever GET is (RFC 9110 9.3.2): the GET's status and headers, no body
# (the connection loop leaves it out).
ROUTES = {"/health": ("GET", "HEAD"), "/v1/models": ("GET", "HEAD"), "/v1/systemone": ("POST",),
          "/systemone": ("POST",), "/v1/decisions": ("POST",), "/decisions": ("POST",),
          "/metrics": ("GET", "HEAD"), "/openapi.json": ("GET", "HEAD"),
          **dict.fromkeys(tryit.PATHS, ("GET", "HEAD"))}
# The two APIs, each an api.Adapter; everything between parse and render is the pipeline's.
ADAPTERS = {"/v1/systemone": systemone, "/systemone": systemone,
            "/v1/decisions": decisions, "/decisions": decisions}


class Service:
    """The running shim: settings, the pipeline (with its engine client) and readiness."""

    def __init__(self, settings: Settings, root: Path, engine=Engine):
        """`engine`: the engine client's class, or a callable taking its arguments (the tests
        give a recording or a replaying one: tests/support/replay_engine.py)."""
        self.settings, self.profile, self.root = settings, settings.model, root
        vision = self.profile.vision
        self.engine = engine(settings.vllm, self.profile.served_model_name,
                             timeout_s=settings.engine_timeout_s,
                             num_connections=settings.engine_connections, key=settings.vllm_key,
                             max_bytes_in_flight=settings.engine_bytes_in_flight,
                             max_bytes_per_request=settings.engine_bytes_per_request,
                             calls_per_request=settings.engine_calls_per_request,
                             scheduling=settings.vllm_scheduling,
                             image_slot=vision.placeholder if vision else None)
        links = None if settings.image_links == "off" else fetch.Rules(
            allow_http=settings.image_links_http == "true",
            timeout_s=settings.image_fetch_timeout_s,
            max_bytes=vision.max_bytes if vision else fetch.Rules.max_bytes,
            ports=config.port_list(settings.image_link_ports),
            is_allowed=fetch.is_public if settings.image_links == "public" else fetch.is_unicast)
        self.images = inputs.Policy(self.profile.model_name, vision, links)
        self.pipeline = None  # the decision core, once start-up has learnt the engine's facts
        self.phase, self.reason = WARMING, "waiting for vLLM"
        self.heartbeat = heartbeat.Heartbeat(settings.vllm, settings.engine_probe_interval_s,
                                             settings.engine_probe_bound_s,
                                             settings.vllm_key)  # shim.py starts it
        self.slots = slots.Slots(settings.max_in_flight, settings.max_in_flight_per_source)
        self.pace = pace.Pace()  # the expected time to answer, against each request's deadline
        # in-flight requests past what may run wait here, shed by time waited (http-edge.md)
        self.door = door.Door(settings.max_running, settings.queue_target_s,
                              settings.queue_interval_s, expected=self.pace.expected_s,
                              least=self.pace.least_s,
                              spare=int(self.slots.per_source < settings.max_in_flight),
                              closed=lambda: self.slots.closed and self.shutting_down(),
                              sized=door.paced(self.pace, settings.running_goal_s))
        self.loopback = admission.binds_loopback(settings.host)  # auth off: local callers only
        self.bodies = body_budget.Budget(settings.body_budget_bytes, settings.body_budget_wait_s,
                                         settings.body_budget_per_source)
        telemetry.watch(self)  # the in-flight and phase gauges read it at scrape time

    # -- readiness --------------------------------------------------------------------
    def warm_up(self, poll_s: float = 1.0, ceiling_s: float = WAIT_CEILING_S) -> None:
        """Guard, then every question type through the full path; only then ready. Until vLLM
        answers /v1/models it is polled every `poll_s` (one call a poll); a start-up check that
        vLLM then drops or does not answer is tried again after a pause that doubles from
        `poll_s` to `ceiling_s`, so a half-working engine gets a few checks a minute."""
        pause = poll_s
        while self.pipeline is None:
            down = self.engine.waiting()  # a quiet poll: vLLM starting is no engine error
            if down:
                self._wait(down, poll_s)
                continue
            try:
                facts = probes.learn(self.engine, self.settings, self.root)
            except EngineUnavailable as e:  # not up yet: keep waiting, /health says why
                self._wait(f"the start-up checks, which it did not answer ({e.message})", pause)
                pause = min(2 * pause, ceiling_s)
                continue
            except (OnepassError, probes.GuardFailed, OSError, ValueError, KeyError) as e:
                return self._fail(f"start-up check failed: {getattr(e, 'message', e)}")
            self.start(facts)
        pipe = self.pipeline
        self.reason = "warming up every question type"
        try:
            served = {name for name, limit in pipe.limits.kinds.items() if limit.refusal is None}
            bodies = warmup_bodies(pipe.facts.two_way, self.profile.vision is not None, served)
            # sent together, as clients would: vLLM batches their reads; the first failure ends
            # it (pool.map raises it)
            with ThreadPoolExecutor(WARM_UP_AT_ONCE, thread_name_prefix="warm-up") as pool:
                list(pool.map(lambda rd: self.warm(ADAPTERS[rd[0]], rd[1]), bodies))
        except OnepassError as e:
            return self._fail(f"warm-up request failed: {e.message}")
        self.phase, self.reason = READY, ""
        refused = "; ".join(f"{name} questions refused: {limit.refusal}"
                            for name, limit in pipe.limits.kinds.items() if limit.refusal)
        log.info("ready: %s via %s, up to %d options a question, two-way %s, option sets %s%s",
                 self.profile.model_name, self.settings.vllm, pipe.limits.max_options,
                 "on" if pipe.facts.two_way else "off", "on" if pipe.facts.sets else "off",
                 f"; {refused}" if refused else "")

    def start(self, facts: probes.Facts) -> None:
        """The decision core, with what start-up learnt about the engine (and the profile the
        guard proved: client text neutralised for the served tokenizer's added tokens too)."""
        if facts.profile is not None:
            self.settings = replace(self.settings, model=facts.profile)
            self.profile = facts.profile
        self.pipeline = Pipeline(self.settings, self.engine, self.images, facts,
                                 turn=self.engine_turn)

    def claim_body(self, hold: body_budget.Hold, headers, length: int):
        """Before an admitted request's body is read: (its wire limit, the claim its reading
        calls with each piece's bytes before reading them, taken of the body budget in `hold`,
        which its caller releases once answered). Past the wire limit a 413 and an unknown
        coding a 415, before anything is claimed; no room for a piece in time a 529."""
        # admitted: the service is ready, so its pipeline is there
        limit = body_limits.wire_limit(headers, length, self.pipeline.body_limits)
        return limit, lambda n: hold.take(body_limits.reading(n))

    def warm(self, adapter, doc: dict) -> dict:
        """One warm-up request through the whole path, its engine work timed like a client's
        (it seeds the expected time to answer)."""
        return self.pipeline.decide(adapter, json.dumps(doc).encode(), {})

    def _wait(self, why: str, pause: float) -> None:
        self.reason = f"waiting for vLLM: {why}; next try in {pause:g} s"
        time.sleep(pause)

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
        stalled = self.phase == READY and self.heartbeat.reason
        if self.phase == READY and not stalled:
            doc = {"status": "ok", "warming": False, "draining": False}
            if authorized:
                doc.update(model=self.profile.model_name, profile=self.settings.profile,
                           attention_modes=self.attention_modes(),
                           default_attention_mode=self.profile.attention_mode)
            return 200, doc
        doc = {"status": UNRESPONSIVE if stalled else self.phase,
               "warming": self.phase == WARMING, "draining": False}
        return 503, {**doc, "reason": stalled or self.reason} if authorized else doc

    def attention_modes(self) -> list:
        """The modes this server reads in (two-way only where start-up found it live)."""
        two_way = self.pipeline is not None and self.pipeline.facts.two_way
        return [CAUSAL, TWO_WAY] if two_way else [CAUSAL]

    def models(self) -> dict:
        return models.document(self.profile)  # System One's and OpenAI's shapes at once

    # -- judging a request from its head ---------------------------------------------------
    def admit(self, method: str, path: str, query: str, headers,
              source: str = "") -> tuple[int | None, object]:
        """A request judged before its body is read: (status, doc) when it is answered now, or
        (None, adapter) when its body is to be read, then decided within `entered`. Refusals
        raise, so no body is read for them."""
        if path not in ROUTES:
            raise NotFound(f"no route {path}")
        if method not in ROUTES[path]:
            raise MethodNotAllowed(f"{path} takes {', '.join(ROUTES[path])}, not {method}",
                                   ROUTES[path])
        key, authorization = self.settings.api_key, headers.get("Authorization")
        # auth off: a caller that is not local (DNS rebinding, a page's cross-site post) is
        # refused; /health answers it still (a balancer's check), without the details
        foreign = None if key else admission.foreign(headers, self.loopback)
        if path == "/health":
            return self.health(query, not foreign and admission.authorized(key, authorization))
        if foreign:
            raise Forbidden(foreign)
        if path in tryit.PATHS:  # public (no data in it), answered while warming and draining
            data, kind = tryit.serve(self, path, admission.authorized(key, authorization))
            return 200, Raw(data, kind, tuple(tryit.HEADERS.items()))
        if path in ("/metrics", "/openapi.json"):  # the key as everywhere; answered while
            admission.check_auth(key, authorization)  # warming and draining too
            if path == "/openapi.json":
                return 200, openapi.document(self.settings)
            return 200, Raw(telemetry.REGISTRY.render().encode(), metrics.CONTENT_TYPE)
        if self.slots.closed:
            raise self.shutting_down()
        admission.check_auth(key, authorization)
        if path == "/v1/models":
            return 200, self.models()
        if self.phase == FAILED:
            raise NotReady(self.reason)
        if self.phase == WARMING:
            telemetry.OVERLOADED.inc("warming")
            raise Overloaded(f"warming up ({self.reason}); retry shortly", retry_after_ms=1000)
        self.refuse_slot(self.slots.refusal(source), source)  # before its body is read
        return None, ADAPTERS[path]

    @contextlib.contextmanager
    def entered(self, source: str = ""):
        """An in-flight slot while a request whose body was read is decided: taken only now, so
        a slow body holds none; 529 past the server's cap or its source's share, or when the
        decision is expected to end past the request's deadline."""
        self.refuse_slot(self.slots.take(source), source)
        try:
            self.pace.check(inflight.CURRENT.get())  # at the least a decision takes
            yield
        finally:
            self.slots.give(source)

    @contextlib.contextmanager
    def engine_turn(self):
        """A decision's engine work, once parsed and checked: its turn at the door (fair among
        addresses; 529 when shed there: edge/door.py), then timed (the door's wait is no
        service: pace.py). Yields `priced(cost)` for the fit step (pace.Timing)."""
        call = inflight.CURRENT.get()
        with self.door.entered(call), self.pace.timed(call) as priced:
            yield priced

    def refuse_slot(self, why: str | None, source: str) -> None:
        if why is None:
            return
        if why == slots.CLOSED:
            raise self.shutting_down()
        telemetry.OVERLOADED.inc("in_flight" if why == slots.FULL else "source_in_flight")
        if why == slots.FULL:
            raise Overloaded(f"more than {self.settings.max_in_flight} requests in flight",
                             retry_after_ms=200)
        raise Overloaded(f"{self.slots.per_source} requests from your address are in flight, "
                         "its share of this server (--max-in-flight-per-source); retry when one "
                         "is answered", retry_after_ms=500)

    @staticmethod
    def render_error(err: OnepassError, path: str = "") -> tuple[int, dict, dict]:
        return render_error(err, path)

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
    if isinstance(err, (AuthMissing, AuthInvalid)):
        headers["WWW-Authenticate"] = err.challenge  # RFC 9110 11.6.1: every 401 carries one
    return (*ADAPTERS.get(path, systemone).render_error(err), headers)
