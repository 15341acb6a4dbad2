"""vLLM's heartbeat against the real vLLM: serve.sh's vLLM stopped with SIGSTOP (alive, answering
nothing: a hung engine) turns the shim's /health 503 `unresponsive` with the reason, at the
shipped interval and bound (ONEPASS_ENGINE_PROBE_INTERVAL_S 5, _BOUND_S 10); after SIGCONT it
is 200 again and decisions are answered. vLLM is resumed in a `finally`, and the test ends only
once the stack answers as before, so the session's other tests find it as they left it. Each
wait polls for the state; its deadline only fails the test with what was last seen."""
import os
import signal
import time

from tests.support.live_bodies import NOUL, body

GUARD_S = 180  # a guard only: detection takes about interval + bound


def until(stack, what, want):
    deadline, last = time.monotonic() + GUARD_S, None
    while time.monotonic() < deadline:
        try:
            last = stack.request("GET", "/health")
        except OSError as e:
            last = e
        if not isinstance(last, OSError) and want(last[0], last[2]):
            return last[2]
        time.sleep(0.5)
    raise AssertionError(f"/health never {what}; last: {last}")


def test_a_stopped_vllm_turns_health_503_with_the_reason_then_200(stack):
    until(stack, "200 before the test", lambda status, doc: status == 200)
    group = stack.vllm_pid  # serve.sh starts vLLM with setsid: its API server leads the group
    assert os.getpgid(stack.vllm_pid) == group
    os.killpg(group, signal.SIGSTOP)
    try:
        doc = until(stack, "turned 503 unresponsive",
                    lambda status, doc: status == 503 and doc.get("status") == "unresponsive")
        assert (doc["warming"], doc["draining"]) == (False, False), doc
        assert "vLLM did not answer GET /health within 10 s" in doc["reason"], doc
    finally:
        os.killpg(group, signal.SIGCONT)
    doc = until(stack, "came back to 200 after SIGCONT", lambda status, doc: status == 200)
    assert doc["status"] == "ok", doc
    status, _, answer = stack.request("POST", "/v1/systemone", body({"r": NOUL}))
    assert status == 200 and "r" in answer["answers"], answer
