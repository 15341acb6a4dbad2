"""Memory of the engine bodies is proportional to the request, not to questions x images x
repeat (issue 25): 4 images of 512 KB, repeat 4 and 24 questions made every read's body carry
16 data URLs, 32 bodies built at once (the shim went from 27 to 359-422 MiB). Each image is now
encoded once and every body is sent in pieces from those bytes; the bytes in flight to vLLM are
capped per server. A raw local sink stands in for vLLM (it reads into one buffer, so the
process's own allocations are the shim's); nothing it answers is read for content.
Run: python3 -m unittest tests.unit.backend.test_body_memory
"""
import json
import os
import socket
import threading
import tracemalloc
import unittest

from onepass.backend.engine import Engine
from dataclasses import replace

from onepass.decision import NOUL, Option, Question
from onepass.images.formats import Image
from onepass.prompt import layout as layout_mod
from tests.support.build_decision import decision
from tests.support.unit_profile import LABELS, VLM

IMAGE_BYTES, IMAGES, REPEAT, QUESTIONS = 512 * 1024, 4, 4, 24
ANSWER = json.dumps({"choices": [{"logprobs": {"content": [{"top_logprobs": [
    {"token": f"token_id:{i}", "logprob": -0.5 - i} for _, i in LABELS.noul]}]}}],
    "usage": {"prompt_tokens": 10}}).encode()


class Sink:
    """HTTP/1.1 keep-alive, each body drained into one buffer and counted, one answer each."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port, self.received, self.calls = self.sock.getsockname()[1], 0, 0
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
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

    def close(self):
        self.sock.close()


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


if __name__ == "__main__":
    unittest.main()
