"""What onepass counts, and the access log line: the process's metrics (metrics.py renders them).

Owns: every onepass_* metric and its label values, counting a finished request from what the
edge knows (route, status, time) and from the response document it rendered (answers' types,
usage, cut questions), the engine's and the image fetcher's counts at their boundaries, the
per-request tally of reads (a thread-local: a request is decided on its connection's thread),
the build's and the process's own series (procstats.py reads the latter) and the one JSON
access log line per request.
Never: reads a request body, logs a body, a key, an image or a question id, or takes a label
value from client input (routes are checked against a fixed set, answer types against the
registered kinds' types on either API).
"""
from __future__ import annotations

import http
import json
import threading
import time

from . import __version__, errors, kinds, procstats
from .metrics import FREE, OTHER, Registry
from .tryit import PATHS as PAGE_PATHS  # the page's routes, all counted as /try

REGISTRY = Registry()
# server.ROUTES, spelled out here (server imports this module); a unit test keeps them equal.
# The try-it page's routes (tryit.PATHS) share one label, /try: one feature, few series.
ROUTES = ("/v1/systemone", "/systemone", "/v1/decisions", "/decisions", "/v1/models", "/health",
          "/metrics", "/openapi.json", "/try")
STATUSES = tuple(s.value for s in http.HTTPStatus) + (499, 529)
STATUS_CLASSES = ("2xx", "4xx", "5xx")
PHASES = ("warming", "ready", "failed", "draining", "unresponsive")
OVERLOAD_REASONS = ("warming", "in_flight", "source_in_flight", "deadline", "connections",
                    "body_bytes", "source_body_bytes", "queue")
ENGINE_ERRORS = ("timeout", "unreachable", "not_json", "unavailable", "failed",
                 "context_length", "two_way_budget", "bad_answer")
FETCH_OUTCOMES = ("ok", "refused", "failed")
TOKEN_OUTCOMES = ("answered", "abandoned", "deadline", "failed")
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)



def _answered_statuses() -> tuple[int, ...]:
    """200 and every status an error of the catalogue answers with (errors.py)."""
    found, todo = {200}, [errors.OnepassError]
    while todo:
        cls = todo.pop()
        found.add(cls.status)
        todo += cls.__subclasses__()
    return tuple(sorted(found))


# every route's series of each status the shim answers with exist from the start (the rest of
# STATUSES appear when first answered): 5xx alerts see the first failure
REQUESTS = REGISTRY.counter("onepass_requests_total", "HTTP requests answered, by route "
                            "(other: an unknown path) and status",
                            {"route": ROUTES + (OTHER,), "status": STATUSES},
                            start={"status": _answered_statuses()})
DURATION = REGISTRY.histogram("onepass_request_duration_seconds", "time from a request's first "
                              "byte to its response ready to send, by route and status class "
                              "(2xx, 4xx, 5xx)", DURATION_BUCKETS,
                              {"route": ROUTES + (OTHER,), "status_class": STATUS_CLASSES})
BUILD_INFO = REGISTRY.gauge("onepass_build_info", "1, labelled with what this shim serves: its "
                            "version, the model, the profile and vLLM's dtype and device",
                            dict.fromkeys(("version", "model", "profile", "dtype", "device"),
                                          FREE), read=lambda: _service_read("build"))
IN_FLIGHT = REGISTRY.gauge("onepass_in_flight_requests", "decision requests being answered "
                           "(holding an in-flight slot)", read=lambda: _service_read("in_flight"))
QUEUED = REGISTRY.gauge("onepass_queued_requests", "decision requests waiting at the door for "
                       "one of the --max-running (in flight, not yet running)",
                       read=lambda: _service_read("queued"))
PHASE = REGISTRY.gauge("onepass_phase", "1 for the shim's phase (warming, ready, failed, "
                       "draining, unresponsive: ready but vLLM not answering its heartbeat), "
                       "0 for the others", {"phase": PHASES},
                       read=lambda: _service_read("phase"))
OVERLOADED = REGISTRY.counter("onepass_overloaded_total", "529 answers, by reason: warming up, "
                              "the in-flight limit, its source's share of it, an expected time to answer past the "
                              "request's deadline, the connection limit, the body budget, its "
                              "source's share of it, "
                              "a wait at the door past the queue's target or interval",
                              {"reason": OVERLOAD_REASONS})
SOURCE_CAPPED = REGISTRY.counter("onepass_source_cap_refusals_total", "connections refused with "
                                 "503 because their source address had its "
                                 "--max-connections-per-source open")
ABANDONED = REGISTRY.counter("onepass_abandoned_requests_total", "decisions whose client closed "
                             "its connection before the answer: their engine work was stopped "
                             "(499 in the access log)")
ABANDONED_TOKENS = REGISTRY.counter("onepass_abandoned_engine_tokens_total", "tokens vLLM computed "
                                    "(prompt, less prefix-cache hits, and generated) for "
                                    "decisions whose client had gone by the answer")
ENGINE_TOKENS = REGISTRY.counter("onepass_engine_tokens_total", "tokens vLLM computed (prompt, "
                                "less prefix-cache hits, and generated) for decision requests, "
                                "by outcome: answered (2xx), abandoned (499), deadline (504), "
                                "failed (any other status); all but answered reached nobody",
                                {"outcome": TOKEN_OUTCOMES})
EXPECTED = REGISTRY.gauge("onepass_expected_answer_seconds", "the time a decision admitted now is "
                          "expected to take (admission refuses a request whose deadline is "
                          "sooner: 529, reason deadline)", read=lambda: _service_read("expected"))
