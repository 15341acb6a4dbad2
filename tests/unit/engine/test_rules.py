"""The engine plugin's admission rules (engine/onepass_engine/rules.py), without vLLM: set reads
refused on vLLM's V2 model runner, one token only, spans that end before the last token, the
one-step budget with its typed refusal.
Run: python3 -S -m unittest tests.unit.engine.test_rules
"""
import json
import sys
import unittest

from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "engine"))
from onepass_engine import rules  # noqa: E402


class TestBeforeProcessing(unittest.TestCase):
    def test_set_reads_only_on_the_v1_runner(self):
        spans = ((3, 5), (5, 9))
        self.assertEqual(rules.before_processing(False, spans, True, 0),
                         (rules.V2_RUNNER, "vllm_xargs.set_spans"))
        self.assertIsNone(rules.before_processing(False, spans, False, 0))
        self.assertIsNone(rules.before_processing(True, (), True, 1))  # two-way runs on V2

    def test_one_token_only(self):
        message, param = rules.before_processing(True, (), False, 2)
        self.assertEqual(param, "min_tokens")
        self.assertTrue(message.startswith("a two-way (bidirectional) request returns exactly"))


class TestAfterProcessing(unittest.TestCase):
    def test_spans_end_before_the_last_token(self):
        self.assertEqual(rules.after_processing(False, ((3, 5), (5, 10)), 10, 1024)[1],
                         "vllm_xargs.set_spans")
        self.assertIsNone(rules.after_processing(False, ((3, 5), (5, 9)), 10, 1024))

    def test_the_one_step_budget_and_its_typed_refusal(self):
        """Two-way counts the whole prompt, a set read from its first span."""
        self.assertIsNone(rules.after_processing(True, (), 1024, 1024))
        message, param = rules.after_processing(True, (), 1025, 1024)
        self.assertIn("1025 tokens here", message)
        self.assertEqual(json.loads(param), {"onepass_error": "two_way_budget",
                                             "budget_tokens": 1024, "prompt_tokens": 1025})
        self.assertIsNone(rules.after_processing(False, ((100, 600), (600, 1100)), 1124, 1024))
        message, param = rules.after_processing(False, ((99, 600), (600, 1100)), 1124, 1024)
        self.assertEqual(json.loads(param)["prompt_tokens"], 1025)


if __name__ == "__main__":
    unittest.main()
