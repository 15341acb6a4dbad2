"""The issue's hostile-client recipes (bench/lib/hostile_recipes.py) run against a live shim:
for each, the hostile client from 127.0.0.2 (to .5), and meanwhile a well-behaved client on
127.0.0.1 sending its own request back to back, its quiet p50 measured alone just before (five
sends, after one not counted); the shim's peak RSS growth while the hostile client runs. Before a real vLLM a recipe
starts only once vLLM's token count has stopped growing (the previous recipe's work done).
Imported by bench/measure/hostile_clients.py.
"""
import json
import secrets
import socket
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
import hostile_recipes as hr  # noqa: E402
from onepass.backend.warmup import png  # noqa: E402
from onepass.edge.watch import POLL_S  # noqa: E402
from tests.live.test_abandon_live import (BODY, engine_tokens, settled_after,  # noqa: E402
                                          step_seconds, stop_bound)
from tests.support import hostile_clients as hc  # noqa: E402
from tests.support.edge_client import ShimProcess, read_response  # noqa: E402
from tests.support.hostile_bodies import Memory  # noqa: E402

QUIET_SENDS = 5
PACE_S = 0.25  # the well-behaved client starts a request at most this often (a client, not a flood)
TRICKLE_S = 30.0  # the slow upload's length; the slow image answers a byte a second


class SmallImage(BaseHTTPRequestHandler):
    data = png(64, 64, (200, 30, 30))

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(self.data)))
        self.end_headers()
        self.wfile.write(self.data)

    def log_message(self, *args):
        pass


