"""How many waiting requests vLLM 0.32.0's scheduler admits per step on a hybrid (Gated DeltaNet)
model with prefix caching (mamba_cache_mode=align), stock vs vllm_patches/scheduler-waiting-scan.

Usage: python bench/measure/scheduler_admission.py [--model DIR] [--budgets 256,512]
       [--requests 16]
Needs the tiny hybrid from tools/models/build_hybrid.py (default
~/.cache/onepass/models/qwen3-next-tiny).

How it is measured: each (mode, token budget) runs in its own child process with the engine core
in-process (VLLM_ENABLE_V1_MULTIPROCESSING=0, plugins off), so `Scheduler.schedule` can be
wrapped: every step records len(output.scheduled_new_reqs), the waiting-queue length before the
step, how often `_mamba_block_aligned_split` returned 0 and how often
`KVCacheManager.allocate_slots` returned None (the two `break`s that end the scan).
"patched" builds the patched `schedule` in memory (the stock file, checked against the
wheel's RECORD, plus the patch, via tools/serve/vllm_patches.py's strict applier), compiled against
the stock module's globals; nothing is written to the venv. All requests go in with one
`LLM.generate` call (max_tokens=1, greedy), so they are all waiting at step 1.
Workloads (token ids from a seeded RNG, ~300 tokens each):
  distinct:    every prompt unique;
  grouped:     groups of 4 prompts share a 260-token prefix (one state, four questions), the way
               onepass sends one decision's questions, one decision after the other;
  interleaved: the same prompts as several decisions arriving together (first questions first);
  followup:    the states' first questions run first (not measured); then each new unique
               prompt is followed by three more questions on an already cached state;
  mixed:       unique prompts alternating long (~300 tokens) and short (~40 tokens): a long one
               that cannot get a block-aligned chunk of the budget left ends the stock scan,
               although the short ones behind it would fit.
Wall time is the whole generate call (after a warm-up), on this machine's CPUs; it is noisy on
a shared 2-core machine, the step counts are exact and repeatable.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MODEL = Path("~/.cache/onepass/models/qwen3-next-tiny").expanduser()
PATCH = "scheduler-waiting-scan.patch"
SCHED_PATH = "vllm/v1/core/sched/scheduler.py"
# A 260-token state covers two whole 128-token blocks (the block size vLLM picks for this
# model), so a question after a cached state needs only its ~40-token tail.
STATE_LEN, PROMPT_LEN, GROUP = 260, 300, 4


# ---- workloads ---------------------------------------------------------------------------

def workloads(n: int) -> dict[str, tuple[list, list]]:
    """name -> (prompts run first to warm the prefix cache, measured prompts)."""
    rng = random.Random(1234)

    def ids(k: int) -> list[int]:
        return [rng.randrange(1000, 40000) for _ in range(k)]  # ordinary (non-special) ids

    distinct = [ids(PROMPT_LEN + rng.randrange(-20, 21)) for _ in range(n)]
    groups = []
    for g in range(0, n, GROUP):
        state = ids(STATE_LEN)
        groups.append([state + ids(PROMPT_LEN - STATE_LEN + rng.randrange(-10, 11))
                       for _ in range(min(GROUP, n - g))])
    grouped = [p for group in groups for p in group]
    # Decisions from concurrent clients interleave: every state's first question comes first.
    interleaved = [g[i] for i in range(GROUP) for g in groups if i < len(g)]
    # States already cached (their first questions ran before), new decisions arriving in
    # between: each fresh prompt is followed by three questions on a cached state.
    followup = []
    for i, g in enumerate(groups):
        followup += [distinct[i]] + g[1:]
    mixed = [ids(PROMPT_LEN) if i % 2 == 0 else ids(40) for i in range(n)]
    return {"mixed": ([], mixed), "distinct": ([], distinct), "grouped": ([], grouped),
            "interleaved": ([], interleaved),
            "followup": ([g[0] for g in groups], followup[:n])}


# ---- child: one engine, one mode ---------------------------------------------------------

def patched_schedule(stock_module: types.ModuleType):
    """The patched Scheduler.schedule, bound to the stock module's globals (same enums,
    same helpers); the file on disk is checked against the wheel first and never written."""
    sys.path.insert(0, str(ROOT / "tools" / "serve"))
    import vllm_patches as vp
    sp = Path(stock_module.__file__).resolve().parents[4]
    _, hashes = vp.record(sp)
    items = vp.targets({PATCH: vp.load_patches()[PATCH]})[SCHED_PATH]
    state, text = vp.file_state(sp, SCHED_PATH, items, hashes.get(SCHED_PATH))
    if state != "stock":
        sys.exit(f"{sp / SCHED_PATH} is already patched: this bench needs a stock vLLM")
    scratch: dict = {"__name__": stock_module.__name__ + "_patched_copy"}
    exec(compile(text, stock_module.__file__, "exec"), scratch)
    fn = scratch["Scheduler"].schedule
    assert fn.__closure__ is None, "schedule uses a closure (super()?): cannot rebind"
    return types.FunctionType(fn.__code__, stock_module.__dict__, fn.__name__, fn.__defaults__)


def install_probes(mode: str, log: dict) -> None:
    """Wrap Scheduler.schedule, the align split and the slot allocator to record, per step,
    what was admitted and why the waiting scan stopped."""
    from vllm.v1.core import kv_cache_manager
    from vllm.v1.core.sched import scheduler as sched_mod
    cls = sched_mod.Scheduler
    schedule = patched_schedule(sched_mod) if mode == "patched" else cls.schedule
    split = cls._mamba_block_aligned_split
    allocate = kv_cache_manager.KVCacheManager.allocate_slots

    def counting_allocate(self, *args, **kwargs):
        blocks = allocate(self, *args, **kwargs)
        # None also comes from MambaManager deferring a hit on a state block cached (copied)
        # in this same step; the scheduler then ends the scan (`new_blocks is None: break`).
        log["alloc_none"] += blocks is None
        return blocks

    def counting_split(self, *args, **kwargs):
        n = split(self, *args, **kwargs)
        log["zero_splits"] += n == 0
        return n

    def counting_schedule(self, *args, **kwargs):
        if "config" not in log:
            log["config"] = {"block_size": self.cache_config.block_size,
                             "mamba_cache_mode": self.cache_config.mamba_cache_mode,
                             "max_num_batched_tokens": self.max_num_scheduled_tokens,
                             "aligned_split": self.need_mamba_block_aligned_split}
        waiting, zeros, nones = len(self.waiting), log["zero_splits"], log["alloc_none"]
        out = schedule(self, *args, **kwargs)
        if out.total_num_scheduled_tokens:
            log["steps"].append((waiting, len(out.scheduled_new_reqs),
                                 out.total_num_scheduled_tokens, log["zero_splits"] - zeros,
                                 log["alloc_none"] - nones))
        return out

    cls._mamba_block_aligned_split = counting_split
    cls.schedule = counting_schedule
    kv_cache_manager.KVCacheManager.allocate_slots = counting_allocate


def run_child(mode: str, model: str, budget: int, n: int) -> None:
    os.environ.update(VLLM_ENABLE_V1_MULTIPROCESSING="0", VLLM_PLUGINS="",
                      VLLM_CPU_KVCACHE_SPACE=os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"))
    log: dict = {"zero_splits": 0, "alloc_none": 0, "steps": []}
    install_probes(mode, log)
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    llm = LLM(model=model, dtype="bfloat16", enforce_eager=True, max_model_len=2048,
              enable_prefix_caching=True, max_num_batched_tokens=budget, seed=0)
    params = SamplingParams(max_tokens=1, temperature=0.0, logprobs=1)
    llm.generate([TokensPrompt(prompt_token_ids=list(range(1000, 1300)))] * 2, params,
                 use_tqdm=False)  # warm-up, not measured
    for name, (warm, prompts) in workloads(n).items():
        llm.reset_prefix_cache()
        if warm:
            llm.generate([TokensPrompt(prompt_token_ids=p) for p in warm], params,
                         use_tqdm=False)
        log.update(steps=[], zero_splits=0, alloc_none=0)
        t0 = time.perf_counter()
        outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params,
                            use_tqdm=False)
        wall = time.perf_counter() - t0
        answers = [(o.outputs[0].token_ids[0], o.outputs[0].logprobs[0][o.outputs[0].token_ids[0]]
                    .logprob) for o in outs]
        print("RESULT " + json.dumps({"mode": mode, "budget": budget, "workload": name,
                                      "wall_s": wall, "steps": log["steps"],
                                      "config": log["config"], "answers": answers}), flush=True)
    assert "onepass_engine" not in sys.modules, "the onepass plugin loaded: not stock vLLM"


# ---- parent: run the children, print the table -------------------------------------------

def run_mode(mode: str, model: str, budget: int, n: int) -> list[dict]:
    cmd = [sys.executable, __file__, "--child", mode, "--model", model,
           "--budgets", str(budget), "--requests", str(n)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    results = [json.loads(line[7:]) for line in proc.stdout.splitlines()
               if line.startswith("RESULT ")]
    if proc.returncode != 0 or not results:
        sys.exit(f"{mode}/{budget} failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")
    return results


def summarize(r: dict) -> dict:
    steps = r["steps"]
    admit = [s[1] for s in steps]
    busy = [s for s in steps if s[0] > 0]  # steps that began with requests waiting
    return {"steps": len(steps), "max": max(admit), "mean": sum(s[1] for s in busy) / len(busy),
            "stalls": sum(1 for s in busy if s[1] == 0), "zero": sum(s[3] for s in steps),
            "none": sum(s[4] for s in steps),
            "seq": "".join(str(a) if a < 10 else "+" for a in admit[:24])}


def print_table(results: list[dict]) -> None:
    cfg = results[0]["config"]
    print(f"vLLM picked: block_size={cfg['block_size']} mamba_cache_mode="
          f"{cfg['mamba_cache_mode']} aligned_split={cfg['aligned_split']}")
    print(f"{'budget':>6} {'workload':11} {'mode':8} {'steps':>5} {'max':>4} {'mean':>5} "
          f"{'stalls':>6} {'split0':>6} {'alloc0':>6} {'wall_s':>7}  admitted per step")
    for r in results:
        s = summarize(r)
        print(f"{r['budget']:>6} {r['workload']:11} {r['mode']:8} {s['steps']:>5} {s['max']:>4} "
              f"{s['mean']:>5.2f} {s['stalls']:>6} {s['zero']:>6} {s['none']:>6} "
              f"{r['wall_s']:>7.3f}  "
              f"{s['seq']}")
    print("mean = new requests admitted per step, over steps that began with requests waiting; "
          "stalls = such steps that admitted none;\nsplit0 = align splits that returned 0 "
          "(stock stops the scan there, patched skips); alloc0 = allocate_slots gave None "
          "(both stop the scan)")


def compare_answers(results: list[dict]) -> None:
    by_key = {(r["budget"], r["workload"], r["mode"]): r["answers"] for r in results}
    for (budget, workload, mode), ans in sorted(by_key.items()):
        if mode != "stock":
            continue
        other = by_key[(budget, workload, "patched")]
        same = sum(a[0] == b[0] for a, b in zip(ans, other))
        diff = max(abs(a[1] - b[1]) for a, b in zip(ans, other))
        print(f"answers budget {budget} {workload}: same greedy token {same}/{len(ans)}, "
              f"max |logprob diff| {diff:.3g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--budgets", default="256,512", help="max_num_batched_tokens values")
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--child", choices=("stock", "patched"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    if args.child:
        run_child(args.child, args.model, budgets[0], args.requests)
        return
    results = []
    for budget in budgets:
        for mode in ("stock", "patched"):
            results += run_mode(mode, args.model, budget, args.requests)
    print_table(results)
    compare_answers(results)


if __name__ == "__main__":
    main()
