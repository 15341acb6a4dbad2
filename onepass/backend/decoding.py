"""Generations through vLLM: box and number answers (constrained by structured outputs),
thoughts (free text under a token cap), and the start-up probe that says whether the engine can
constrain a generation at all.

Owns: the request body of a generation (vLLM 0.32: `structured_outputs`, greedy, log-probs on;
docs/box.md says why each field) and reading its text and per-token log-probs.
Never: builds the prompt or the constraint (kinds/ do, the start-up probe's too: the registry
picks the kind) or interprets what was written.
Called by generate.py and think.py, and at start-up (the probe).
"""
from __future__ import annotations

from .. import kinds
from ..decision_model import Generated
from ..errors import EngineFailed, EngineUnavailable, OnepassError
from . import streamed, wire


def body(engine, read, structured: dict | None, max_tokens: int, stop=()) -> tuple[str, dict]:
    """(route, body): a greedy generation continuing the read's prompt (its answer turn's
    start, a thought, included), with each generated token's log-prob. The text route for a
    prompt, the chat route when images come with it (the answer turn's start then continues an
    assistant message). Free whitespace is the engine's setting, not the request's: vLLM 0.32's
    backends read `disable_any_whitespace` from --structured-outputs-config only."""
    out = {"model": engine.model, "max_tokens": max_tokens, "temperature": 0.0}
    if structured:
        out["structured_outputs"] = structured
    if stop:
        out["stop"] = list(stop)
    if not read.images:
        return "/v1/completions", {**out, "prompt": read.prompt, "logprobs": 1,
                                   "add_special_tokens": False}
    messages = wire.messages(read, engine.image_slot)
    if read.assistant:
        messages.append({"role": "assistant", "content": read.assistant})
        out.update(continue_final_message=True, add_generation_prompt=False)
    return "/v1/chat/completions", {**out, "messages": messages, "logprobs": True,
                                    "top_logprobs": 0}


def generate(engine, read, structured: dict | None, max_tokens: int, stop=(),
             deadline: float | None = None):
    """A decision.Generated: one greedy generation after the
    read's prompt; `cut` when the token cap (or the wall-clock `deadline`, time.monotonic())
    stopped it; the prompt count includes image tokens."""
    route, request = body(engine, read, structured, max_tokens, stop)
    kind = "message" if route.endswith("chat/completions") else "text"
    if deadline is not None:
        return streamed.generate(engine, read, route, request, kind, deadline)
    doc = engine._checked("POST", route, request)
    try:
        prompt_tokens = int(doc["usage"]["prompt_tokens"])
    except (KeyError, TypeError, ValueError):
        raise EngineFailed("vLLM's generation lacks its usage counts") from None
    return Generated(*read_choice(doc, kind), prompt_tokens)


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


def structured_outputs_live(engine, probe) -> tuple[bool, str]:
    """(True, "") when vLLM constrains a short generation as a kind's `probe` (a
    kinds.base.Probe: text only, so it proves the engine, not a vision path) asks; else (False,
    why). Any refusal or an answer the constraint forbids counts as no structured outputs:
    questions answered by a constrained generation are then refused with that reason, and
    nothing else changes."""
    request = {"model": engine.model, "prompt": probe.prompt, "max_tokens": probe.max_tokens,
               "temperature": 0.0, "logprobs": 1, "add_special_tokens": False,
               "structured_outputs": probe.structured}
    try:
        text, _, cut = read_choice(engine._checked("POST", "/v1/completions", request), "text")
    except EngineUnavailable:  # vLLM down is not vLLM without structured outputs
        raise
    except OnepassError as e:
        return False, f"vLLM refused a generation with structured_outputs ({e})"
    if cut or not probe.obeys(text):
        return False, (f"vLLM's generation under {probe.named} gave {text[:80]!r}"
                       f"{' (cut by the token cap)' if cut else ''}: structured outputs are "
                       "off or not enforced")
    return True, ""


def structured_engine(engine, settings) -> str:
    """At start-up: "" when vLLM constrains a generation as the registry's probe asks (or no
    kind needs one), else why not (box and number questions are then refused with it; nothing
    else changes)."""
    probe = kinds.probe(settings)
    if probe is None:
        return ""
    ok, why = structured_outputs_live(engine, probe)
    return "" if ok else why
