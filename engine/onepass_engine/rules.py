"""The plugin's admission rules for a flagged request, as plain functions of what vLLM knows
about it (no vLLM import): admission.py raises vLLM's validation error with what they return,
and the shim's tests ask them without a server, as a stand-in engine configured like vLLM.

Owns: which flagged requests the plugin refuses, with the refusal's message and `param` (the
one structured field vLLM's error body carries through).
Never: reads a request or raises; admission.py does both.
"""
from __future__ import annotations

import json

from .flags import SETS_KEY

V2_RUNNER = ("set reads run in vLLM's V1 model runner only; start vLLM with "
             "VLLM_USE_V2_MODEL_RUNNER=0")


def before_processing(two_way: bool, spans, v2_runner: bool, min_tokens: int):
    """(message, param) refusing a flagged request before its prompt is processed, or None."""
    if spans and v2_runner:
        return V2_RUNNER, f"vllm_xargs.{SETS_KEY}"
    if min_tokens > 1:
        what = "a two-way (bidirectional)" if two_way else "a set"
        return (f"{what} request returns exactly one token; min_tokens must be 0 or 1",
                "min_tokens")
    return None


def over_budget(budget: int, num_tokens: int) -> str:
    """The typed refusal of a two-way prompt over the one-step budget: a JSON object in the
    error's `param`, naming the refusal and both counts in tokens. The shim reads it
    (onepass/backend/refusals.py)."""
    return json.dumps({"onepass_error": "two_way_budget", "budget_tokens": budget,
                       "prompt_tokens": num_tokens}, separators=(",", ":"))


def after_processing(two_way: bool, spans, num_tokens: int, budget: int):
    """(message, param) refusing a flagged request of `num_tokens` prompt tokens on a server
    whose one-step budget is `budget`, or None."""
    if spans and spans[-1][1] >= num_tokens:
        return (f"vllm_xargs.{SETS_KEY}: the spans must end before the prompt's last token "
                f"({num_tokens} tokens)", f"vllm_xargs.{SETS_KEY}")
    # Two-way: the whole prompt in one step; a set read: its spans and what follows them
    # (the prefix before them is causal and may come in earlier steps or from the cache).
    whole = num_tokens if two_way else num_tokens - spans[0][0]
    if whole > budget:
        what = "a two-way (bidirectional)" if two_way else "a set"
        return (f"{what} request is prefilled in one step from "
                f"{'its start' if two_way else 'its first span'}, {whole} tokens here, more "
                f"than this server's one-step budget of {budget} (--max-num-batched-tokens); "
                f"shorten the prompt or raise the budget", over_budget(budget, whole))
    return None
