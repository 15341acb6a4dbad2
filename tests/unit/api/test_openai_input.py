"""Stdlib-only tests of OpenAI's `input` rendered into the state (onepass/api/openai_input.py),
called directly: what each item and part may hold, and input_json's caps at their edges. The
rendering of every item kind through the adapter is tested in test_decisions.py.
Run: python3 -S -m unittest tests.unit.api.test_openai_input
"""
import unittest

from onepass.api import openai_input
from onepass.api.checks import Checker
from onepass.images.inputs import Collector


def state(value):
    """(state text or None, [(loc, type)] of the problems found)."""
    check = Checker()
    text = openai_input.state(value, check, Collector(check))
    return text, [(p.loc, p.type) for p in check.problems]


def json_part(data):
    return [{"role": "user", "content": [{"type": "input_json", "data": data}]}]


class TestItems(unittest.TestCase):
    def test_a_string_is_the_state_as_sent(self):
        """state: a string stays byte for byte; an empty array or another type is refused."""
        self.assertEqual(state("  as sent \n"), ("  as sent \n", []))
        for bad in ([], {}, 3, None):
            self.assertEqual(state(bad)[1], [(("input",), "invalid_type")], bad)

    def test_each_items_problem_at_its_place(self):
        """state: a non-object item, an unknown type, a bad role and missing content each named."""
        text, problems = state(["x", {"type": "reasoning"}, {"role": "tool", "content": "y"},
                                {"role": "user"}, {"role": "user", "content": "kept"}])
        self.assertEqual(problems, [(("input", 0), "invalid_type"),
                                    (("input", 1, "type"), "invalid_value"),
                                    (("input", 2, "role"), "invalid_value"),
                                    (("input", 3, "content"), "missing")])
        self.assertEqual(text, "user: kept")

    def test_parts_allowed_per_role(self):
        """content: assistant writes output_text or refusal; developer and system text only."""
        _, problems = state([{"role": "assistant", "content": [{"type": "input_text",
                                                                "text": "x"}]},
                             {"role": "system", "content": [{"type": "input_json",
                                                             "data": {}}]}])
        self.assertEqual(problems, [(("input", 0, "content", 0), "invalid_value"),
                                    (("input", 1, "content", 0), "invalid_value")])
        text, problems = state([{"role": "assistant", "content": [
            {"type": "refusal", "refusal": "no"}, {"type": "output_text", "text": "ok"}]}])
        self.assertEqual((text, problems), ("assistant: no\nok", []))

    def test_tool_items(self):
        """tool items: a call needs string call_id, name and arguments; an output a prior call."""
        _, problems = state([{"type": "function_call", "call_id": "c1", "name": 5,
                              "arguments": None},
                             {"type": "function_call_output", "call_id": "c1", "output": "x"}])
        self.assertEqual(problems, [(("input", 0, "name"), "invalid_type"),
                                    (("input", 0, "arguments"), "invalid_type"),
                                    (("input", 1, "call_id"), "invalid_value")])

    def test_an_image_needs_an_image_url(self):
        """input_image: a file id alone is refused; a data URL becomes its [image N] label."""
        _, problems = state([{"role": "user", "content": [{"type": "input_image",
                                                           "file_id": "file-1"}]}])
        self.assertEqual(problems, [(("input", 0, "content", 0, "image_url"), "missing")])
        text, problems = state([{"role": "user", "content": [
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            {"type": "input_text", "text": "a photo"}]}])
        self.assertEqual((text, problems), ("user: [image 1]\na photo", []))


class TestJsonCaps(unittest.TestCase):
    def test_depth_cap_at_its_edge(self):
        """input_json: 32 levels below the data pass, 33 are refused."""
        def nested(levels):
            data = {}
            for _ in range(levels):
                data = {"a": data}
            return data
        self.assertEqual(state(json_part(nested(openai_input.JSON_DEPTH)))[1], [])
        self.assertEqual(state(json_part(nested(openai_input.JSON_DEPTH + 1)))[1],
                         [(("input", 0, "content", 0, "data"), "invalid_value")])

    def test_value_count_and_size_caps(self):
        """input_json: 10,000 values pass (the array is one), 10,001 not; over 256 KiB not."""
        self.assertEqual(state(json_part([0] * (openai_input.JSON_VALUES - 1)))[1], [])
        self.assertEqual(len(state(json_part([0] * openai_input.JSON_VALUES))[1]), 1)
        big = ["x" * 1000] * 300  # 301 values, about 300 KB
        self.assertEqual(state(json_part(big))[1],
                         [(("input", 0, "content", 0, "data"), "invalid_value")])

    def test_data_must_be_a_container(self):
        """input_json: a string or number as data is an invalid_type."""
        for data in ("text", 1, None):
            self.assertEqual(state(json_part(data))[1],
                             [(("input", 0, "content", 0, "data"), "invalid_type")], data)


if __name__ == "__main__":
    unittest.main()
