"""Stdlib-only tests of vLLM's error bodies read (onepass/backend/refusals.py): a context-length
refusal known by its words in any case, the message cut from any body, and the engine plugin's
typed refusal taken only from a JSON object in the error's `param` with an integer budget. How
the engine client turns them into errors is tested in tests/unit/backend/test_engine.py.
Run: python3 -S -m unittest tests.unit.backend.test_refusals
"""
import json
import unittest

from onepass.backend import refusals

BUDGET = {"onepass_error": refusals.OVER_BUDGET, "budget_tokens": 1024, "prompt_tokens": 1500}


def error(**fields) -> dict:
    return {"error": {"message": "refused", **fields}}


class TestWords(unittest.TestCase):
    def test_context_refusals_by_their_words_in_any_case(self):
        """too_long: vLLM's three phrasings, whatever their case; other messages are not."""
        for message in ("This model's maximum context length is 2048 tokens",
                        "Prompt exceeds the Maximum Model Length", "TOO MANY TOKENS in input"):
            self.assertTrue(refusals.too_long(message), message)
        for message in ("", "model not found", "maximum length of the context"):
            self.assertFalse(refusals.too_long(message), message)

    def test_the_message_of_any_body_cut_at_500(self):
        """message: error.message when the error is an object, else the body as text; 500
        characters at most either way."""
        self.assertEqual(refusals.message(error(message="x" * 600)), "x" * 500)
        self.assertEqual(refusals.message({"error": {"type": "e"}}), "")
        self.assertEqual(refusals.message({"error": "plain words"}), "{'error': 'plain words'}")
        self.assertEqual(refusals.message(["not", "an", "object"]), "['not', 'an', 'object']")
        self.assertEqual(len(refusals.message({"detail": "y" * 900})), 500)


class TestPluginRefusal(unittest.TestCase):
    def test_the_typed_refusal_is_the_param_object(self):
        """plugin_refusal: the JSON object the plugin wrote in `param`, whole."""
        self.assertEqual(refusals.plugin_refusal(error(param=json.dumps(BUDGET))), BUDGET)

    def test_anything_else_is_no_refusal(self):
        """plugin_refusal: {} for a param that is absent, not text, not an object, not JSON, or
        whose budget is not an integer (a bool or a string is not), and for odd bodies."""
        params = (None, 7, "prompt", "[1, 2]", "{not json", json.dumps({"budget_tokens": "9"}),
                  json.dumps({"budget_tokens": True}), json.dumps({"onepass_error": "x"}))
        for param in params:
            self.assertEqual(refusals.plugin_refusal(error(param=param)), {}, param)
        for doc in ({}, {"error": "text"}, [BUDGET], None):
            self.assertEqual(refusals.plugin_refusal(doc), {}, doc)


if __name__ == "__main__":
    unittest.main()
