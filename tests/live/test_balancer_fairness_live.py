"""Per-address fairness behind the balancer: HAProxy with deploy/haproxy.cfg (send-proxy-v2),
rendered and run by deploy/cluster.py, before a shim of its own on the session's vLLM with the
settings cluster.py gives its shims (ONEPASS_TRUSTED_PROXIES: the balancer's address). Two
clients call through the balancer from their own addresses: a hostile one (127.0.0.2) holds
its whole share of the shim's body budget with bodies it never finishes, and names the other
client in a forged X-Forwarded-For; the well-behaved one (127.0.0.3) is still answered 200,
and the 529 "from your address" lands on the hostile one alone, as the shim's access log says.
Without the trusted proxy every client is the balancer's address, and the well-behaved one gets
the hostile one's 529. A PROXY header sent straight to the shim by the hostile client is a 400.
"""
import json
import threading
import time

import pytest

from onepass.body.limits import reading
from onepass.edge.framing import PIECE
from tests.live.test_balancer_live import Cluster, find_haproxy
from tests.support import hostile_clients as hc
from tests.support.edge_client import exchange, request
from tests.support.hostile_bodies import NORMAL
from tests.support.live_stack import clean_env, free_port, start_shim

HOSTILE, WELL = "127.0.0.2", "127.0.0.3"
HELD = 2 * reading(PIECE)  # a stalled body past its first piece: two pieces claimed
HOLDS = 3  # the hostile client's stalled bodies: its whole share together
SHARE = HOLDS * HELD


@pytest.fixture(scope="module")
def fronted(stack, tmp_path_factory):
    """(the balancer's address, the shim's, the shim's output lines) with the shim in
    rotation; each address's share of the body budget is SHARE."""
    find_haproxy()
    port = free_port()
    cluster = Cluster([(port, 0)], free_port(), tmp_path_factory.mktemp("fairness"), clean_env())
    settings = {k: v for k, v in cluster.env.items() if k.startswith("ONEPASS_")}
    proc, lines = None, []
    try:
        cluster.start_balancer()
        proc = start_shim(stack.vllm_url, port,
                          {**settings, "ONEPASS_BODY_BUDGET_PER_SOURCE": str(SHARE)})
        threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
        cluster.wait_state("s1", {"UP"}, 300)
        yield ("127.0.0.1", cluster.lb_port), ("127.0.0.1", port), lines
    finally:
        cluster.close()
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=60)


def stalled(addr, headers: dict):
    """A body of 1 MB announced, a little more than one piece of it sent, then nothing: the
    shim claims its first two pieces (HELD) and waits for the rest."""
    sock = hc.connect(addr, HOSTILE)
    head = request("POST", "/v1/systemone", b"", {"Content-Type": "application/json", **headers})
    sock.sendall(head.replace(b"Content-Length: 0", b"Content-Length: 1000000")
                 + b"x" * (PIECE + PIECE // 2))
    return sock


def one(addr, data: bytes, source: str) -> tuple[int, dict]:
    [(status, _, body)], _ = exchange(addr, data, timeout=120, source=source)
    return status, json.loads(body)


def access(lines: list) -> list[dict]:
    return [json.loads(x[x.index('{"ts"'):]) for x in list(lines) if '{"ts"' in x]


def test_the_hostile_client_alone_is_refused(fronted):
    lb, shim, lines = fronted
    forged = {"X-Forwarded-For": WELL}  # behind an untrusted client: ignored
    # a body the shim admits is a 422 (no engine work); once the hostile client's stalled
    # bodies hold its share, its next is refused at once
    probe = hc.post(b"{}", forged)
    held = [stalled(lb, forged) for _ in range(HOLDS)]
    try:
        for _ in range(60):
            status, doc = one(lb, probe, HOSTILE)
            if status != 422:
                break
            time.sleep(0.25)
        assert status == 529, doc
        assert "from your address" in doc["detail"]["message"], doc
        status, doc = one(lb, hc.post(json.dumps(NORMAL).encode(), {}), WELL)
        assert status == 200, doc
        assert one(lb, probe, HOSTILE)[0] == 529  # its share is still held
    finally:
        for sock in held:
            sock.close()
    posts = [x for x in access(lines) if x["method"] == "POST"]
    refused = [x for x in posts if x["status"] == 529]
    assert refused and all((x["client"], x["peer"]) == (HOSTILE, "127.0.0.1") for x in refused)
    answered = [x for x in posts if x["status"] == 200]
    assert [(x["client"], x["peer"]) for x in answered] == [(WELL, "127.0.0.1")]
    # the balancer's checks name no client (a LOCAL header): the balancer itself
    assert {x["client"] for x in access(lines) if x["path"] == "/health"} == {"127.0.0.1"}


def test_a_proxy_header_from_a_client_is_refused(fronted):
    _, shim, _ = fronted
    spoof = f"PROXY TCP4 {WELL} 127.0.0.1 40000 80\r\n".encode()
    status, doc = one(shim, spoof + hc.post(b"{}", {}), HOSTILE)
    assert status == 400
    assert "not a trusted proxy" in doc["detail"]["message"], doc
