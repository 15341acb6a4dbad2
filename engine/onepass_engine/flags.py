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
    text = isinstance(value, str)  # vllm_xargs also carries numbers and lists
    if text and value in TWO_WAY:
        return True
    if text and value in ONE_WAY:
        return False
    known = ", ".join(sorted(TWO_WAY | ONE_WAY))
    raise ValueError(f"vllm_xargs.{MODE_KEY} must be one of {known}; got {value!r}")


def is_two_way(params) -> bool:
    """Fast check on an admitted request (its value was validated at admission)."""
    extra = getattr(params, "extra_args", None)
    value = extra.get(MODE_KEY) if extra else None
    return isinstance(value, str) and value in TWO_WAY


SETS_KEY = "set_spans"
MAX_SPANS = 255  # a choice's options at most (the wire contract's cap)


def requested_spans(params) -> tuple[tuple[int, int], ...]:
    """The parallel spans a request named ("s1:e1,s2:e2,...": prompt token ranges, each
    starting where the one before ends), or () for none; raises ValueError for a malformed
    value. A string, for the reason above."""
    extra = getattr(params, "extra_args", None)
    if not extra or SETS_KEY not in extra:
        return ()
    value = extra[SETS_KEY]
    try:
        spans = tuple(tuple(int(x) for x in part.split(":")) for part in value.split(","))
    except (AttributeError, ValueError):
        spans = ((),)
    if not all(len(s) == 2 for s in spans):
        raise ValueError(f"vllm_xargs.{SETS_KEY} must read \"start:end,start:end,...\" (prompt "
                         f"token indices); got {str(value)[:80]!r}")
    if not 2 <= len(spans) <= MAX_SPANS:
        raise ValueError(f"vllm_xargs.{SETS_KEY} names {len(spans)} spans; 2 to {MAX_SPANS}")
    if spans[0][0] < 1 or any(s >= e for s, e in spans) or any(
            a[1] != b[0] for a, b in zip(spans, spans[1:])):
        raise ValueError(f"vllm_xargs.{SETS_KEY}: each span must be non-empty, after the first "
                         "token, and start where the one before it ends")
    return spans

