"""A streamed generation (onepass/backend/streamed.py: a thought under `budget_ms`) is still one
vLLM call: the engine timeout bounds it whatever the budget says (issue 25). A local server stands
in for a vLLM that answers 200 and then stalls the stream; nothing it writes is read for content.
Run: python3 -m unittest tests.unit.backend.test_streamed
"""
import time
import types
import unittest

from onepass.backend import streamed, wire
from onepass.decision_model import Read
from onepass.errors import EngineUnavailable
from tests.support.local_server import LocalServer


class Stalling(LocalServer):
    """Accepts, answers a streamed 200 with one empty event, then writes nothing for `stall_s`."""

    def __init__(self, stall_s: float):
        self.stall_s = stall_s
        super().__init__()

    def handle(self, conn):
        with conn:
            self.got = conn.recv(65536)
            event = b'data: {"choices": []}\n\n'  # chunked, as vLLM streams
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n"
                         + b"%x\r\n" % len(event) + event + b"\r\n")
            time.sleep(self.stall_s)


def engine(port: int, timeout_s: float):
    return types.SimpleNamespace(host="127.0.0.1", port=port, prefix="", timeout_s=timeout_s,
                                 auth={"Authorization": "Bearer vllm-key"},
                                 count=lambda texts, *_: [1 for _ in texts],
                                 queued=lambda path, payload: payload,
                                 gate=wire.Gate(1 << 20, timeout_s))


class TestStreamDeadline(unittest.TestCase):
    def setUp(self):
        self.server = Stalling(stall_s=6)
        self.addCleanup(self.server.close)
        self.read = Read("prompt", (), ())

    def generate(self, timeout_s: float, budget_s: float):
        return streamed.generate(engine(self.server.port, timeout_s), self.read,
                                 "/v1/completions", {}, "text", time.monotonic() + budget_s)

    def test_the_engine_timeout_holds_under_a_longer_budget(self):
        """budget_ms 3 s, engine timeout 0.5 s, vLLM stalls 6 s: 503 at the engine timeout, not
        a thought cut with 0 tokens at the budget (which would return, not raise)."""
        with self.assertRaises(EngineUnavailable):
            self.generate(timeout_s=0.5, budget_s=3)

    def test_a_shorter_budget_still_cuts(self):
        """budget 0.5 s, engine timeout 5 s: the thought is cut at the budget, kept (the engine
        timeout would raise EngineUnavailable instead)."""
        text, tokens, cut, _ = self.generate(timeout_s=5, budget_s=0.5)
        self.assertEqual((text, tokens, cut), ("", [], True))
        self.assertIn(b"\r\nAuthorization: Bearer vllm-key\r\n", self.server.got)  # vLLM's key


if __name__ == "__main__":
    unittest.main()