class TrickleImage(SmallImage):
    """Announces 100,000 bytes, then sends one a second until the fetch gives up."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        try:
            for byte in self.data[:120]:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(1.0)
        except OSError:
            pass  # the shim stopped reading


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # the shim closing a fetch it gave up on is expected here


def serve(handler) -> ThreadingHTTPServer:
    server = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@dataclass
class Stack:
    shim: ShimProcess
    headers: dict
    vllm_url: str | None  # a real vLLM (its /metrics), None before the fake engine
    window_s: float
    link_url: str = ""  # a small image, for the well-behaved link request
    trickle_url: str = ""


class Loop:
    """The well-behaved client: `send()` on its own thread from start to stop, one request
    at a time, each PACE_S after the one before started or when it ends, if later (the
    request in flight at stop finishes); `results`: (status, seconds) each."""

    def __init__(self, send):
        self.send, self.results, self.done = send, [], threading.Event()

    def run(self):
        while not self.done.is_set():
            self.results.append(self.send())
            self.done.wait(max(0.0, PACE_S - self.results[-1][1]))

    def start(self):
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def stop(self):
        self.done.set()
        self.thread.join()


def well_behaved(stack: Stack, name: str) -> tuple:
    """(what it sends, a send: (status, seconds))."""
    addr, headers = stack.shim.addr, stack.headers
    kinds = {
        "trickle_body": ("a chunked decision", hr.chunked_head(headers)
                         + hr.chunk(hr.decision_json()) + b"0\r\n\r\n"),
        "trickle_link": ("a decision with a link to a 64x64 image",
                         hc.post(hr.decision_json(images=[stack.link_url]), headers)),
        "expensive": ("one noul question, x-envoy-expected-rq-timeout-ms: 20000",
                      hr.cheap(headers))}
    what, data = kinds.get(name, ("the normal decision", hc.post(hr.decision_json(), headers)))
    return what, lambda: hc.send(addr, data, hc.OTHER_SOURCE, 600)[:2]


def while_running(hostile, loop: Loop, delay_s: float = 0.1) -> dict:
    """`hostile()` on a thread; `delay_s` into it the loop starts, and stops when it ends."""
    out = {}
    thread = threading.Thread(target=lambda: out.update(hostile()))
    thread.start()
    time.sleep(delay_s)
    loop.start()
    thread.join()
    loop.stop()
    return out


def one_request(stack: Stack, data: bytes, loop: Loop) -> dict:
    def hostile():
        status, secs, _ = hc.send(stack.shim.addr, data, hc.HOSTILE_SOURCE, 600)
        return {"status": status, "seconds": round(secs, 2)}
    return while_running(hostile, loop)


def answered(sock) -> str:
    """The status a held request got so far, without waiting: "open" when none."""
    sock.settimeout(0)  # with a timeout, recv would first wait that long for a byte
    try:
        if not sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT):
            return "closed"
    except BlockingIOError:
        return "open"
    except OSError:
        return "reset"
    sock.settimeout(5)
    try:
        return str(read_response(sock.makefile("rb"))[0])
    except (OSError, AssertionError):
        return "cut"


def heads(stack: Stack, loop: Loop) -> dict:
    socks = []
    try:
        for n in range(2, 6):
            for chunked in (True, False):
                socks.append(hc.connect(stack.shim.addr, f"127.0.0.{n}"))
                socks[-1].sendall(hc.head_only(chunked, stack.headers))
        time.sleep(1.0)  # the shim reads the heads
        loop.start()
        time.sleep(stack.window_s)
        loop.stop()
        return {"held": f"{len(socks)} heads, {stack.window_s:g} s",
                "at the end": hr.counts(answered(s) for s in socks)}
    finally:
        [s.close() for s in socks]


def trickle_body(stack: Stack, loop: Loop) -> dict:
    pieces = hr.trickle_pieces(hr.decision_json(), int(TRICKLE_S))

    def hostile():
        started = time.monotonic()
        with hc.connect(stack.shim.addr, hc.HOSTILE_SOURCE, 120) as sock:
            try:
                sock.sendall(hr.chunked_head(stack.headers))
                for piece in pieces:
                    time.sleep(TRICKLE_S / len(pieces))
                    sock.sendall(piece)
            except OSError:
                pass  # cut mid-body: its answer is waiting
            try:
                status = read_response(sock.makefile("rb"))[0]
            except (OSError, AssertionError):
                status = 0
        return {"status": status, "seconds": round(time.monotonic() - started, 2)}
    return while_running(hostile, loop)


def trickle_link(stack: Stack, loop: Loop) -> dict:
    return one_request(stack, hc.post(hr.decision_json(images=[stack.trickle_url]),
                                      stack.headers), loop)


def stray(stack: Stack, loop: Loop) -> dict:
    """The heavy decision (test_abandon_live's, 192 reads) from 127.0.0.2; the well-behaved
    client beside it for the window; then, alone, the stray byte and the close, and vLLM's
    token count watched until it stops (within stop_bound of the step time measured then)."""
    with hc.connect(stack.shim.addr, hc.HOSTILE_SOURCE) as sock:
        sock.sendall(hc.post(json.dumps(BODY).encode(), stack.headers))
        loop.start()
        time.sleep(stack.window_s)
        loop.stop()  # its tokens would hide when the heavy one's stop
        state = answered(sock)
        if state != "open":
            return {"before the byte": state}
        try:
            step_s = step_seconds(stack.vllm_url, time.monotonic() + 120)
        except AssertionError:
            return {"before the byte": "open, but vLLM computed nothing for 120 s"}
        sock.sendall(b"G")
        time.sleep(3 * POLL_S)  # the watch sees the byte alone
        closed = time.monotonic()
    bound = stop_bound(step_s)
    stopped, _ = settled_after(stack.vllm_url, closed, bound, max(3.0, 10 * step_s))
    return {"engine tokens stopped": f"{stopped:.2f} s after the close (bound {bound:.2f} s, "
                                     f"step {step_s:.3f} s)",
            "work stopped": "met" if stopped <= bound else "NOT MET"}


def tokenize_calls(vllm_url) -> float | None:
    """vLLM's count of /tokenize requests (its http_requests_total), None without one."""
    if not vllm_url:
        return None
    text = urllib.request.urlopen(vllm_url + "/metrics", timeout=30).read().decode()
    return sum(float(x.rsplit(" ", 1)[1]) for x in text.splitlines()
               if x.startswith('http_requests_total{handler="/tokenize"'))


def long_state(stack: Stack, loop: Loop) -> dict:
    data = hr.long_state()
    cpu, calls = stack.shim.cpu_s(), tokenize_calls(stack.vllm_url)
    out = one_request(stack, hc.post(data, stack.headers), loop)
    out["state"] = f"{len(json.loads(data)['state']):,} bytes"
    out["shim CPU"] = f"{stack.shim.cpu_s() - cpu:.2f} s ({len(loop.results)} well-behaved " \
                      "requests' own in it)"
    if calls is not None:
        out["/tokenize calls"] = int(tokenize_calls(stack.vllm_url) - calls)
    return out


def expensive(stack: Stack, loop: Loop) -> dict:
    socks, sent = [], 0
    try:
        for _ in range(4):  # each its own salt: its reads computed, none from the prefix cache
            data = hc.post(hr.expensive(salt=f"Case {secrets.token_hex(8)}. "), stack.headers)
            socks.append(hc.connect(stack.shim.addr, hc.HOSTILE_SOURCE))
            socks[-1].sendall(data)
            sent = len(data)
        time.sleep(1.0)
        loop.start()
        time.sleep(stack.window_s)
        loop.stop()
        return {"sent": f"4 x {sent:,} bytes", f"after {stack.window_s + 1:g} s": hr.counts(
            answered(s) for s in socks)}
    finally:
        [s.close() for s in socks]  # their work is cut; the next recipe waits for vLLM


RUNS = {"heads": heads, "trickle_body": trickle_body, "trickle_link": trickle_link,
        "stray": stray, "expensive": expensive, "long_state": long_state,
        "multipart": lambda stack, loop: one_request(stack, hr.multipart_bomb(stack.headers),
                                                     loop),
        "extensions": lambda stack, loop: one_request(stack, hr.extensions(stack.headers),
                                                      loop)}


def engine_idle(vllm_url, quiet_s: float = 2.0, most_s: float = 600.0) -> None:
    """Wait until vLLM's token count has not grown for `quiet_s`."""
    seen, since, until = engine_tokens(vllm_url), time.monotonic(), time.monotonic() + most_s
    while time.monotonic() - since < quiet_s and time.monotonic() < until:
        time.sleep(0.1)
        if (tokens := engine_tokens(vllm_url)) != seen:
            seen, since = tokens, time.monotonic()


def run(stack: Stack, name: str) -> dict:
    if stack.vllm_url:
        engine_idle(stack.vllm_url)
    what, send = well_behaved(stack, name)
    send()  # not counted: the first after a recipe may find vLLM's prefix cache cold
    quiet = [send() for _ in range(QUIET_SENDS)]
    loop = Loop(send)
    with Memory(stack.shim.proc.pid) as memory:
        hostile = RUNS[name](stack, loop)
    return {"recipe": name, "hostile": hostile, "well_sent": what, "quiet": quiet,
            "quiet_statuses": hr.counts(s for s, _ in quiet), "well": hr.verdict(loop.results, hr.p50([s for _, s in quiet])),
            "rss_growth_mib": round(memory.growth / 1024)}
