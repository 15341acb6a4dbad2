"""Stdlib-only tests of the engine client's typed refusals: the plugin's over-budget refusal is
read from error.param (a JSON object), never from the message; vLLM's own context refusals stay
422s, any other 4xx an EngineRefused (an EngineFailed: a 502 under a request) and a 5xx an
EngineFailed that is no refusal. And vLLM's key (ONEPASS_VLLM_KEY): on every call, its absence
a 401 that names the variable, and never in the shim's logs, access log, /health or errors.
Run: python3 -m unittest tests.unit.backend.test_engine
"""
import json
import time
import unittest

from onepass.backend.engine import Engine
from onepass.decision_model import Read
from onepass.errors import EngineFailed, EngineRefused, InvalidRequest, OverBudget
from tests.support.edge_client import ShimProcess, exchange, request
from tests.support.fake_engine import FakeEngine
from tests.support.paths import FAST_PROFILE
from tests.support.systemone_bodies import NOUL_Q, req

KEY = "vllm-key-0f3c9a"  # a stand-in for serve.sh's fresh key


def engine_answering(status: int, doc: dict) -> Engine:
    engine = Engine("http://127.0.0.1:9", "m", timeout_s=1, num_connections=1)
    engine.call = lambda method, path, body=None: (status, doc)
    return engine


class TestTypedRefusals(unittest.TestCase):
    def test_over_budget_is_read_from_param(self):
        param = json.dumps({"onepass_error": "two_way_budget", "budget_tokens": 1024,
                            "prompt_tokens": 1500})
        engine = engine_answering(400, {"error": {"message": "any words at all", "param": param}})
        with self.assertRaises(OverBudget) as ctx:
            engine.tokenize(prompt="x")
        self.assertEqual(ctx.exception.budget_tokens, 1024)
        self.assertEqual(ctx.exception.problems[0].type, "too_long")
        engine.close()

    def test_the_message_alone_never_counts(self):
        """The old words without the typed param: not a budget refusal."""
        engine = engine_answering(400, {"error": {
            "message": "more than this server's one-step budget of 1024", "param": "prompt"}})
        with self.assertRaises(EngineRefused):
            engine.tokenize(prompt="x")
        engine.close()

    def test_vllms_own_4xx_is_a_refusal_and_a_5xx_a_failure(self):
        for status, error in ((400, EngineRefused), (404, EngineRefused), (500, EngineFailed)):
            engine = engine_answering(status, {"error": {"message": "no"}})
            with self.assertRaises(EngineFailed) as ctx:
                engine.tokenize(prompt="x")
            self.assertIs(type(ctx.exception), error)
            self.assertEqual(ctx.exception.status, 502)
            engine.close()

    def test_vllm_context_refusals_stay_422(self):
        for param in (None, "input_tokens", "{not json", json.dumps({"budget_tokens": "9"})):
            engine = engine_answering(400, {"error": {
                "message": "This model's maximum context length is 2048 tokens", "param": param}})
            with self.assertRaises(InvalidRequest) as ctx:
                engine.tokenize(prompt="x")
            self.assertNotIsInstance(ctx.exception, OverBudget)
            engine.close()


class TestVllmKey(unittest.TestCase):
    """vLLM requires a key (serve.sh: VLLM_API_KEY): the stand-in requires it on every path."""

    def setUp(self):
        self.fake = FakeEngine(profile=FAST_PROFILE, key=KEY)
        self.addCleanup(self.fake.stop)

    def engine(self, key: str) -> Engine:
        engine = Engine(self.fake.url, "m", timeout_s=5, num_connections=2, key=key)
        self.addCleanup(engine.close)
        return engine

    def test_every_call_carries_the_key(self):
        engine = self.engine(KEY)
        self.assertIsNone(engine.waiting())
        self.assertTrue(engine.served_models())
        self.assertEqual(engine.tokenizer_info()[0], 200)
        ids = engine.tokenize(prompt="Yes or No")
        engine.prefill("a shared head")
        read = engine.read(Read("Yes or No?", tuple(ids[:2]), (0, 1)))
        self.assertEqual(len(read.label_logprobs), 2)
        self.assertEqual(engine.count(["one two", "three"]), [3, 1])

    def test_without_the_key_or_with_another_a_refusal_that_names_the_variable(self):
        for key, call in (("", lambda e: e.served_models()),
                          ("not-" + KEY, lambda e: e.tokenize(prompt="x"))):
            with self.subTest(key=key), self.assertRaises(EngineRefused) as ctx:
                call(self.engine(key))
            self.assertIn("HTTP 401", ctx.exception.message)
            self.assertIn("ONEPASS_VLLM_KEY", ctx.exception.message)
            self.assertNotIn(KEY, ctx.exception.message)

    def test_the_key_is_in_no_log_line_health_or_error(self):
        """The shim as its own process: ready with the key, a decision answered; with another
        key it fails its start-up check, /health naming the variable; its log (the access log
        too) never holds either key."""
        for key, ready in ((KEY, True), ("wrong-" + KEY, False)):
            shim = ShimProcess(self.fake.url, {"ONEPASS_VLLM_KEY": key,
                                               "ONEPASS_PROFILE": FAST_PROFILE})
            self.addCleanup(shim.stop)
            if ready:
                shim.wait_ready()
                body = json.dumps(req({"a": NOUL_Q})).encode()
                [(status, _, _)], _ = exchange(shim.addr, request(
                    "POST", "/v1/systemone", body, {"Connection": "close"}), timeout=30)
                self.assertEqual(status, 200)
            else:
                health = self.failed_health(shim)
                self.assertIn("ONEPASS_VLLM_KEY", health["reason"])
                self.assertNotIn(KEY, json.dumps(health))
            shim.stop()
            self.assertNotIn(KEY, "".join(shim.log))
            self.assertIn("listening on", "".join(shim.log))

    @staticmethod
    def failed_health(shim: ShimProcess) -> dict:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            [(_, _, body)], _ = exchange(shim.addr, request("GET", "/health", headers={
                "Connection": "close"}))
            if json.loads(body)["status"] == "failed":
                return json.loads(body)
            time.sleep(0.05)
        raise AssertionError("the shim never failed its start-up check:\n" + "".join(shim.log))


if __name__ == "__main__":
    unittest.main()
