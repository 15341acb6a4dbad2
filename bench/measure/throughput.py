"""Decisions per second at several client counts: onepass against direct per-question vLLM calls.

Usage: .venv/bin/python bench/measure/throughput.py --shim http://127.0.0.1:8741
       --vllm http://127.0.0.1:8742 [--clients 1,4,16] [--requests 32] [--case b]
       [--dtype bfloat16] [--json OUT] [--png latency_clients.png]
Each of C clients sends requests back to back until --requests decisions are done (each a new
state, so no earlier request is replayed from the prefix cache); warm-up requests are not timed.
- onepass: one POST /v1/systemone per decision, the profile's own layout (or --layout).
- direct, question first: what a client without onepass sends: one /v1/completions call per
  question, all of a decision's calls at once, each a whole prompt (question, options, then the
  state), so every call reads the state again.
- direct, state first: the same calls with the state first; vLLM's prefix cache may share it.
Prints, per row: decisions/s, questions/s, p50/p99 latency per decision, vLLM engine steps per
decision, prompt tokens computed per second (vLLM's prompt tokens minus its prefix-cache hits,
from its /metrics), and those tokens' FLOP rate against the CPU's measured matmul rate in the
served dtype (torch, all cores), so the distance to the floor is visible.
--png draws p50/p99 latency per decision against clients, a line per path (bench/lib/plots.py).
"""
import urllib.request
import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "bench" / "measure"), str(ROOT / "bench" / "lib"), str(ROOT),
                str(ROOT / "tools" / "serve")]
import cpu_dtype  # noqa: E402  (the matmul rate)
import latency  # noqa: E402  (cases, states, post, percentiles)
import shim_auth  # noqa: E402  (vLLM's key, for the direct clients)
from onepass import config  # noqa: E402
from onepass.images import inputs as image_inputs  # noqa: E402
from onepass.api import systemone  # noqa: E402
from onepass.pipeline import offline  # noqa: E402
from onepass.backend.engine import Engine  # noqa: E402
from onepass.prompt.layout import layout  # noqa: E402
from onepass.backend.probes import verified_labels  # noqa: E402

CASES = {"a": 0, "b": 1}  # index into latency.CASES


def model_flops_per_token(model_dir: Path) -> float:
    """2 x the weights every prompt token passes through (attention projections and MLP of each
    layer); the embedding lookup and the one logits row per request are left out."""
    c = json.loads((model_dir / "config.json").read_text())
    h, layers, inter = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"]
    head = c.get("head_dim") or h // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * head
    per_layer = h * c["num_attention_heads"] * head * 2 + h * kv * 2 + 3 * h * inter
    return 2.0 * layers * per_layer


def matmul_flops(dtype: str, model_dir: Path) -> float:
    """The CPU's best matmul rate in the model's MLP shapes at 256 and 1,024 prompt tokens (the
    smallest alone underrated bf16 by a third here)."""
    c = json.loads((model_dir / "config.json").read_text())
    h, inter = c["hidden_size"], c["intermediate_size"]
    shapes = [(t, k, n) for t in (256, 1024) for k, n in ((h, inter), (inter, h))]
    return cpu_dtype.matmul_rate(dtype, shapes, seconds=1.0)


class Direct:
    """A client without onepass: one completions call per question, all at once."""

    def __init__(self, vllm: str, profile, question_first: bool):
        self.engine = Engine(vllm, profile.served_model_name, timeout_s=600, num_connections=64,
                             key=shim_auth.vllm_key())
        self.labels = verified_labels(self.engine, profile)
        self.profile, self.plain = profile, config.Layout(question_first=question_first)
        policy = image_inputs.Policy(profile.model_name, None, None)
        self.parse = lambda body: offline(systemone, body, layout=self.plain,
                                          image_policy=policy)[0]

    def decide(self, body: dict) -> None:
        reads = layout(self.parse(body), self.profile, self.labels)
        with ThreadPoolExecutor(len(reads)) as pool:
            list(pool.map(self.engine.read, reads))


COUNTERS = ("vllm:prompt_tokens_total", "vllm:prefix_cache_hits_total",
            "vllm:iteration_tokens_total_count", "vllm:request_success_total")


def vllm_counters(vllm: str) -> dict:
    """vLLM's prompt tokens, prefix-cache hits (tokens), engine steps and finished requests (each
    one-token read finishes in the step that prefills its last token) so far."""
    with urllib.request.urlopen(vllm + "/metrics", timeout=30) as r:
        text = r.read().decode()
    found = dict.fromkeys(COUNTERS, 0.0)
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in found:
            found[name] += float(line.rsplit(" ", 1)[1])
    return found


