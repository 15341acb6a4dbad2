"""Which of vLLM's CPU kernels give a row the same bits whatever else is computed with it.

Usage: .venv/bin/python bench/measure/kernel_invariance.py [--trials 200]
In-process, no server: (1) vLLM's CPU linear (oneDNN `onednn_mm`, where it can build one for the
dtype) and torch's `linear`, plainly and in the engine plugin's fixed rows: row 0 of x[:M] @ W
against the whole batch, and slices of the batch against the same rows inside it, for
SmolLM2's projection shapes;
(2) vLLM's CPU attention op: the output of one query at position p computed as its own
one-query request (what the onepass_batch_invariant entry point does) against the same query
inside a batch of other one-query requests, with the KV split on and off; and against chunks of
up to 32 queries (what vLLM's own tiling gives a warm read's tail). Prints counts of differing
cases. docs/determinism.md quotes its figures.
"""
from __future__ import annotations

import argparse
import random
import sys

import torch

H, KVH, D, BS = 9, 3, 64, 32  # SmolLM2-135M's attention: 9 heads, 3 KV heads, head size 64
SHAPES = ((576, 1536), (1536, 576), (576, 576), (576, 49152))  # (in, out) of its projections
ROWS = (1, 2, 3, 5, 8, 16, 17, 31, 32, 33, 64, 100, 128, 255, 256, 300, 512, 700)


PLACES = ((1, 1), (5, 3), (17, 16), (31, 40), (100, 64), (333, 67))  # (first row, rows)


def linear_rows(dtype) -> None:
    """Per GEMM path: which batch sizes M move row 0, and which (first row, rows) slices of
    a 700-row batch come out with other bits than inside it; plainly and in fixed rows."""
    from vllm import _custom_ops as ops
    from onepass_engine.invariant import fixed_rows, rows_per_call
    torch.manual_seed(0)
    for k, n in SHAPES:
        w = torch.randn(n, k, dtype=dtype) * 0.05
        x = torch.randn(max(ROWS), k, dtype=dtype)
        paths = {"torch linear": lambda a, _w, b: torch.nn.functional.linear(a, w, b)}
        try:
            handler = ops.create_onednn_mm(w.t(), 32)
            paths["oneDNN onednn_mm"] = lambda a, _w, b: ops.onednn_mm(handler, a, b)
        except RuntimeError:
            print(f"{dtype} {k}x{n}: oneDNN cannot build this GEMM here (vLLM falls back to "
                  "torch linear)")
        rows = rows_per_call(dtype, n)
        for name, plain in list(paths.items()):
            paths[f"{name} in fixed rows of {rows}"] = fixed_rows(plain, rows)
        for name, f in paths.items():
            whole = f(x, None, None)
            moved = [m for m in ROWS if not torch.equal(f(x[:m], None, None)[0], whole[0])]
            places = [p for p in PLACES
                      if not torch.equal(f(x[p[0]:sum(p)], None, None), whole[p[0]:sum(p)])]
            print(f"{dtype} {k}x{n} {name}: row 0 differs at M in {moved[:6] or 'none'}; "
                  f"slices differing {len(places)} of {len(PLACES)} {places[:3]}")


def attention(kc, vc, queries, spans, dtype, split: bool):
    """spans: (first position, end) per request; request i attends to keys [0, end)."""
    from vllm import _custom_ops as ops
    n = len(spans)
    starts = [0]
    for a, b in spans:
        starts.append(starts[-1] + b - a)
    blocks = torch.arange(max(b for _, b in spans) // BS + 1, dtype=torch.int32)[None].repeat(n, 1)
    qsl = torch.tensor(starts, dtype=torch.int32)
    lens = torch.tensor([b for _, b in spans], dtype=torch.int32)
    meta = ops.cpu_attn_get_scheduler_metadata(n, H, KVH, D, lens, dtype, qsl, True, -1, "vec",
                                               split)
    out = torch.empty_like(queries)
    ops.cpu_attention_with_kv_cache(
        query=queries, key_cache=kc, value_cache=vc, output=out, query_start_loc=qsl,
        seq_lens=lens, scale=D ** -0.5, causal=True, alibi_slopes=None, sliding_window=-1,
        block_table=blocks, softcap=0.0, scheduler_metadata=meta, s_aux=None)
    return out


def attention_cases(dtype, trials: int) -> None:
    rng = random.Random(1)
    torch.manual_seed(0)
    kc, vc = (torch.randn(200, KVH, BS * 2, D) * 0.5).to(dtype).chunk(2, dim=2)
    for split in (False, True):
        per_query = chunked = 0
        for _ in range(trials):
            length = rng.randint(2, 3000)
            q = torch.randn(length, H, D).to(dtype)
            p = rng.randint(0, length - 1)
            alone = attention(kc, vc, q[p:p + 1], [(p, p + 1)], dtype, split)[0]
            a, b = rng.randint(0, p), rng.randint(p + 1, min(length, p + 400))
            batch = attention(kc, vc, q[a:b], [(i, i + 1) for i in range(a, b)], dtype, split)
            per_query += not torch.equal(batch[p - a], alone)
            a = rng.randint(max(0, p - 31), p)
            b = rng.randint(p + 1, min(length, a + 32))
            chunk = attention(kc, vc, q[a:b], [(a, b)], dtype, split)
            chunked += not torch.equal(chunk[p - a], alone)
        print(f"{dtype} attention, KV split {'on' if split else 'off'}: a one-query request "
              f"inside a batch of one-query requests differs from it alone in {per_query} of "
              f"{trials}; inside a chunk of up to 32 queries in {chunked} of {trials}")


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    a = ap.parse_args(argv)
    for dtype in (torch.float32, torch.bfloat16):
        linear_rows(dtype)
        attention_cases(dtype, a.trials)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
