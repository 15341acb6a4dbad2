"""Stdlib tests of the bodies sent to vLLM and the bytes in flight (onepass/backend/wire.py),
issue 25's two bounds. A local server stands in for vLLM in each; nothing it answers is read for
content.

Memory of the engine bodies is proportional to the request, not to questions x images x repeat:
4 images of 512 KB, repeat 4 and 24 questions made every read's body carry 16 data URLs, 32
bodies built at once (the shim went from 27 to 359-422 MiB). Each image is now encoded once and
every body is sent in pieces from those bytes; the bytes in flight to vLLM are capped per
server. A raw local sink stands in for vLLM (it reads into one buffer, so the process's own
allocations are the shim's).

The bytes in flight to vLLM are capped per request as well as per server: one request with many
large bodies (4 images x layout.repeat 4 x 32 questions) could take the whole server's cap. A
local stdlib HTTP server stands in for vLLM: it holds every body it receives until a round of
them is in, then answers them together, recording the most bytes it held at once per request
(bodies are tagged by their prompt's first letter). No wall-clock bound is asserted: the rounds
are counted, not timed.
Run: python3 -m unittest tests.unit.backend.test_wire
"""
import json
import os
import threading
import tracemalloc
import unittest
from collections import Counter
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from onepass import config
from onepass.backend import wire
from onepass.backend.engine import Engine
from onepass.decision_model import Option, Question
from tests.support.kind_names import NOUL
from onepass.errors import EngineUnavailable
from onepass.images.formats import Image
from onepass.prompt import layout as layout_mod
from tests.support.build_decision import decision
from tests.support.local_server import LocalServer
from tests.support.unit_profile import LABELS, VLM

# -- the memory of the bodies ------------------------------------------------------------------
IMAGE_BYTES, IMAGES, REPEAT, QUESTIONS = 512 * 1024, 4, 4, 24
ANSWER = json.dumps({"choices": [{"logprobs": {"content": [{"top_logprobs": [
    {"token": f"token_id:{i}", "logprob": -0.5 - i} for _, i in LABELS.noul]}]}}],
    "usage": {"prompt_tokens": 10}}).encode()


class Sink(LocalServer):
    """HTTP/1.1 keep-alive, each body drained into one buffer and counted, one answer each."""
    threaded = True

    def __init__(self):
        self.received, self.calls, self.lock = 0, 0, threading.Lock()
        super().__init__()

    def handle(self, conn):
        buffer, head = bytearray(1 << 16), b""
        with conn:
            while True:
                while b"\r\n\r\n" not in head:
                    got = conn.recv(4096)
                    if not got:
                        return
                    head += got
                head, _, rest = head.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                left = length - len(rest)
                while left > 0:
                    left -= conn.recv_into(buffer, min(left, len(buffer)))
                with self.lock:
                    self.received, self.calls = self.received + length, self.calls + 1
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(ANSWER) + ANSWER)
                head = b""


def reads():
    images = tuple(Image(os.urandom(IMAGE_BYTES), "png", 64, 64) for _ in range(IMAGES))
    questions = tuple(Question(NOUL, f"Is image {i % IMAGES + 1} red?",
                               (Option("true", None), Option("false", None)))
                      for i in range(QUESTIONS))
    d = decision(questions, "[image 1] [image 2] [image 3] [image 4]",
                 layout=replace(VLM.layout, repeat=REPEAT), images=images)
    return layout_mod.layout(d, VLM, LABELS)


class TestBodyMemory(unittest.TestCase):
    def test_peak_memory_is_the_images_not_the_bodies(self):
        sink = Sink()
        self.addCleanup(sink.close)
        engine = Engine(f"http://127.0.0.1:{sink.port}", "m", timeout_s=30, num_connections=32,
                        image_slot=VLM.vision.placeholder)
        self.addCleanup(engine.close)
        todo = reads()
        tracemalloc.start()
        try:
            results = engine.read_all(todo)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertEqual(len(results), QUESTIONS)
        self.assertEqual(sink.calls, QUESTIONS)
        one_body = IMAGES * REPEAT * IMAGE_BYTES * 4 // 3  # 16 data URLs: what each read shows
        self.assertGreater(sink.received, QUESTIONS * one_body)  # every copy was still sent
        # the images' data URLs once (2.8 MB), not a body per read: well under two bodies
        self.assertLess(peak, 2 * one_body, f"peak {peak >> 20} MiB")

    def test_the_gate_caps_the_bytes_in_flight(self):
        """Bodies past the server's cap wait for room (one larger than the cap goes alone);
        a wait past the engine timeout is a 503."""
        from onepass.backend.wire import Gate
        from onepass.errors import EngineUnavailable
        gate = Gate(100, wait_s=0.2)
        gate.take(60)
        gate.take(40)
        with self.assertRaises(EngineUnavailable):
            gate.take(1)
        gate.give(100)
        gate.take(500)  # alone
        gate.give(500)
        self.assertEqual(gate.used, 0)


# -- the bytes in flight per request -----------------------------------------------------------
BODY = 100_000  # characters of each prompt: every body is this plus ~100 bytes of JSON
PER_REQUEST, SERVER = 2.5 * BODY, 4.5 * BODY  # room for 2 bodies of a request, 4 in all
LIVENESS_S = 60  # a held body is answered anyway after this (only if the code is broken)


