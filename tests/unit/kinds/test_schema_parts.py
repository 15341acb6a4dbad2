"""Stdlib-only tests of the JSON Schema pieces kinds state their questions and answers with
(onepass/kinds/schema.py): obj() closed, open, or open to x_ extensions, with its required
fields and extra keywords; const(). How the documents built from them fit what the adapters
render: tests/unit/openapi/test_schemas.py.
Run: python3 -S -m unittest tests.unit.kinds.test_schema_parts
"""
import unittest

from onepass.kinds.schema_parts import EXTENSIONS, const, obj


class TestPieces(unittest.TestCase):
    def test_obj_closed_open_or_open_to_extensions(self):
        """obj: closed by default, no `required` when none is; extra=True open; extra="x_"
        closed but for x_ fields; other keywords kept."""
        closed = obj({"a": {}})
        self.assertEqual(closed, {"type": "object", "properties": {"a": {}},
                                  "additionalProperties": False})
        self.assertNotIn("additionalProperties", obj({}, extra=True))
        answer = obj({"a": {}}, ("a",), extra="x_", description="d")
        self.assertEqual((answer["required"], answer["additionalProperties"],
                          answer["patternProperties"], answer["description"]),
                         (["a"], False, EXTENSIONS, "d"))

    def test_const(self):
        """const: exactly that value."""
        self.assertEqual(const("noul"), {"const": "noul"})


if __name__ == "__main__":
    unittest.main()
