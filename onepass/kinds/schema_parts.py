"""The JSON Schema pieces a kind states its questions and answers with, on either API.

Owns: obj() (an object schema, closed, open, or open to x_ extensions), const() (a `type`'s
value) and the shared value shapes (text, probability, count, any number). Each kind's
adapters (adapters.py) build their schemas from these; openapi/ asks the registry for them and
builds the document's routes, errors and the rest from the same pieces (a JSON Schema's
"number" is spelt as a kind is named: outside kinds/ it is taken from here, REAL).
Never: validates a request (the adapters' checks do) or knows a kind's fields.
"""
from __future__ import annotations

TEXT = {"type": ["string", "object", "array"],
        "description": "text, or any JSON object or array (the model reads it as compact JSON)"}
TEXT_OR_NULL = {"type": ["string", "object", "array", "null"]}
PROBABILITY = {"type": "number", "minimum": 0, "maximum": 1}
REAL = {"type": "number"}  # any JSON number (JSON Schema's word; not the number kind)
COUNT = {"type": "integer", "minimum": 0}
NAME = {"type": ["string", "null"]}  # a /v1/decisions answer's `name`, as the question had it
EXTENSIONS = {"^x_": {}}  # the contract allows extra fields only with the x_ prefix


def obj(properties: dict, required=(), extra=False, **more) -> dict:
    """An object schema; `extra` False closes it (x_ extensions stay open on answers)."""
    schema = {"type": "object", "properties": properties, **more}
    if required:
        schema["required"] = list(required)
    if extra is not True:
        schema["additionalProperties"] = False
    if extra == "x_":
        schema["patternProperties"] = EXTENSIONS
    return schema


def const(name) -> dict:
    """A field that takes exactly this value (a question's or an answer's `type`)."""
    return {"const": name}
