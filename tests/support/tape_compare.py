"""A stored replay tape against one recorded afresh on a live vLLM (tests/live/test_tape_live.py):
whether the tape still stands for the engine it replays.

Owns: the machine a tape's numbers hold on (the dtype vLLM served in and the CPU flags that pick
its kernels: a tape recorded with bf16 on AVX-512 is not the numbers fp32 on AVX2 gives), and
the comparison: the same requests (keys), each called as often, each reply the same status and
document, numbers bit for bit, once what vLLM varies between two identical calls is set aside:
its cached-token counts, and a constrained generation's top-logprob entries at -9999 (vLLM's
stand-in for a token the grammar forbids, listed in one run and not in the next: seen once in
1,020 requests; the shim reads a generation's own tokens only).
Never: records (bench/parity/record.py does) or tolerates a difference: on the machine a tape
was recorded on, the batch-invariant engine gives the same bits alone, loaded and warm
(tests/live/test_determinism_live.py), so any difference is the engine's or the shim's.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

KERNEL_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")  # vLLM's and torch's


def machine(dtype: str, cpuinfo: str = "/proc/cpuinfo") -> dict:
    """{"dtype", "isa"}: what a tape's numbers were computed with."""
    text = Path(cpuinfo).read_text() if Path(cpuinfo).exists() else ""
    flags = set(next((line.split(":", 1)[1].split() for line in text.splitlines()
                      if line.startswith("flags")), ()))
    return {"dtype": dtype, "isa": [f for f in KERNEL_FLAGS if f in flags]}


FORBIDDEN = -9999.0  # vLLM's log-prob for a token a constrained generation may not take


def steady_usage(doc):
    """The reply without what vLLM varies between identical calls (the docstring)."""
    doc = copy.deepcopy(doc)
    usage = doc.get("usage") if isinstance(doc, dict) else None
    if isinstance(usage, dict):
        usage.pop("prompt_tokens_details", None)
    for choice in (doc.get("choices") or []) if isinstance(doc, dict) else []:
        tops = (choice.get("logprobs") or {}).get("top_logprobs") if isinstance(
            choice, dict) and isinstance(choice.get("logprobs"), dict) else None
        if isinstance(tops, list):
            choice["logprobs"]["top_logprobs"] = [
                {t: v for t, v in top.items() if v != FORBIDDEN} if isinstance(top, dict)
                else top for top in tops]
    return doc


def steady_text(reply) -> str:
    """A (status, document) reply as canonical JSON, without what vLLM varies."""
    status, doc = reply
    return json.dumps([status, steady_usage(doc)], sort_keys=True)


def differences(stored, fresh) -> list[str]:
    """What differs between two tapes (Tape objects) of one corpus, one line each ([]: none)."""
    out = []
    missing, extra = stored.entries.keys() - fresh.entries.keys(), \
        fresh.entries.keys() - stored.entries.keys()
    for name, keys in (("the stored tape has requests the shim no longer sends", missing),
                       ("the shim now sends requests the stored tape lacks", extra)):
        if keys:
            out.append(f"{name}: {len(keys)}, e.g. " + ", ".join(
                f"{(stored.entries.get(k) or fresh.entries[k])['path']} {k[:12]}"
                for k in sorted(keys)[:3]))
    for k in sorted(stored.entries.keys() & fresh.entries.keys()):
        path, old = stored.entries[k]["path"], stored.entries[k]["replies"]
        new = fresh.entries[k]["replies"]
        if len(old) != len(new):
            out.append(f"{path} {k[:12]}: called {len(new)} times, {len(old)} on the tape")
            continue
        # identical requests' replies may come back in another order: compared as a multiset
        if sorted(map(steady_text, old)) != sorted(map(steady_text, new)):
            out.append(f"{path} {k[:12]}: another reply than the tape's ({first_change(old, new)})")
    return out


def first_change(old: list, new: list) -> str:
    """Where the first of two replies lists first differs, briefly."""
    a, b = steady_text(old[0]), steady_text(new[0])
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"tape …{a[max(0, at - 40):at + 40]}… now …{b[max(0, at - 40):at + 40]}…"
