"""OpenAI's `input` for /v1/decisions: a string, or messages and tool items rendered into the
state text, an item per block.

Owns: the item and part shapes (message roles and their part types, tool calls and outputs,
input_text / input_image / input_json with OpenAI's input_json caps), each input_image becoming
`[image N]` where it stands.
Never: reads questions or renders a response (decisions.py does).
"""
from __future__ import annotations

from ..decision_model import as_text
from ..images.inputs import Collector
from .checks import Checker

JSON_DEPTH, JSON_VALUES, JSON_BYTES = 32, 10_000, 256 * 1024  # input_json caps (OpenAI's)
TEXT_ROLES = {"developer", "system"}  # text parts only
TOOL_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}
TOOL_OUTPUTS = {"function_call_output", "custom_tool_call_output"}
QUESTION_PARTS = {"input_text", "input_image", "input_json"}  # what instructions may hold


def state(value, check: Checker, images: Collector) -> str | None:
    """A string stays the state as sent; a list of items becomes one text, an item per block."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not value:
        check.add(("input",), "input must be a string or a non-empty array of input items",
                  "invalid_type")
        return None
    blocks, calls = [], set()
    for i, item in enumerate(value):
        loc = ("input", i)
        if not isinstance(item, dict):
            check.add(loc, "an input item must be an object", "invalid_type")
            continue
        kind = item.get("type", "message")
        if kind == "message":
            blocks.append(_message(item, loc, check, images))
        elif isinstance(kind, str) and kind in TOOL_CALLS:
            blocks.append(_tool_call(item, kind, loc, check, calls))
        elif isinstance(kind, str) and kind in TOOL_OUTPUTS:
            blocks.append(_tool_output(item, loc, check, calls, images))
        else:
            check.add(loc + ("type",), f"unknown input item type {kind!r}", "invalid_value")
    return "\n\n".join(b for b in blocks if b is not None)


def _message(item: dict, loc, check: Checker, images: Collector) -> str | None:
    role, content = item.get("role"), item.get("content")
    if role not in ("user", "assistant", *TEXT_ROLES):
        check.add(loc + ("role",), "role must be user, developer, system or assistant",
                  "invalid_value")
        return None
    if "content" not in item:
        check.add(loc + ("content",), "Missing required parameter: 'content'.", "missing")
        return None
    allowed = ({"output_text", "refusal"} if role == "assistant" else
               {"input_text"} if role in TEXT_ROLES else {"input_text", "input_image", "input_json"})
    text = content_text(content, loc + ("content",), check, allowed, images)
    return None if text is None else f"{role}: {text}"


def _tool_call(item: dict, kind: str, loc, check: Checker, calls: set) -> str | None:
    field = TOOL_CALLS[kind]
    parts = [item.get(key) for key in ("call_id", "name", field)]
    for key, got in zip(("call_id", "name", field), parts):
        if not isinstance(got, str):
            check.add(loc + (key,), f"{kind} needs {key} as a string", "invalid_type")
    if not all(isinstance(p, str) for p in parts):
        return None
    calls.add(parts[0])
    return f"tool call {parts[0]}: {parts[1]}({parts[2]})"


def _tool_output(item: dict, loc, check: Checker, calls: set,
                 images: Collector) -> str | None:
    call_id = item.get("call_id")
    if not isinstance(call_id, str):
        check.add(loc + ("call_id",), "a tool output needs call_id as a string", "invalid_type")
        return None
    if call_id not in calls:
        check.add(loc + ("call_id",), f"no earlier tool call has call_id {call_id!r}",
                  "invalid_value")
        return None
    text = content_text(item.get("output"), loc + ("output",), check,
                        {"input_text", "input_image"}, images)
    return None if text is None else f"tool output {call_id}: {text}"


def content_text(value, loc, check: Checker, allowed: set, images: Collector) -> str | None:
    """A string, or parts of the allowed types joined by newlines."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        check.add(loc, "content must be a string or an array of parts", "invalid_type")
        return None
    texts = []
    for j, part in enumerate(value):
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str) or kind not in allowed:
            check.add(loc + (j,), f"a part here must be one of {', '.join(sorted(allowed))}",
                      "invalid_value")
        else:
            texts.append(_part(part, kind, loc + (j,), check, images))
    return "\n".join(t for t in texts if t is not None)


def _part(part: dict, kind: str, loc, check: Checker, images: Collector) -> str | None:
    if kind == "input_image":  # the image stands here as its label; file ids are not stored
        if "image_url" not in part:
            check.add(loc + ("image_url",), "this server reads images from image_url only "
                      "(a data: URL or an https link; file ids are not supported)", "missing")
            return None
        return images.url(part["image_url"], loc + ("image_url",))
    if kind == "input_json":
        data = part.get("data")
        if not isinstance(data, (dict, list)):
            check.add(loc + ("data",), "input_json data must be an object or an array",
                      "invalid_type")
            return None
        text = as_text(data)
        if _too_big(data, 0, [0]) or len(text.encode()) > JSON_BYTES:
            check.add(loc + ("data",), f"input_json data is limited to {JSON_DEPTH} levels, "
                      f"{JSON_VALUES} values and {JSON_BYTES // 1024} KiB", "invalid_value")
            return None
        return text
    field = {"input_text": "text", "output_text": "text", "refusal": "refusal"}[kind]
    if not isinstance(part.get(field), str):
        check.add(loc + (field,), f"{kind} needs {field} as a string", "invalid_type")
        return None
    return part[field]


def _too_big(value, depth: int, count: list) -> bool:
    """Deeper than JSON_DEPTH containers, or more than JSON_VALUES values in all."""
    count[0] += 1
    if count[0] > JSON_VALUES or depth > JSON_DEPTH:
        return True
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return any(_too_big(child, depth + 1, count) for child in children)
