"""Constrained generations through vLLM's structured outputs: the box generation and the start-up
probe that says whether the engine can constrain one at all.

Owns: the request body of a box generation (vLLM 0.32: `structured_outputs.json`, greedy,
`logprobs` on; docs/box.md says why each field) and reading its text and per-token log-probs.
Never: builds the prompt or the schema (kinds/box.py) or interprets the box.
Called by boxes.py (each generating box question) and at start-up (the probe).
"""
from __future__ import annotations

import json

from ..errors import EngineFailed, EngineUnavailable, OnepassError
from ..kinds import box as box_kind

PROBE_PROMPT = "Where is the object? Answer with JSON.\n"
PROBE_MOST = 1000


def body(model: str, messages: list, schema: dict, max_tokens: int) -> dict:
    """A greedy chat generation under `schema`, with each generated token's log-prob. Free
    whitespace is the engine's setting, not the request's: vLLM 0.32's backends read
    `disable_any_whitespace` from --structured-outputs-config only, so it is not sent."""
    return {"model": model, "messages": messages, "max_tokens": max_tokens,
            "temperature": 0.0, "logprobs": True, "top_logprobs": 0,
            "structured_outputs": {"json": schema}}


def generate(engine, messages: list, schema: dict, max_tokens: int):
    """(text, [(token text, log-prob)], cut, prompt tokens): one constrained generation on the
    chat route (the route images take); `cut` when the token cap stopped it before the schema
    closed; the prompt count includes the image's tokens."""
    doc = engine._checked("POST", "/v1/chat/completions",
                          body(engine.model, messages, schema, max_tokens))
    try:
        prompt_tokens = int(doc["usage"]["prompt_tokens"])
    except (KeyError, TypeError, ValueError):
        raise EngineFailed("vLLM's generation lacks its usage counts") from None
    return (*read_choice(doc, "message"), prompt_tokens)


def read_choice(doc: dict, route: str) -> tuple[str, list, bool]:
    """The generated text and its tokens from a chat (`message`) or completions (`text`) answer."""
    try:
        choice = doc["choices"][0]
        if route == "message":
            text = choice["message"]["content"] or ""
            tokens = [(e["token"], float(e["logprob"])) for e in choice["logprobs"]["content"]]
        else:
            text, lp = choice["text"], choice["logprobs"]
            tokens = [(t, float(v)) for t, v in zip(lp["tokens"], lp["token_logprobs"])]
        return text, tokens, choice.get("finish_reason") == "length"
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise EngineFailed(f"vLLM's generation lacks its text or log-probs ({e!r})") from None


def structured_outputs_live(engine, max_tokens: int) -> tuple[bool, str]:
    """(True, "") when vLLM constrains a short generation to the box schema (text only, so it
    proves the engine, not a vision path); else (False, why). Any refusal or an answer outside
    the schema counts as no structured outputs: box questions are then refused with that
    reason, and nothing else changes."""
    request = {"model": engine.model, "prompt": PROBE_PROMPT, "max_tokens": max_tokens,
               "temperature": 0.0, "logprobs": 1, "add_special_tokens": False,
               "structured_outputs": {"json": box_kind.schema(PROBE_MOST)}}
    try:
        text, _, cut = read_choice(engine._checked("POST", "/v1/completions", request), "text")
    except EngineUnavailable:  # vLLM down is not vLLM without structured outputs
        raise
    except OnepassError as e:
        return False, f"vLLM refused a generation with structured_outputs ({e})"
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    raw = value.get("box", ()) if isinstance(value, dict) else ()
    in_schema = isinstance(value, dict) and set(value) == {"box"} and (raw is None or (
        isinstance(raw, list) and len(raw) == 4
        and all(type(v) is int and 0 <= v <= PROBE_MOST for v in raw)))
    if cut or not in_schema:
        return False, (f"vLLM's generation under the box schema gave {text[:80]!r}"
                       f"{' (cut by the token cap)' if cut else ''}: structured outputs are "
                       "off or not enforced")
    return True, ""


def box_engine(engine, profile, settings) -> str:
    """At start-up, on a profile that answers boxes: "" when vLLM constrains a generation,
    else why not (the box questions' refusal; nothing else changes). Other profiles: not
    checked (they refuse boxes for their own reason)."""
    if profile.vision is None or profile.vision.box is None:
        return "not checked (no box convention in this profile)"
    ok, why = structured_outputs_live(engine, settings.box_max_tokens)
    return "" if ok else why
