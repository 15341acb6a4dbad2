"""The guard serve.sh gives vLLM (engine/onepass_engine/guard.py), without vLLM: every route but
/health and /metrics needs vLLM's key (vLLM's own check covers /v1 alone, and /invocations
answers completions without it), a wrong key or scheme is vLLM's 401, a websocket without it is
refused, and a vLLM started without a key is left alone.
Run: python3 -S -m unittest tests.unit.engine.test_guard
"""
import asyncio
import sys
import unittest
import unittest.mock

from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "engine"))
from onepass_engine import guard  # noqa: E402

KEY = "0f3c" * 16


def ask(g: guard.Guard, path: str, authorization: str | None = None, kind: str = "http",
        root_path: str = "") -> list:
    """What the guard sends for one request: [] when it passed it on to vLLM's app."""
    sent = []

    async def send(message):
        sent.append(message)

    headers = [(b"authorization", authorization.encode())] if authorization else []
    scope = {"type": kind, "path": root_path + path, "root_path": root_path, "headers": headers}
    asyncio.run(g(scope, None, send))
    return sent


async def app(scope, receive, send):  # vLLM's app: answers nothing here
    return None


class TestGuard(unittest.TestCase):
    def test_every_route_but_health_and_metrics_needs_the_key(self):
        g = guard.Guard(app, KEY)
        for path in ("/invocations", "/generative_scoring", "/tokenize", "/tokenizer_info",
                     "/v1/completions", "/v1/models", "/docs", "/openapi.json", "/version"):
            for authorization in (None, "Bearer wrong", f"Basic {KEY}", KEY):
                with self.subTest(path=path, authorization=authorization):
                    start, body = ask(g, path, authorization)
                    self.assertEqual(start["status"], 401)
                    self.assertEqual(body["body"], b'{"error":"Unauthorized"}')
                    self.assertNotIn(KEY.encode(), repr((start, body)).encode())
            self.assertEqual(ask(g, path, f"Bearer {KEY}"), [])
            self.assertEqual(ask(g, path, f"bearer {KEY}"), [])  # the scheme in any case
        for path in ("/health", "/metrics"):
            self.assertEqual(ask(g, path), [], path)
        self.assertEqual(ask(g, "/metrics", root_path="/vllm"), [])
        self.assertEqual(ask(g, "/invocations", root_path="/vllm")[0]["status"], 401)

    def test_a_websocket_without_the_key_is_refused(self):
        g = guard.Guard(app, KEY)
        self.assertEqual(ask(g, "/v1/realtime", kind="websocket"),
                         [{"type": "websocket.close", "code": 1008}])
        self.assertEqual(ask(g, "/v1/realtime", f"Bearer {KEY}", kind="websocket"), [])
        self.assertEqual(ask(g, "/", kind="lifespan"), [])

    def test_without_a_key_nothing_is_guarded(self):
        self.assertEqual(ask(guard.Guard(app, ""), "/invocations"), [])

    def test_the_key_comes_from_vllms_variable(self):
        with unittest.mock.patch.dict("os.environ", {"VLLM_API_KEY": KEY}):
            g = guard.Guard(app)
        self.assertEqual(ask(g, "/invocations")[0]["status"], 401)
        self.assertEqual(ask(g, "/invocations", f"Bearer {KEY}"), [])


if __name__ == "__main__":
    unittest.main()
