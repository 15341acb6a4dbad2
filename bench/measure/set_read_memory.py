"""One step's set-read recompute on CPU: its peak extra memory and time at long contexts.

Usage: .venv/bin/python bench/measure/set_read_memory.py [--cases 4096x512,32768x2048]
       [--old 4096x512] [--layers 2]

What runs: engine/onepass_engine/sets.py's recompute, in-process, no vLLM, on synthetic random
tensors shaped like Qwen2.5-1.5B's attention (12 query heads, 2 KV heads, head dim 128; a bf16
cache in vLLM's CPU `vec` layout, 32-token blocks, as serve.sh runs it). The set request's step
holds its last ROWS tokens (four options, then a 16-token tail); the prefix before them,
CONTEXT - ROWS tokens, was cached by earlier steps. A step recomputes every layer: LAYERS layers
run, the first building the step's plan and cache index, the others reusing them. "old" is the
whole-bias code set_plan.py replaced, emulated here on the same plan: the whole [rows, keys]
bias built once per step and kept (without the bool masks it built it from), rows attended 512
at a time, the bias repeated per query head.

How memory is measured: each case runs in a fresh child process. After its inputs exist and a
small read warmed the kernels up, the child resets the kernel's peak-RSS mark
(/proc/self/clear_refs, 5); peak extra = VmHWM after the layers minus the RSS just before them.
The child runs with glibc's mmap threshold fixed at 128 KiB (MALLOC_MMAP_THRESHOLD_), so each
large tensor gets its own pages and returns them when freed: the figure is what the step's
tensors need at once, not what glibc keeps cached. "held" is the RSS still taken after the
layers (the plan, the cache index and a short read's bias, which the step keeps until the next
one). "formula" is the same peak from the tensors' sizes; the old code at 32k is given by that
formula only (computed, not measured). Time: per layer, wall and CPU seconds (all threads; on a
shared machine the CPU time is the steadier), the first layer's including the plan and the
index, then the mean of the rest.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "engine"), str(ROOT)]
from tests.support.set_reads import whole_attend  # noqa: E402: the replaced code's attend
H, KVH, D, BS = 12, 2, 128, 32  # Qwen2.5-1.5B: query heads, KV heads, head dim; cache block
TAIL, OPTIONS, OLD_ROWS = 16, 4, 512
MIB = 1 << 20
OLD_STEP: dict = {}  # the old code's plan, bias and index, kept for the step as sets.STEP keeps


def read(context: int, rows: int):
    """A set read's step: the cache of its whole context, its query rows and its Geometry."""
    import torch
    from onepass_engine import sets
    gen = torch.Generator().manual_seed(0)
    computed, span = context - rows, (rows - TAIL) // OPTIONS
    cuts = [computed + k * span for k in range(OPTIONS)] + [context - TAIL]
    spans = tuple(zip(cuts[:-1], cuts[1:]))
    ids = tuple(torch.randint(0, 150000, (context,), generator=gen).tolist())
    nb = -(-context // BS)
    cache = torch.empty(nb, KVH, BS, 2 * D, dtype=torch.bfloat16).normal_(generator=gen)
    query = torch.empty(rows, H, D, dtype=torch.bfloat16).normal_(generator=gen)
    geo = sets.Geometry(0, rows, computed, spans, torch.randperm(nb, generator=gen), ids, False)
    assert sets.whole(geo)
    return cache, query, geo


def run(code: str, cache, query, geo, layers: int) -> list[tuple[float, float]]:
    """LAYERS layers of one step's recompute; each layer's wall and CPU seconds."""
    from onepass_engine import set_plan, sets
    impl, layer, output = SimpleNamespace(scale=D ** -0.5), SimpleNamespace(isa="vec"), \
        query.clone()
    times = []
    sets.STEP.begin((geo,))
    OLD_STEP.clear()
    for _ in range(layers):
        start, cpu = time.perf_counter(), time.process_time()
        if code == "new":
            sets.recompute(impl, layer, query, cache, output, sets.index_cpu)
        else:
            if not OLD_STEP:  # the old plan: the whole bias, built once per step
                p = set_plan.plan(geo)
                OLD_STEP.update(p=p, bias=p.bias(0, len(p.at)),
                                index=sets.index_cpu(layer, cache, geo.blocks, p.keys))
            p, bias, (k_at, v_at) = OLD_STEP["p"], OLD_STEP["bias"], OLD_STEP["index"]
            flat = sets.flat(cache)
            k_all, v_all = flat[k_at].float(), flat[v_at].float()
            for r in range(0, len(p.at), OLD_ROWS):
                at = p.at[r:r + OLD_ROWS]
                o = whole_attend(impl, query[at].float().transpose(0, 1), k_all, v_all,
                               bias[r:r + OLD_ROWS])
                output[at] = o.transpose(0, 1).to(output.dtype)
        times.append((time.perf_counter() - start, time.process_time() - cpu))
    return times


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def peak_rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


def child(code: str, context: int, rows: int, layers: int) -> None:
    """One case, in this fresh process: prints a JSON line."""
    import torch  # noqa: F401  (imported before the baseline)
    from onepass_engine import sets
    run(code, *read(512, 256), layers=1)  # warm-up: kernels and thread pools
    sets.STEP.begin(())
    cache, query, geo = read(context, rows)
    gc.collect()
    before = rss()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak-RSS mark starts again from the current RSS
    times = run(code, cache, query, geo, layers)
    peak, held = peak_rss() - before, rss() - before
    print(json.dumps({"peak": peak, "held": held, "times": times}))


def formula(code: str, context: int, rows: int) -> dict:
    """The peak from the tensors' sizes (bytes): O(length) parts, and one block's."""
    from onepass_engine import set_plan
    m = context
    index = 2 * KVH * m * D * 8  # int64 places of each K and V element, kept for the step
    kv = 2 * KVH * m * D * 4 + KVH * m * D * 2  # fp32 K and V, and a bf16 gather on its way
    if code == "new":
        n = min(rows, set_plan.chunk_rows(H, m))
        block = 4 * n * m * (2 * H + 1)  # scores, softmax weights, bias
        kept = 4 * rows * m if 4 * rows * m <= set_plan.CHUNK_BYTES else 0  # kept for the step
        return {"block rows": n, "bytes": index + kv + block + kept - (4 * n * m if kept else 0)}
    n = min(rows, OLD_ROWS)
    plan = 7 * rows * m  # the bias (fp32) and its bool masks, while the plan is built
    block = 4 * n * m * (2 * H + H // KVH)  # scores, softmax weights, the repeated bias
    return {"block rows": n, "bytes": max(plan, 4 * rows * m + index + kv + block)}


def cases(text: str) -> list[tuple[int, int]]:
    return [tuple(int(x) for x in case.split("x")) for case in text.split(",") if case]


def measure(code: str, context: int, rows: int, layers: int) -> dict:
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(128 << 10)}
    out = subprocess.run([sys.executable, __file__, "--child", code, str(context), str(rows),
                          str(layers)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="4096x512,4096x2048,32768x512,32768x2048",
                    help="CONTEXTxROWS,... measured with the current code")
    ap.add_argument("--old", default="4096x512,4096x2048",
                    help="CONTEXTxROWS,... measured with the replaced code (others: formula)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        code, context, rows, layers = args.child
        return child(code, int(context), int(rows), int(layers))
    old = cases(args.old)
    print(f"{H} query heads, {KVH} KV heads, head dim {D}, bf16 cache; {args.layers} layers of "
          f"one step; MiB")
    head = ("code", "context", "rows", "block rows", "peak extra", "formula", "held",
            "layer 1 s", "cpu s", "layer 2+ s", "cpu s")
    print("  ".join(f"{h:>10}" for h in head))
    for context, rows in cases(args.cases):
        for code in ("old", "new"):
            f = formula(code, context, rows)
            if code == "old" and (context, rows) not in old:
                got = {"peak": None, "held": None, "times": []}
            else:
                got = measure(code, context, rows, args.layers)
            first, rest = got["times"][:1], got["times"][1:]
            mean = [sum(t[i] for t in rest) / len(rest) for i in (0, 1)] if rest else []
            cells = (code, context, rows, f["block rows"],
                     "computed" if got["peak"] is None else f"{got['peak'] / MIB:.0f}",
                     f"{f['bytes'] / MIB:.0f}",
                     "-" if got["held"] is None else f"{got['held'] / MIB:.0f}",
                     *(f"{t:.2f}" for t in (first[0] if first else ())),
                     *(f"{t:.2f}" for t in mean))
            cells += ("-",) * (len(head) - len(cells))
            print("  ".join(f"{c:>10}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