def run(decide, make_body, clients: int, requests: int, warmup: int, vllm: str) -> dict:
    """Every client takes the next request number until `requests` are done."""
    for i in range(warmup):
        decide(make_body(f"W{clients}-{i}-{time.time_ns()}"))
    lock, counter, times = threading.Lock(), iter(range(requests)), []
    before = vllm_counters(vllm)

    def client():
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            t = time.perf_counter()
            decide(make_body(f"R{clients}-{i}-{time.time_ns()}"))
            with lock:
                times.append(time.perf_counter() - t)
    start = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    d = {k: v - before[k] for k, v in vllm_counters(vllm).items()}
    prompt, cached, steps, finished = (d[k] for k in COUNTERS)
    return {"decisions_per_s": requests / elapsed, "p50_ms": statistics.median(times) * 1000,
            "p99_ms": latency.pct(times, 0.99) * 1000, "prompt_tokens": prompt,
            "cached_tokens": cached, "steps_per_decision": steps / requests,
            "vllm_requests_per_decision": finished / requests,
            "computed_tokens_per_s": (prompt - cached) / elapsed, "seconds": elapsed}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shim", default="http://127.0.0.1:8741")
    ap.add_argument("--vllm", default="http://127.0.0.1:8742")
    ap.add_argument("--config", default=str(ROOT / "serve_config.json"))
    ap.add_argument("--profile", default="")
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--requests", type=int, default=32, help="timed decisions per row")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--case", choices=CASES, default="b")
    ap.add_argument("--layout", default="profile", help="profile, plain, or a JSON object")
    ap.add_argument("--dtype", default="", help="served dtype, for the matmul rate ('' skips it)")
    ap.add_argument("--model-dir", default=str(Path.home() / ".cache/onepass/models/"
                                               "smollm2-135m-instruct"))
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--png", help="draw latency against clients here (matplotlib)")
    args = ap.parse_args()
    _, profile = config.load_profile(args.config, args.profile)
    name, (sentences, questions, _) = list(latency.CASES.items())[CASES[args.case]]
    extra = {} if args.layout == "profile" else {"kwargs": {"layout": asdict(config.Layout(
        **({} if args.layout == "plain" else json.loads(args.layout))))}}
    make_body = lambda tag: {"model": "jev-latest", "state": latency.state(tag, sentences),
                             "questions": questions, **extra}

    paths = {"onepass": lambda body: latency.post(args.shim + "/v1/systemone", body),
             "direct, question first": Direct(args.vllm, profile, True).decide,
             "direct, state first": Direct(args.vllm, profile, False).decide}
    flops = model_flops_per_token(Path(args.model_dir))
    peak = matmul_flops(args.dtype, Path(args.model_dir)) if args.dtype else None
    rows = []
    print(f"case {name}; {args.requests} decisions per row; layout {args.layout}; "
          f"{platform.machine()} {os.cpu_count()} cores; model {profile.served_model_name}")
    if peak:
        print(f"matmul rate ({args.dtype}, best of 4 projection shapes): {peak / 1e9:.1f} GFLOP/s; "
              f"model: {flops / 1e9:.3f} GFLOP per prompt token")
    print("| path | clients | decisions/s | questions/s | p50 / p99 ms | vLLM requests / engine "
          "steps per decision | prompt tokens per decision (computed) | computed tokens/s | of "
          "matmul rate |")
    print("|---|---|---|---|---|---|---|---|---|")
    for clients in [int(c) for c in args.clients.split(",")]:
        for path, decide in paths.items():
            row = run(decide, make_body, clients, args.requests, args.warmup, args.vllm)
            row.update(path=path, clients=clients, case=args.case, layout=args.layout,
                       questions_per_s=row["decisions_per_s"] * len(questions))
            share = (f"{row['computed_tokens_per_s'] * flops / peak:.0%}" if peak else "")
            print(f"| {path} | {clients} | {row['decisions_per_s']:.2f} | "
                  f"{row['questions_per_s']:.2f} | {row['p50_ms']:.0f} / {row['p99_ms']:.0f} | "
                  f"{row['vllm_requests_per_decision']:.1f} / {row['steps_per_decision']:.1f} | "
                  f"{row['prompt_tokens'] / args.requests:.0f} "
                  f"({(row['prompt_tokens'] - row['cached_tokens']) / args.requests:.0f}) | "
                  f"{row['computed_tokens_per_s']:.0f} | {share} |", flush=True)
            rows.append(row)
    if args.png:
        import plots
        served = profile.served_model_name + (f", {args.dtype}" if args.dtype else "")
        plots.latency_vs_clients(args.png, rows, plots.label(served),
                                 f"Latency per decision against clients (case {args.case}, "
                                 f"{len(questions)} questions, {args.requests} decisions a point)")
    if args.json:
        Path(args.json).write_text(json.dumps({"peak_flops": peak, "flops_per_token": flops,
                                               "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
