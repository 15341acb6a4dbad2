"""The README's and docs' JSON examples hold against /openapi.json's schemas (jsonschema; no
server needed): every request body, answer document and answer shown is one the document
accepts, and a broken copy of each is refused (so the check is not vacuous)."""
import ast
import copy
import json
import re

import jsonschema
import pytest

from tests.support.live_stack import ROOT
from onepass import config, openapi

DOC = openapi.document(config.load(["--config", str(ROOT / "serve_config.json")], environ={}))
PATHS = DOC["paths"]


def schema_of(route: str, part: str) -> dict:
    post = PATHS[route]["post"]
    if part == "request":
        return post["requestBody"]["content"]["application/json"]["schema"]
    return post["responses"]["200"]["content"]["application/json"]["schema"]


SCHEMAS = {
    "systemone request": schema_of("/v1/systemone", "request"),
    "systemone response": schema_of("/v1/systemone", "response"),
    "decisions request": schema_of("/v1/decisions", "request"),
    "systemone answer": schema_of("/v1/systemone", "response")["properties"]["answers"][
        "additionalProperties"],
    "systemone question": schema_of("/v1/systemone", "request")["properties"]["questions"][
        "additionalProperties"],
}


def kind_of(example: dict) -> str:
    if "answers" in example:
        return "systemone response"
    if "questions" in example:
        return "systemone request" if isinstance(example["questions"], dict) else \
            "decisions request"
    return "systemone answer" if "confidence" in example or "noul" in example \
        else "systemone question"


def examples() -> list:
    """(where, JSON value): ```json blocks, curl -d bodies and the openai call's arguments."""
    found = []
    for name in ("README.md", "docs/api.md", "docs/box.md"):
        text = (ROOT / name).read_text()
        for i, m in enumerate(re.finditer(r"```(\w*)\n(.*?)```", text, re.S)):
            lang, body = m.groups()
            where = f"{name} block {i}"
            if lang == "json" and '"messages": [...]' not in body:  # box.md's vLLM body sketch
                found.append((where, json.loads(body)))
            elif lang == "bash" and " -d '" in body:
                found.append((where, json.loads(body.split(" -d '", 1)[1].rsplit("'", 1)[0])))
            elif "decisions.create(" in body:
                found.append((where, openai_call(body)))
    return found


def openai_call(script: str) -> dict:
    """The body `client.decisions.create(**kwargs)` sends: its keyword arguments, as JSON."""
    source = script.split("<<'PY'\n", 1)[-1].split("\nPY", 1)[0]
    call = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                and getattr(n.func, "attr", "") == "create")
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


EXAMPLES = examples()


def test_every_kind_of_example_is_found():
    """The extraction finds what the docs show (a failure here means an example moved)."""
    kinds = sorted({kind_of(e) for _, e in EXAMPLES})
    assert kinds == sorted(SCHEMAS), kinds


@pytest.mark.parametrize("where,example", EXAMPLES, ids=[w for w, _ in EXAMPLES])
def test_example_matches_the_document(where, example):
    schema = SCHEMAS[kind_of(example)]
    jsonschema.Draft202012Validator(schema).validate(example)
    broken = copy.deepcopy(example)
    # the same example with a field of the wrong JSON type: the schema must refuse it
    key = next(k for k in ("usage", "questions", "box", "type") if k in broken)
    broken[key] = 1.5
    assert not jsonschema.Draft202012Validator(schema).is_valid(broken), where
