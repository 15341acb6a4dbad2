"""Two-way vs one-way reading through the shim: latency per request, and how far the answers move.

Usage: python bench/measure/two_way.py --shim http://127.0.0.1:8741 [--n 20]
Runs bench/measure/latency.py's cases through /v1/systemone with attention_mode causal and
bidirectional, alternating, each iteration on a new state (a unique ticket number), after untimed
warm-ups.
Prints p50/p95 per mode and case, the ratio, and the mean absolute change of the answers'
probabilities between the two modes (same state, same questions).
Why the cost differs: a two-way read never uses the prefix cache (the state's KV depends on
what follows it), so a request with k questions prefills the state k times instead of once.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # latency.py beside it
from latency import CASES, pct, post, state  # noqa: E402


def probabilities(doc: dict) -> list[float]:
    out = []
    for answer in doc["answers"].values():
        out += list(answer["probabilities"].values()) if "probabilities" in answer else [answer["noul"]]
    return out


def run_case(shim: str, name: str, sentences: int, questions: dict, n: int) -> dict:
    times = {"causal": [], "bidirectional": []}
    moves = []
    for i in range(-2, n):  # two untimed warm-ups
        docs = {}
        for mode in times:
            body = {"model": "jev-latest", "state": state(f"{name[0]}{i}-{mode}", sentences),
                    "questions": questions, "attention_mode": mode}
            started = time.perf_counter()
            docs[mode] = post(shim + "/v1/systemone", body)
            if i >= 0:
                times[mode].append((time.perf_counter() - started) * 1000)
        same = {"model": "jev-latest", "state": state(f"{name[0]}{i}-same", sentences),
                "questions": questions}
        a, b = (post(shim + "/v1/systemone", {**same, "attention_mode": m}) for m in times)
        moves += [abs(x - y) for x, y in zip(probabilities(a), probabilities(b))]
    row = {"case": name, "n": n, "input_tokens": docs["causal"]["usage"]["input_tokens"]}
    for mode, values in times.items():
        row[mode] = {"p50_ms": round(pct(values, 0.5)), "p95_ms": round(pct(values, 0.95))}
    row["p50_ratio_two_way_over_causal"] = round(row["bidirectional"]["p50_ms"]
                                                 / row["causal"]["p50_ms"], 3)
    row["mean_abs_probability_change"] = round(statistics.fmean(moves), 4)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shim", default="http://127.0.0.1:8741")
    ap.add_argument("--n", type=int, default=20)
    args = ap.parse_args()
    print("| case | input tokens | causal p50/p95 | two-way p50/p95 | p50 ratio | mean |Δp| |")
    for name, (sentences, questions) in CASES.items():
        r = run_case(args.shim, name, sentences, questions, args.n)
        c, b = r["causal"], r["bidirectional"]
        print(f"| {name} | {r['input_tokens']} | {c['p50_ms']}/{c['p95_ms']} ms | "
              f"{b['p50_ms']}/{b['p95_ms']} ms | {r['p50_ratio_two_way_over_causal']} | "
              f"{r['mean_abs_probability_change']} |")
        print(json.dumps(r))


if __name__ == "__main__":
    main()