class Rounds(ThreadingHTTPServer):
    """Holds each body until a round is in: as many as the caps let each request send at once
    (2 of each request with bodies left), then answers the round. Without a per-request cap a
    request's bodies all arrive together and a round holds more than 2 of one request."""
    daemon_threads = True

    def __init__(self, left: dict):
        super().__init__(("127.0.0.1", 0), Handler)
        self.left, self.held, self.bytes = dict(left), Counter(), Counter()
        self.most, self.most_total, self.round = Counter(), 0, 0
        self.cond = threading.Condition()

    def arrive(self, tag: str, n: int) -> None:
        with self.cond:
            self.held[tag] += 1
            self.bytes[tag] += n
            self.most[tag] = max(self.most[tag], self.bytes[tag])
            self.most_total = max(self.most_total, sum(self.bytes.values()))
            mine = self.round
            if sum(self.held.values()) >= sum(min(2, n) for n in self.left.values()):
                for t, k in self.held.items():  # this round is answered
                    self.left[t] -= k
                self.held.clear()
                self.bytes.clear()
                self.round += 1
                self.cond.notify_all()
            else:
                self.cond.wait_for(lambda: self.round != mine, LIVENESS_S)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as vLLM's uvicorn

    def do_POST(self):
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        self.server.arrive(json.loads(body)["prompt"][0], length)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


class TestRequestBytes(unittest.TestCase):
    def test_one_request_is_held_to_its_cap_and_two_may_exceed_it(self):
        """Two requests of 4 bodies each: neither ever has more than its cap (2 bodies) at
        vLLM at once, while the two together do (4 bodies, within the server's cap)."""
        vllm = Rounds({"A": 4, "B": 4})
        threading.Thread(target=vllm.serve_forever, daemon=True).start()
        self.addCleanup(vllm.server_close)
        self.addCleanup(vllm.shutdown)
        engine = Engine(f"http://127.0.0.1:{vllm.server_port}", "m", timeout_s=LIVENESS_S,
                        num_connections=8, max_bytes_in_flight=int(SERVER),
                        max_bytes_per_request=int(PER_REQUEST))
        self.addCleanup(engine.close)
        failed = []

        def request(tag):
            try:
                with engine.request():
                    engine.map(engine.prefill, [tag * BODY] * 4)
            except Exception as e:  # reported below, on the test's thread
                failed.append(e)
        threads = [threading.Thread(target=request, args=(tag,)) for tag in "AB"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(failed, [])
        for tag in "AB":
            self.assertLessEqual(vllm.most[tag], PER_REQUEST)  # never 3 bodies at once ...
            self.assertGreater(vllm.most[tag], BODY)  # ... but 2
        self.assertEqual(vllm.left, {"A": 0, "B": 0})
        self.assertEqual(vllm.round, 2)  # 2 + 2 bodies at a time, twice
        self.assertGreater(vllm.most_total, PER_REQUEST)  # two requests: more than one's cap
        self.assertLessEqual(vllm.most_total, SERVER)
        self.assertEqual((engine.gate.used, wire.REQUEST.get()), (0, None))

    def test_the_request_gate_is_taken_before_the_server_gate(self):
        """A body waiting past the timeout for its request's room is the server gate's 503 and
        holds none of the server's budget meanwhile; a body larger than the request's cap goes
        alone; outside a request only the server's gate counts."""
        server = wire.Gate(1000, wait_s=0.2)
        with wire.request(100, wait_s=0.2):
            with wire.sending(server, 80):
                with self.assertRaises(EngineUnavailable) as caught:
                    with wire.sending(server, 30):
                        pass
                self.assertEqual((server.used, wire.REQUEST.get().used), (80, 80))
            with wire.sending(server, 500):  # over the request's cap: alone
                self.assertEqual(server.used, 500)
        self.assertIn("this request", caught.exception.message)
        self.assertEqual(caught.exception.status, 503)
        self.assertIsNone(wire.REQUEST.get())
        with wire.sending(server, 900):  # no request: a probe, a warm-up check
            self.assertEqual(server.used, 900)
        self.assertEqual(server.used, 0)

    def test_engine_threads_see_the_request_gate(self):
        """Calls run on the engine's threads (map, submit) count against the gate of the
        request that made them; calls made outside a request see none."""
        engine = Engine("http://127.0.0.1:9", "m", timeout_s=1, num_connections=2,
                        max_bytes_per_request=123)
        self.addCleanup(engine.close)
        self.assertIsNone(engine.submit(wire.REQUEST.get).result())
        with engine.request():
            mine = wire.REQUEST.get()
            self.assertEqual(mine.most, 123)
            self.assertEqual(engine.map(lambda _: wire.REQUEST.get(), range(4)), [mine] * 4)
            self.assertIs(engine.submit(wire.REQUEST.get).result(), mine)
        self.assertEqual(engine.map(lambda _: wire.REQUEST.get(), range(2)), [None, None])

    def test_the_setting(self):
        """--engine-bytes-per-request / ONEPASS_ENGINE_BYTES_PER_REQUEST, 64 MiB by default,
        positive."""
        self.assertEqual(config.load(["--port", "0"], environ={}).engine_bytes_per_request,
                         64 << 20)
        self.assertEqual(config.load(["--port", "0"], environ={
            "ONEPASS_ENGINE_BYTES_PER_REQUEST": "1000"}).engine_bytes_per_request, 1000)
        with self.assertRaises(config.ConfigError):
            config.load(["--port", "0", "--engine-bytes-per-request", "0"], environ={})


if __name__ == "__main__":
    unittest.main()
