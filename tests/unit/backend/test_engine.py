"""Stdlib-only tests of the engine client's typed refusals: the plugin's over-budget refusal is
read from error.param (a JSON object), never from the message; vLLM's own context refusals stay
422s, any other 4xx an EngineRefused (an EngineFailed: a 502 under a request) and a 5xx an
EngineFailed that is no refusal.
Run: python3 -m unittest tests.unit.backend.test_engine
"""
import json
import unittest

from onepass.backend.engine import Engine
from onepass.errors import EngineFailed, EngineRefused, InvalidRequest, OverBudget


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


if __name__ == "__main__":
    unittest.main()
