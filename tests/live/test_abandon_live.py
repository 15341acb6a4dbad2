"""Work stops when nobody waits, against the session's real vLLM: a client that closes its
connection mid-decision stops the decision's engine work (vLLM computes no more tokens for it
within a second or so), the access log says 499 with the tokens spent, and the metric counts
it; the same body from a client that stays connected is answered. And one request id end to
end: a client's X-Request-Id is the response's, the access log's and, with a suffix per call,
vLLM's own request ids in its log (the traceparent header the shim sends with it is built in
tests/unit/test_inflight.py: vLLM logs it only with OpenTelemetry tracing configured)."""
import json
import re
import socket
import time
import urllib.request

from onepass.edge.watch import POLL_S

# 48 choices, each read in 4 orders, one read per order: 192 reads, seconds of engine work
BODY = {"model": "jev-latest", "state": "Ticket 7: the app crashes when I open my invoices.",
        "questions": {f"q{i}": {"type": "choice", "instructions": f"Which team, view {i}?",
                                "criteria": {"billing": "Payments", "tech": "Bugs",
                                             "sales": None, "legal": None}}
                      for i in range(48)},
        "kwargs": {"layout": {"orders": 4, "orders_as_reads": True}}}
DEADLINE_S = 1.5  # the deadline test_a_deadline_stops_the_work_and_answers_504 sends


def engine_tokens(vllm_url) -> float:
    """The tokens vLLM has computed (prompt plus generated), from its /metrics. Its
    running/waiting gauges are not read: they are refreshed only when a step's stats are
    recorded, so they lag the work by a step or more, and a read that finishes inside the step
    that schedules it never shows in them."""
    text = urllib.request.urlopen(vllm_url + "/metrics", timeout=30).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if re.match(r"vllm:(prompt|generation)_tokens_total\{", line))


def step_seconds(vllm_url, until: float, steps: int = 4) -> float:
    """The longest time between growths of the token count over `steps` growths while vLLM
    works on a decision: its step time here and now (each step of a decision's reads finishes
    some, and the count grows once per step), measured in the run that uses it."""
    seen, last, gaps = engine_tokens(vllm_url), None, []
    while len(gaps) < steps:
        assert time.monotonic() < until, "vLLM never ran the decision's reads"
        now, tokens = time.monotonic(), engine_tokens(vllm_url)
        if tokens != seen:
            if last is not None:
                gaps.append(now - last)
            seen, last = tokens, now
        time.sleep(0.01)
    return max(gaps)


def settled_after(vllm_url, since: float, bound: float, quiet: float) -> tuple[float, float]:
    """(seconds from `since` to the token count's last growth, the count): watched until
    `bound` plus `quiet` seconds after `since`."""
    seen, last = engine_tokens(vllm_url), since
    while time.monotonic() < since + bound + quiet:
        tokens = engine_tokens(vllm_url)
        if tokens != seen:
            seen, last = tokens, time.monotonic()
        time.sleep(0.02)
    return last - since, seen


def stop_bound(step_s: float) -> float:
    """How soon after its cut a decision's engine work stops: the shim notices a client that
    left within watch.POLL_S and cuts its calls at once; vLLM may finish the step it is running
    and the one it has scheduled, and the abort reaches its engine core within one more."""
    return POLL_S + 3 * step_s


