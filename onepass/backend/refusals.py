"""vLLM's error bodies, read: the message, a context-length refusal, the engine plugin's typed
refusal.

Owns: recognising vLLM's refusals from its error body (engine.py turns them into errors).
Never: sends anything.
"""
from __future__ import annotations

import json

# vLLM's own context-length refusals carry no machine code, so they are known by their words.
CONTEXT_MARKERS = ("maximum context length", "maximum model length", "too many tokens")
# The engine plugin's refusals are typed: the error's `param` is a JSON object with this key
# naming the refusal (engine/onepass_engine/rules.py writes it).
PLUGIN_ERROR_KEY, OVER_BUDGET = "onepass_error", "two_way_budget"


def too_long(message: str) -> bool:
    return any(m in message.lower() for m in CONTEXT_MARKERS)


def message(doc: dict) -> str:
    """vLLM's error message, cut."""
    err = doc.get("error") if isinstance(doc, dict) else None
    if isinstance(err, dict):
        return str(err.get("message", ""))[:500]
    return str(doc)[:500]


def plugin_refusal(doc: dict) -> dict:
    """The engine plugin's typed refusal: vLLM passes the error's `param` through, and the
    plugin writes a JSON object there ({} for any other error)."""
    err = doc.get("error") if isinstance(doc, dict) else None
    param = err.get("param") if isinstance(err, dict) else None
    if not isinstance(param, str) or not param.startswith("{"):
        return {}
    try:
        refusal = json.loads(param)
    except ValueError:
        return {}
    if not isinstance(refusal, dict) or type(refusal.get("budget_tokens")) is not int:
        return {}
    return refusal
