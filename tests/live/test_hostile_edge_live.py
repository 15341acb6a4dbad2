"""Hostile clients of the HTTP edge, against the session's real vLLM: heads with no
body from four addresses hold next to nothing of the body budget (they held all of it, and
another client's small decision got a 529); a client that sends one byte more after its
request and then closes stops its decision's engine work (the byte hid the close until the
180 s deadline); and vLLM started as `VLLM_PATCHES=1 bash serve.sh` starts it keeps every route
but /health and /metrics behind its key (its guard was left out: /invocations answered anyone).
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from onepass.edge.watch import POLL_S
from tests.live.test_abandon_live import access_lines, leave_and_settle, shim_metric
from tests.support import hostile_clients as hc
from tests.support.dry_run import dry_run, parse
from tests.support.hostile_bodies import NORMAL
from tests.support.json_http import request
from tests.support.live_stack import (SMOLLM2, clean_env, free_port, fresh_key, start_shim,
                                      wait_health)
from tests.support.paths import FAST_PROFILE, ROOT


@pytest.fixture(scope="module")
def shim(stack):
    """A shim of its own at the default limits (128 MiB body budget, 32 MiB an address)."""
    port = free_port()
    proc = start_shim(stack.vllm_url, port)
    threading.Thread(target=lambda: proc.stdout.read(), daemon=True).start()  # keep it draining
    wait_health(f"http://127.0.0.1:{port}", {"ok"}, timeout=300)
    yield ("127.0.0.1", port)
    proc.terminate()
    proc.wait(timeout=60)


def test_heads_without_bodies_leave_the_budget_to_others(shim):
    """From 127.0.0.2-5, two connections each, a chunked head and a `Content-Length: 8388608`
    head, then nothing: they claimed 24 + 8 MiB an address, all 128 MiB, and a 2 KB decision
    from 127.0.0.1 got a 529 after the 5 s wait. It is answered while they wait."""
    socks = []
    try:
        for n in range(2, 6):
            for chunked in (True, False):
                socks.append(hc.connect(shim, f"127.0.0.{n}"))
                socks[-1].sendall(hc.head_only(chunked))
        time.sleep(1.0)  # the shim reads the heads (their claims were taken at once)
        data = json.dumps(dict(NORMAL, state="x" * 2000)).encode()
        status, _, retry = hc.send(shim, hc.post(data, {}), hc.OTHER_SOURCE, 120)
        assert (status, retry) == (200, False)
    finally:
        for sock in socks:
            sock.close()


def test_a_stray_byte_after_the_request_hides_no_close(stack):
    """A 192-read decision, then one byte (`G`) once vLLM works on it, seen alone by the
    watch, then a close: vLLM's token count stops growing within stop_bound of the step time
    measured here (the work ran on: the byte hid the close), the access log says 499 and the
    metric counts it."""
    def stray_byte(sock):
        sock.sendall(b"G")
        time.sleep(3 * POLL_S)  # polls see the byte alone: the old watch stopped here
    before = shim_metric(stack, "onepass_abandoned_requests_total")
    leave_and_settle(stack, before_close=stray_byte)
    assert shim_metric(stack, "onepass_abandoned_requests_total") == before + 1
    assert [x for x in access_lines(stack) if x["status"] == 499]


def patched_vllm_line(tmp, port: int):
    """The vLLM line `VLLM_PATCHES=1 bash serve.sh --dry-run` prints for the fast profile on
    CPU, with this venv's python (the patched venv is not set up here) and the built SmolLM2."""
    tmp.mkdir()
    out, _ = dry_run(tmp, VLLM_PATCHES="1", ONEPASS_PROFILE=FAST_PROFILE, ONEPASS_DEVICE="cpu",
                     ONEPASS_DTYPE="float32", ONEPASS_MODEL=str(SMOLLM2),
                     ONEPASS_VLLM_PORT=str(port), ONEPASS_VENV=sys.prefix)
    assert out.returncode == 0, out.stdout + out.stderr
    return parse(out.stdout)[FAST_PROFILE, "cpu"]["vllm"]


def test_vllm_patches_keeps_vllm_behind_its_key(tmp_path):
    """vLLM as VLLM_PATCHES=1 starts it (stock: no plugin named; the guard from engine/ on
    PYTHONPATH) answers /invocations and /generative_scoring only with its key, /health to
    anyone; with the key /invocations answers."""
    port, key = free_port(), fresh_key()
    line = patched_vllm_line(tmp_path / "dry-run", port)
    assert (line.env["VLLM_PLUGINS"], line.flag("--middleware")) == (
        "", "onepass_engine.guard.Guard")
    # as the live suite runs every vLLM (unbound, a small KV cache, offline), its key fresh
    env = {**clean_env(), **line.env, "VLLM_API_KEY": key, "VLLM_CPU_KVCACHE_SPACE": "1",
           "VLLM_CPU_OMP_THREADS_BIND": clean_env()["VLLM_CPU_OMP_THREADS_BIND"],
           "HF_HUB_OFFLINE": "1"}
    log = tmp_path / "vllm.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(line.argv, env=env, cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    url, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {key}"}
    try:
        deadline = time.monotonic() + 600
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "vLLM never answered"
            try:
                if request(url, "GET", "/v1/models", headers=auth, timeout=5)[0] == 200:
                    break
            except (OSError, ValueError):
                pass
            time.sleep(1)
        text = {"model": line.flag("--served-model-name"), "prompt": "Hello", "max_tokens": 1}
        for path, doc in (("/invocations", text), ("/generative_scoring", {})):
            got = request(url, "POST", path, doc)
            assert (got[0], got[2]) == (401, {"error": "Unauthorized"}), path
        assert request(url, "POST", "/invocations", text, auth)[0] == 200
        assert urllib.request.urlopen(url + "/health", timeout=30).status == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_slow_vision_upload_leaves_the_lane_to_others(vision_stack):
    """The vision profile's wire limit is 124 MB, so a chunked request claimed twice that before
    any byte arrived: past an address's share, it went to the lane, one request per address at
    most 128 MiB together, and one slow chunked upload from 127.0.0.2 held it for 30 s while
    every other chunked or image request got a 529 after 5 s. Claims now grow with the bytes
    that arrive: another address's chunked decision with an inline image, sent while the slow
    one trickles, is answered 200, and the slow one is still being read."""
    from tests.support.image_requests import RED, url
    host, port = vision_stack.url.split("//")[1].split(":")
    addr, stop = (host, int(port)), threading.Event()
    slow = hc.connect(addr, hc.HOSTILE_SOURCE)
    head = hc.chunked_post(b"", 1, {}).removesuffix(b"0\r\n\r\n")
    slow.sendall(head + hc.chunked(b'{"model": "jev-latest", "state": "', 64)[:-5])
    sent = []

    def trickle():  # a byte of state every 0.2 s until the other request is answered
        while not stop.wait(0.2):
            slow.sendall(b"1\r\nx\r\n")
            sent.append(1)
    thread = threading.Thread(target=trickle)
    thread.start()
    try:
        time.sleep(1.0)  # the slow upload is read (its claim taken) before the other arrives
        data = json.dumps({"model": "jev-latest", "state": {"photo": url(RED)}, "questions": {
            "dark": {"type": "noul", "instructions": "Is [image 1] dark?"}}}).encode()
        status = hc.send(addr, hc.chunked_post(data, 4096, {}), hc.OTHER_SOURCE, 300)[0]
    finally:
        stop.set()
        thread.join()
        slow.close()
    assert status == 200
    assert len(sent) >= 5  # the slow upload was still being read throughout