# answer types as the adapters render them, on either API: each registered kind's (kinds.types,
# asked at each count and scrape, so a kind registered after this import is counted as itself)
QUESTIONS = REGISTRY.counter("onepass_questions_total", "questions answered, by answer type",
                             {"type": kinds.types})
INPUT_TOKENS = REGISTRY.counter("onepass_input_tokens_total", "input (prompt) tokens of answered "
                                "requests, as usage.input_tokens reports them")
OUTPUT_TOKENS = REGISTRY.counter("onepass_output_tokens_total", "tokens generated for answered "
                                 "requests (box generations), as usage.output_tokens")
CUT = REGISTRY.counter("onepass_cut_questions_total", "questions whose state was cut to fit the "
                       "context (x_effort_used.state_selection)")
IMAGES = REGISTRY.counter("onepass_images_total", "images read by answered requests (usage.images)")
FETCHES = REGISTRY.counter("onepass_image_fetches_total", "image links fetched, by outcome: ok, "
                           "refused (a rule: scheme, address, size, type), failed (the network "
                           "or the far server)", {"outcome": FETCH_OUTCOMES})
READS = REGISTRY.counter("onepass_engine_reads_total", "label reads sent to vLLM (one forward "
                         "pass each; warm-up included)")
ENGINE_ERRORS_TOTAL = REGISTRY.counter("onepass_engine_errors_total", "vLLM calls that failed, "
                                       "by kind", {"kind": ENGINE_ERRORS})
procstats.register(REGISTRY)

_service = None  # the running Service, read at scrape time (set by watch)
_local = threading.local()


def watch(service) -> None:
    global _service
    _service = service


def _service_read(what: str) -> dict:
    s = _service
    if s is None:
        return {}
    if what == "in_flight":
        return {(): s.slots.busy}
    if what == "queued":
        return {(): len(s.door.queue)}
    if what == "expected":
        return {(): round(s.pace.expected_s(), 4)}
    if what == "build":
        st = s.settings
        return {(__version__, s.profile.model_name, st.profile, st.vllm_dtype, st.vllm_device): 1}
    phase = "draining" if s.slots.closed else s.phase
    if phase == "ready" and s.heartbeat.reason:
        phase = "unresponsive"
    return {(p,): int(p == phase) for p in PHASES}


def route_of(path: str) -> str:
    return "/try" if path in PAGE_PATHS else path if path in ROUTES else OTHER


def token_outcome(status: int) -> str:
    return ("answered" if 200 <= status < 300 else "abandoned" if status == 499
            else "deadline" if status == 504 else "failed")


def status_class(status: int) -> str:
    return f"{status // 100}xx"  # outside STATUS_CLASSES (0: closed unanswered) is `other`


# -- the per-request tally ------------------------------------------------------------------
def start_request() -> None:
    _local.reads = 0


def count_reads(n: int) -> None:
    """Reads sent to vLLM, counted on the thread that decides the request."""
    READS.inc(by=n)
    _local.reads = getattr(_local, "reads", 0) + n


def engine_error(kind: str) -> None:
    ENGINE_ERRORS_TOTAL.inc(kind)


def image_fetch(outcome: str) -> None:
    FETCHES.inc(outcome)


# -- a finished request -----------------------------------------------------------------------
def finish(method: str, path: str, shown: str, status: int, started: float, doc,
           request_id: str, engine_tokens: int = 0, client: str = "", peer: str = "") -> str:
    """Count a finished request and return its access log line (JSON; `shown`: the path as
    logs may show it; `engine_tokens`: what vLLM computed for it; `client`: its address, and
    `peer` the proxy's when a trusted one named the client). Answers are counted from the
    response document only, so the decision path never counts anything itself."""
    duration = time.monotonic() - started
    if status == 499:
        ABANDONED.inc()
        ABANDONED_TOKENS.inc(by=engine_tokens)
    if engine_tokens:
        ENGINE_TOKENS.inc(token_outcome(status), by=engine_tokens)
    route = route_of(path)
    REQUESTS.inc(route, status)
    DURATION.observe(duration, route, status_class(status))
    answers, usage = _answers_and_usage(doc) if status == 200 else ([], {})
    for answer in answers:
        QUESTIONS.inc(answer.get("type") if isinstance(answer, dict) else None)
    tokens = _int(usage.get("input_tokens"))
    INPUT_TOKENS.inc(by=tokens)
    OUTPUT_TOKENS.inc(by=_int(usage.get("output_tokens")))
    IMAGES.inc(by=_int(usage.get("images")))
    cut = len(((doc.get("x_effort_used") or {}).get("state_selection") or ())
              if answers else ())
    CUT.inc(by=cut)
    return json.dumps({"ts": round(time.time(), 3), "request_id": request_id, "client": client,
                       **({"peer": peer} if peer else {}), "method": method, "path": shown,
                       "route": route, "status": status,
                       "duration_ms": round(duration * 1000, 1), "questions": len(answers),
                       "reads": getattr(_local, "reads", 0), "input_tokens": tokens,
                       "engine_tokens": engine_tokens, "cut_questions": cut}, ensure_ascii=True)


def _answers_and_usage(doc) -> tuple[list, dict]:
    """A decision document's answers (a map on /v1/systemone, a list on /v1/decisions)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("usage"), dict):
        return [], {}
    answers = doc.get("answers")
    answers = list(answers.values()) if isinstance(answers, dict) else answers
    return (answers if isinstance(answers, list) else []), doc["usage"]


def _int(value) -> int:
    return value if type(value) is int and value > 0 else 0
