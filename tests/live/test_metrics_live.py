"""GET /metrics and the access log against real vLLM: a shim of its own (with an API key) before
the session's vLLM, real requests on both APIs, then a scrape parsed by prometheus_client; the
counters moved by exactly what the answers report, and the access log is JSON lines without
bodies or keys."""
import json
import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.json_http import request
from tests.support.live_stack import free_port, start_shim, wait_health

KEY = "k-live-metrics-7f3a"
AUTH = {"Authorization": f"Bearer {KEY}"}
MARKER = "PRIVATE-STATE-MARKER-91c2"  # in every body sent: it must never reach the log
NOUL = {"type": "noul", "instructions": "Is the customer asking for money back?"}
CHOICE = {"type": "choice", "instructions": "Which team?",
          "criteria": {"billing": "Payments", "tech": "Bugs", "sales": None}}
SCORE = {"type": "score", "instructions": "How angry?", "criteria": ["Calm", "Annoyed", "Furious"]}


@pytest.fixture(scope="module")
def shim(stack):
    port = free_port()
    # a long engine timeout: the cut question's 4,096-token read may share the CPU with others
    proc = start_shim(stack.vllm_url, port, {"ONEPASS_API_KEY": KEY},
                      args=("--engine-timeout-s", "600"))
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_health(base, {"ok"}, timeout=300)
        yield base, proc, lines, reader
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=60)


def scrape(base: str) -> dict:
    """{(sample name, frozenset(labels)): value} from a real scrape, parsed by prometheus_client."""
    import http.client
    host, port = base.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", "/metrics", headers=AUTH)
    r = conn.getresponse()
    text = r.read().decode()
    assert r.status == 200 and r.getheader("Content-Type").startswith("text/plain; version=0.0.4")
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def delta(before: dict, after: dict, name: str, **labels) -> float:
    key = (name, frozenset(labels.items()))
    return after.get(key, 0) - before.get(key, 0)


def test_metrics_need_the_key(shim):
    """The same rule as the decision routes: 401 without a key and with a wrong one."""
    base = shim[0]
    for headers, status in (({}, 401), ({"Authorization": "Bearer wrong"}, 401)):
        got, _, doc = request(base, "GET", "/metrics", headers=headers)
        assert (got, doc["detail"]["error_type"]) == (status, "authentication_error")
    assert request(base, "GET", "/openapi.json", headers=AUTH)[0] == 200


def test_counters_move_by_what_the_answers_report(shim):
    base, proc, lines, reader = shim
    before = scrape(base)
    long_state = " ".join(f"{MARKER} paragraph {i}: the customer wrote about the weather."
                          for i in range(400))  # past the 4,096-token context: cut to fit
    sent = [("/v1/systemone", {"model": "jev-latest", "state": f"{MARKER} refund please",
                               "questions": {"r": NOUL, "t": CHOICE, "a": SCORE}}),
            ("/v1/decisions", {"model": "jev-latest", "input": f"{MARKER} refund please",
                               "questions": [{"type": "predicate", "instructions": "Refund?"},
                                             {"type": "choice", "instructions": "Team?",
                                              "choices": [{"value": "a"}, {"value": True}]}]}),
            ("/v1/systemone", {"model": "jev-latest", "state": long_state,
                               "questions": {"r": NOUL}}),
            ("/v1/systemone", {"model": "jev-latest", "state": MARKER,
                               "questions": {"r": {"type": "boolean"}}})]
    replies = [request(base, "POST", path, body, AUTH) for path, body in sent]
    assert [r[0] for r in replies] == [200, 200, 200, 422]
    after = scrape(base)
    docs = [r[2] for r in replies[:3]]

    assert delta(before, after, "onepass_requests_total", route="/v1/systemone",
                 status="200") == 2
    assert delta(before, after, "onepass_requests_total", route="/v1/systemone",
                 status="422") == 1
    assert delta(before, after, "onepass_requests_total", route="/v1/decisions",
                 status="200") == 1
    for status_class, n in (("2xx", 2), ("4xx", 1), ("5xx", 0)):
        assert delta(before, after, "onepass_request_duration_seconds_count",
                     route="/v1/systemone", status_class=status_class) == n, status_class
    for kind, n in (("noul", 2), ("choice", 2), ("score", 1), ("predicate", 1)):
        assert delta(before, after, "onepass_questions_total", type=kind) == n, kind
    tokens = sum(d["usage"]["input_tokens"] for d in docs)
    assert delta(before, after, "onepass_input_tokens_total") == tokens
    cut = len(docs[2]["x_effort_used"]["state_selection"])
    assert cut == 1 and delta(before, after, "onepass_cut_questions_total") == 1
    assert after[("onepass_phase", frozenset({("phase", "ready")}))] == 1
    assert after[("onepass_phase", frozenset({("phase", "warming")}))] == 0
    assert after[("onepass_in_flight_requests", frozenset())] == 0
    # every error kind is a series from the start, and the build says what is served
    for kind in ("timeout", "unreachable", "not_json", "unavailable", "failed",
                 "context_length", "two_way_budget", "bad_answer"):
        assert ("onepass_engine_errors_total", frozenset({("kind", kind)})) in after, kind
    info = [dict(labels) for name, labels in after if name == "onepass_build_info"]
    assert [i["model"] for i in info] == ["onepass-smollm2-135m-instruct"], info
    assert after[("process_resident_memory_bytes", frozenset())] > 0

    # the access log: one JSON line per request, its counts the same as the scrape's
    proc.terminate()
    proc.wait(timeout=60)
    reader.join(timeout=10)
    access = [json.loads(line) for line in lines if line.startswith("{")]
    ids = [r[1]["x-typesafe-request-id"] for r in replies]
    mine = {a["request_id"]: a for a in access if a["request_id"] in ids}
    assert list(mine) == ids
    for (path, _), reply, rid in zip(sent, replies, ids):
        entry = mine[rid]
        assert {"ts", "request_id", "method", "path", "route", "status", "duration_ms",
                "questions", "reads", "input_tokens"} <= set(entry)
        assert (entry["method"], entry["route"], entry["status"]) == ("POST", path, reply[0])
    assert [mine[i]["questions"] for i in ids] == [3, 2, 1, 0]
    assert [mine[i]["input_tokens"] for i in ids[:3]] == [d["usage"]["input_tokens"] for d in docs]
    reads = sum(mine[i]["reads"] for i in ids)
    assert reads >= 6 and delta(before, after, "onepass_engine_reads_total") == reads
    text = "".join(lines)
    assert MARKER not in text and KEY not in text
    assert all(line.startswith("{") or " onepass " in line for line in lines), lines[-5:]


def test_vllm_metrics_beside_the_shims(stack):
    """docs/metrics.md's second scrape job: vLLM's own /metrics on its port, no key, parsed by
    prometheus_client, with the series the docs point at."""
    import urllib.request
    with urllib.request.urlopen(stack.vllm_url + "/metrics", timeout=30) as r:
        assert r.status == 200
        text = r.read().decode()
    names = {s.name for family in text_string_to_metric_families(text) for s in family.samples}
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting",
                 "vllm:kv_cache_usage_perc", "vllm:prompt_tokens_total",
                 "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
                 "vllm:request_queue_time_seconds_count",
                 "vllm:request_prefill_time_seconds_count",
                 "vllm:e2e_request_latency_seconds_count"):
        assert name in names, name
