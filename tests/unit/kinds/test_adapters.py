"""Stdlib-only tests of what a kind gives each API (onepass/kinds/adapters.py): the SystemOne and
Decisions adapters' defaults (no params, no legend, no image need; the required hooks
unimplemented; default schemas that state the type and the keys and nothing stricter), and the
checks several kinds' hooks share (criteria, entries, unknown fields, descriptions).
Run: python3 -S -m unittest tests.unit.kinds.test_adapters
"""
import unittest

from onepass.api.checks import Checker
from onepass.kinds import adapters
from onepass.kinds.adapters import Decisions, SystemOne


class Plain(SystemOne):
    type = "plain"
    keys = frozenset({"type", "instructions", "extra"})


class Asked(Decisions):
    type = "asked"
    keys = frozenset({"type", "name", "instructions", "choices"})


class TestSystemOneDefaults(unittest.TestCase):
    def test_no_params_legend_or_image_need(self):
        """params None, legend None, check_images adds nothing; options, answer and
        warmup_body must be given."""
        check = Checker()
        api = Plain()
        self.assertIsNone(api.params({"type": "plain"}, (), check, {}))
        self.assertIsNone(api.legend({"criteria": [1]}))
        self.assertEqual((api.warmup_short, api.warmup_image), ((), ()))  # in no shared body
        api.check_images(3, ("q",), check)
        self.assertEqual(check.problems, [])
        for hook, args in (("options", (None, (), check, 2)), ("answer", (None, None, None)),
                           ("warmup_body", ("s",))):
            with self.assertRaises(NotImplementedError, msg=hook):
                getattr(api, hook)(*args)

    def test_default_schemas_state_the_type_and_keys(self):
        """question_schema: the type's const, each other key any value, closed, type required;
        answer_schema: the type's const, open (the kind renders what it renders)."""
        self.assertEqual(Plain().question_schema(), {
            "type": "object", "properties": {"type": {"const": "plain"}, "extra": {},
                                             "instructions": {}},
            "required": ["type"], "additionalProperties": False})
        self.assertEqual(Plain().answer_schema(), {
            "type": "object", "properties": {"type": {"const": "plain"}}, "required": ["type"]})


class TestDecisionsDefaults(unittest.TestCase):
    def test_required_hooks_and_default_schemas(self):
        """options and answer must be given; the question schema adds the API's common fields
        and the kind's other keys; the answer schema names type and name, open."""
        api = Asked()
        self.assertIsNone(api.warmup)
        self.assertIsNone(api.warmup_image)
        with self.assertRaises(NotImplementedError):
            api.options({}, (), Checker(), 2)
        with self.assertRaises(NotImplementedError):
            api.answer("n", (), None)
        common = {"name": {"type": "string"}, "instructions": {"type": "string"}}
        schema = api.question_schema(common)
        self.assertEqual(list(schema["properties"]), ["type", "name", "instructions", "choices"])
        self.assertEqual((schema["required"], schema["additionalProperties"]),
                         (["type", "instructions"], False))
        answer = api.answer_schema()
        self.assertEqual((list(answer["properties"]), answer["required"]),
                         (["type", "name"], ["type", "name"]))
        self.assertNotIn("additionalProperties", answer)


class TestSharedChecks(unittest.TestCase):
    def test_criteria_and_entries_checks(self):
        """is_criteria and entries: one problem each, typed missing / dict_type / array_length."""
        check = Checker()
        self.assertFalse(adapters.is_criteria(None, dict, ("c",), check, "an object"))
        self.assertFalse(adapters.is_criteria([], dict, ("d",), check, "an object"))
        self.assertTrue(adapters.is_criteria({}, dict, ("e",), check, "an object"))
        self.assertEqual(adapters.entries([{}], ("f",), check, 2, 3, "levels"), [])
        self.assertEqual(adapters.entries([{}, 1], ("g",), check, 2, 3, "levels"), [])
        self.assertEqual(adapters.entries([{}, {}], ("h",), check, 2, 3, "levels"), [{}, {}])
        self.assertEqual([(p.loc, p.type) for p in check.problems],
                         [(("c",), "missing"), (("d",), "dict_type"), (("f",), "array_length"),
                          (("g", 1), "invalid_type")])

    def test_unknown_fields_and_descriptions(self):
        """unknown_fields names each extra key, sorted; described refuses a non-string."""
        check = Checker()
        adapters.unknown_fields({"value": 1, "zz": 0, "aa": 0}, {"value"}, ("x", 0), check)
        adapters.described({"description": 5}, ("x", 1), check)
        adapters.described({"description": None}, ("x", 2), check)
        self.assertEqual([p.loc for p in check.problems],
                         [("x", 0, "aa"), ("x", 0, "zz"), ("x", 1, "description")])


if __name__ == "__main__":
    unittest.main()
