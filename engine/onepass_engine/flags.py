"""The request flag: which attention mode a completions request asked for.

Owns: reading `attention_mode` from `SamplingParams.extra_args` (sent as the body's `vllm_xargs`).
Never: touches tensors or scheduling; the hooks ask this module and decide.
"""
from __future__ import annotations

MODE_KEY = "attention_mode"
TWO_WAY = frozenset({"bidirectional", "two-way"})
ONE_WAY = frozenset({"causal", "one-way"})


def requested_two_way(params) -> bool:
    """The mode a request asked for; raises ValueError for a value we do not know.

    Strings only: vLLM narrows JSON `true` in `vllm_xargs` to 1, so a boolean could not be told
    apart from a number.
    """
    extra = getattr(params, "extra_args", None)
    if not extra or MODE_KEY not in extra:
        return False
    value = extra[MODE_KEY]
    if value in TWO_WAY:
        return True
    if value in ONE_WAY:
        return False
    known = ", ".join(sorted(TWO_WAY | ONE_WAY))
    raise ValueError(f"vllm_xargs.{MODE_KEY} must be one of {known}; got {value!r}")


def is_two_way(params) -> bool:
    """Fast check on an admitted request (its value was validated at admission)."""
    extra = getattr(params, "extra_args", None)
    return bool(extra) and extra.get(MODE_KEY) in TWO_WAY
