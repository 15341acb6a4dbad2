"""Hostile clients against a shim in front of the session's real vLLM, from a second loopback
address (127.0.0.2) while a normal decision comes from 127.0.0.1 (tests/support/
hostile_clients.py): 64 slow bodies from one address hold no in-flight slot, so the other's
decision is answered; one address past its share of the in-flight slots gets a 529 naming it
while the other is answered; tiny chunks are a 400 at once (the same state in larger chunks is
answered); stacked and unknown encodings a 415 before anything is claimed; a placeholder past
256 characters a 422."""
import gzip
import json
import threading
import time
import urllib.request

import pytest

from tests.support import hostile_clients as hc
from tests.support.hostile_bodies import NORMAL
from tests.support.edge_client import read_response
from tests.support.live_stack import free_port, start_shim, wait_health


def shim_at(stack, env=None):
    port = free_port()
    proc = start_shim(stack.vllm_url, port, env)
    threading.Thread(target=lambda: proc.stdout.read(), daemon=True).start()  # keep it draining
    wait_health(f"http://127.0.0.1:{port}", {"ok"}, timeout=300)
    return proc, ("127.0.0.1", port)


@pytest.fixture(scope="module")
def shim(stack):
    proc, addr = shim_at(stack)
    yield addr
    proc.terminate()
    proc.wait(timeout=60)


def answered(status_and_doc) -> None:
    status, doc = status_and_doc
    assert status == 200, doc
    assert set(doc["answers"]["team"]["probabilities"]) == {"billing", "tech", "sales"}


def decide(addr, source, data=None, headers=None) -> tuple:
    sock = hc.connect(addr, source)
    with sock:
        try:
            sock.sendall(data or hc.post(json.dumps(NORMAL).encode(), headers or {}))
        except OSError:
            pass  # refused mid-body: its answer is waiting
        status, _, raw = read_response(sock.makefile("rb"))
    return status, json.loads(raw)


def test_slow_bodies_from_one_address_leave_the_others_served(shim):
    """64 connections from 127.0.0.2, each a head of Content-Length 100000 and five bytes: the
    slots are taken once a body is read, so a decision from 127.0.0.1 is answered (it was a 529
    while they held all 64 slots)."""
    slow = hc.SlowBodies(shim, {}, 64)
    try:
        time.sleep(0.5)
        answered(decide(shim, hc.OTHER_SOURCE))
    finally:
        slow.close()


def test_an_address_past_its_share_of_the_slots_is_refused_alone(stack):
    """With 4 slots (a share of 1 each): while a long decision from 127.0.0.2 holds its slot,
    a second from 127.0.0.2 gets a 529 naming its address's share, with Retry-After; one from
    127.0.0.1 is answered."""
    proc, addr = shim_at(stack, {"ONEPASS_MAX_IN_FLIGHT": "4"})
    try:
        long = dict(NORMAL, questions={f"q{i}": {"type": "noul", "instructions": f"Is {i} odd?"}
                                       for i in range(60)})
        first = threading.Thread(target=lambda: decide(addr, hc.HOSTILE_SOURCE, hc.post(
            json.dumps(long).encode(), {})))
        first.start()
        for _ in range(3000):  # polls, a guard: its body read, its slot taken
            if in_flight(addr) >= 1:
                break
            time.sleep(0.01)
        else:
            pytest.fail("the long decision never took a slot")
        status, doc = decide(addr, hc.HOSTILE_SOURCE)
        assert status == 529, doc
        assert "your address" in doc["detail"]["message"]
        answered(decide(addr, hc.OTHER_SOURCE))
        first.join(120)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def in_flight(addr) -> int:
    with urllib.request.urlopen(f"http://{addr[0]}:{addr[1]}/metrics", timeout=5) as r:
        text = r.read().decode()
    line = next(x for x in text.splitlines()
                if x.startswith("onepass_in_flight_requests "))
    return int(float(line.split()[1]))


def test_tiny_chunks_are_refused_at_once_and_larger_ones_answered(shim):
    """A 2 MiB state in 2-byte chunks: a 400 naming them (it took 12 s and 104 MiB to answer:
    how many tiny chunks are read before the refusal is counted in
    tests/unit/edge/test_framing.py); the same body in 16 KiB chunks is answered."""
    data = hc.body("x" * hc.STATE_BYTES)
    status, doc = decide(shim, hc.HOSTILE_SOURCE, hc.chunked_post(data, 2, {}))
    assert status == 400, doc
    assert "chunks are too small" in doc["detail"]["message"]
    status, doc = decide(shim, hc.HOSTILE_SOURCE, hc.chunked_post(data, 16 << 10, {}))
    assert status == 200, doc


@pytest.mark.parametrize("coding", ["gzip, gzip", "br", "gzip, deflate"])
def test_stacked_and_unknown_encodings_are_415(shim, coding):
    data = gzip.compress(gzip.compress(json.dumps(NORMAL).encode()))
    status, doc = decide(shim, hc.HOSTILE_SOURCE, hc.post(data, {"Content-Encoding": coding}))
    assert status == 415, doc
    status, doc = decide(shim, hc.HOSTILE_SOURCE, hc.post(gzip.compress(json.dumps(
        NORMAL).encode()), {"Content-Encoding": "gzip"}))
    assert status == 200, doc


def test_a_placeholder_past_its_cap_is_422(shim):
    """An asset placeholder of a million characters: 422 naming the 256-character cap, the
    name cut in the refusal."""
    status, doc = decide(shim, hc.HOSTILE_SOURCE, hc.placeholder_post({}))
    assert status == 422, doc
    text = json.dumps(doc)
    assert "at most 256 characters" in text
    assert len(text) < 4000
