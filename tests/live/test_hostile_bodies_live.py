"""Hostile bodies against a shim in front of the session's real vLLM, at the default limits: 64
bodies at once, every kind of tests/support/hostile_bodies.py mixed (structure bombs, tiny
strings and numbers, placeholder amplification, one huge string, gzip'd to the decoded cap or
plain at the wire cap). Each gets a 4xx within 5 s, the shim's peak memory stays under 1 GiB
above where it started, and meanwhile /health answers and a normal decision gets the model's
real answer."""
import threading

import pytest

from tests.support import hostile_bodies
from tests.support.live_stack import free_port, start_shim, wait_health

BODIES = 64


@pytest.fixture(scope="module")
def shim(stack):
    port = free_port()
    proc = start_shim(stack.vllm_url, port)
    threading.Thread(target=lambda: proc.stdout.read(), daemon=True).start()  # keep it draining
    try:
        wait_health(f"http://127.0.0.1:{port}", {"ok"}, timeout=300)
        yield ("127.0.0.1", port), proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@pytest.mark.parametrize("kind", ["mixed", "one wide string"])
def test_64_hostile_bodies_beside_a_real_decision(shim, kind):
    """Each of 64 bodies at once a 4xx (no answer within hostile_bodies.send's guard is a 0),
    the shim's peak memory bounded, a real decision and /health answered beside them. `one wide
    string` alone: 64 strings of 12 MiB with an emoji (Python holds each character in 4 bytes)
    once cost 85 ms of the shim's lock each; that they never reach json.loads is counted in
    tests/unit/body/test_decode.py."""
    addr, pid = shim
    cases = [c for c in hostile_bodies.cases() if kind == "mixed" or c.name.startswith(kind)]
    sent = [cases[i % len(cases)] for i in range(BODIES)]
    rnd = hostile_bodies.round_of(addr, pid, [c.raw({}) for c in sent])
    wrong = [(c.name, status) for c, (status, _) in zip(sent, rnd.hostile) if status // 100 != 4]
    assert wrong == []
    assert rnd.growth_kib < 1 << 20, f"peak RSS grew {rnd.growth_kib // 1024} MiB"
    assert rnd.health[0] == 200
    status, _, doc, _ = rnd.decision
    assert status == 200, doc
    refund, team = doc["answers"]["refund"], doc["answers"]["team"]
    assert 0 <= refund["noul"] <= 1
    assert set(team["probabilities"]) == {"billing", "tech", "sales"}
    assert abs(sum(team["probabilities"].values()) - 1) < 1e-6
    assert doc["usage"]["input_tokens"] > 0  # read by the model, not refused before it