def shim_metric(stack, name) -> float:
    text = urllib.request.urlopen(stack.url + "/metrics", timeout=30).read().decode()
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def send(url, body, head: bytes = b"") -> socket.socket:
    """POST `body` on a new connection, and return it unread."""
    host, port = url.split("//")[1].split(":")
    sock = socket.create_connection((host, int(port)))
    data = json.dumps(body).encode()
    sock.sendall(f"POST /v1/systemone HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
                 + b"Content-Type: application/json\r\n" + head
                 + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return sock


def access_lines(stack) -> list[dict]:
    lines = []
    for line in (stack.log_dir / "shim.log").read_text(errors="replace").splitlines():
        start = line.find('{"ts"')
        if start >= 0:
            lines.append(json.loads(line[start:]))
    return lines


def leave_and_settle(stack, head=b"", before_close=None) -> tuple:
    """BODY sent (`head` first) until vLLM works on its reads, `before_close(sock)` if given,
    then the client closes: vLLM's token count must stop growing within stop_bound of the step
    time measured here. (before, stopped, tokens): the count before it was sent, how long
    after the close the count stopped, and the count then."""
    before, opened = engine_tokens(stack.vllm_url), time.monotonic()
    sock = send(stack.url, BODY, head)
    step_s = step_seconds(stack.vllm_url, opened + 30)  # vLLM works on its reads
    if before_close is not None:
        before_close(sock)
    sent = time.monotonic()
    sock.close()
    bound = stop_bound(step_s)
    stopped, tokens = settled_after(stack.vllm_url, sent, bound, max(3.0, 10 * step_s))
    print(f"step {step_s:.3f} s; tokens stopped {stopped:.3f} s after the close (bound "
          f"{bound:.3f} s)")
    assert stopped <= bound, (stopped, bound, step_s)
    return before, stopped, tokens


def test_a_client_that_leaves_stops_its_engine_work(stack, head=b""):
    """vLLM computes for the decision while its client waits; once the client closes, vLLM's
    token count stops growing within stop_bound of the step time measured here, and grows no
    more for a further while; the access log says 499 and the metric counts it; the connected
    twin gets its answer, and vLLM computes more tokens for it than for the one that left.
    Tokens, not seconds: the twin reuses the prefix cache the first one filled, so its time
    says nothing of what was cut (vLLM counts a prompt's cached tokens too)."""
    count = shim_metric(stack, "onepass_abandoned_requests_total")
    before, _, tokens = leave_and_settle(stack, head)
    assert shim_metric(stack, "onepass_abandoned_requests_total") == count + 1
    left = [x for x in access_lines(stack) if x["status"] == 499]
    assert left and "engine_tokens" in left[-1], left
    status, _, doc = stack.request("POST", "/v1/systemone", BODY)
    assert status == 200 and len(doc["answers"]) == 48
    full, cut = engine_tokens(stack.vllm_url) - tokens, tokens - before
    print(f"tokens: {cut:.0f} for the one that left, {full:.0f} for its twin")
    assert full > cut, (full, cut)


def test_one_request_id_end_to_end(stack):
    """The client's id in the response, the access log and vLLM's log (`<id>-<n>` per call);
    an unsafe id is replaced by the shim's own."""
    rid = f"probe-{time.time_ns()}"
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    body = {"model": "jev-latest", "state": "Order 12 arrived broken.",
            "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}
    status, headers, _ = stack.request("POST", "/v1/systemone", body,
                                       {"X-Request-Id": rid, "traceparent": parent})
    assert status == 200 and headers["x-request-id"] == rid
    assert headers["x-typesafe-request-id"] == rid
    assert any(x["request_id"] == rid and x["status"] == 200 for x in access_lines(stack))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # vLLM's log is written by its own process
        vllm_log = (stack.log_dir / "vllm.log").read_text(errors="replace")
        if re.search(rf"Received request \S*{re.escape(rid)}-\d+", vllm_log):
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"{rid} not in vLLM's log")
    status, headers, _ = stack.request("POST", "/v1/systemone", body,
                                       {"X-Request-Id": "bad id\u00e9" * 3})
    assert status == 200 and headers["x-request-id"].startswith("req_")


def test_unsafe_traceparent_and_ids_are_not_passed(stack):
    """A request id past 128 characters is replaced; the request still answers."""
    body = {"model": "jev-latest", "state": "x",
            "questions": {"a": {"type": "noul", "instructions": "Yes?"}}}
    status, headers, _ = stack.request("POST", "/v1/systemone", body,
                                       {"X-Request-Id": "a" * 129, "traceparent": "nonsense"})
    assert status == 200 and headers["x-request-id"].startswith("req_")


def expect_under(stack, seconds: float, most: int = 60) -> float:
    """Answer small decisions until the shim expects a decision admitted now to take under
    `seconds` (its estimate, learned from the decisions before, such as the 192-read ones
    above, is what admission holds a deadline against); the estimate reached."""
    small = {"model": "jev-latest", "state": "Order 12 arrived broken.",
             "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}
    for _ in range(most):
        expected = shim_metric(stack, "onepass_expected_answer_seconds")
        if expected < seconds:
            return expected
        status, _, _ = stack.request("POST", "/v1/systemone", small)
        assert status == 200
    raise AssertionError(f"still {expected:.2f} s expected after {most} small decisions")


def test_a_deadline_stops_the_work_and_answers_504(stack):
    """x-envoy-expected-rq-timeout-ms: 1500 on the 192-read decision, admitted (the shim's
    estimate first brought under half the deadline; one past it is refused at once with a 529,
    tests/unit/test_server.py): a 504 in the API's error shape after vLLM worked on it, no later
    than the deadline it asked for plus stop_bound of the step time (measured first on a
    decision whose client leaves), vLLM's token count still within that bound after it, and
    the access log's 504."""
    sock = send(stack.url, BODY)
    step_s = step_seconds(stack.vllm_url, time.monotonic() + 30)
    sock.close()
    settled_after(stack.vllm_url, time.monotonic(), stop_bound(step_s), 0.0)
    expect_under(stack, 0.75)
    tokens, t = engine_tokens(stack.vllm_url), time.monotonic()
    deadline = {"x-envoy-expected-rq-timeout-ms": f"{DEADLINE_S * 1000:.0f}"}
    status, headers, doc = stack.request("POST", "/v1/systemone", BODY, deadline)
    took = time.monotonic() - t
    assert status == 504 and doc["detail"]["error_type"] == "deadline_exceeded", doc
    assert engine_tokens(stack.vllm_url) > tokens  # admitted and run, not refused at once
    bound = stop_bound(step_s)
    assert took <= DEADLINE_S + bound, (took, bound, step_s)
    stopped, _ = settled_after(stack.vllm_url, t + took, bound, max(3.0, 10 * step_s))
    print(f"step {step_s:.3f} s; tokens stopped {stopped:.3f} s after the 504 (bound "
          f"{bound:.3f} s)")
    assert stopped <= bound, (stopped, bound, step_s)
    rid = headers["x-request-id"]
    assert any(x["request_id"] == rid and x["status"] == 504 for x in access_lines(stack))
