"""Thinking before answering, measured: accuracy, ECE and latency with kwargs.reasoning off, auto and
on, and the share of questions that thought; number questions with known answers beside.

Usage: .venv/bin/python bench/measure/reasoning_modes.py --url http://127.0.0.1:8741
       [--limit 40] [--numbers 40] [--modes off auto on] [--concurrency 2] [--json OUT.json]
Owns: sending the eval half of the dev data (bench/data/devdata.py) and generated number items
(`number_items`: a number written in a short record, asked for without arithmetic) to
`<url>/v1/systemone` once per mode, and the table.
Never: starts a server, changes the data, or stops on a non-200 answer (counted).
"""
import argparse
import json
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]  # bench/: its modules import each other by name
sys.path[:0] = [str(BENCH / d) for d in ("data", "lib", "measure")]
import decision_metrics as metrics  # noqa: E402
import devdata  # noqa: E402
import evaluate  # noqa: E402

TEMPLATES = [  # (record, question): the answer is the number written in the record
    ("Order {id} was delivered {n} days late; the customer wants a partial refund.",
     "How many days late was the delivery?"),
    ("The warehouse report lists {n} pallets in aisle {id} waiting for inspection.",
     "How many pallets are waiting for inspection?"),
    ("Ticket {id}: the customer says the app crashed {n} times since the last update.",
     "How many times did the app crash?"),
    ("Invoice {id} charges for {n} hours of consulting at the agreed rate.",
     "How many hours of consulting are charged?"),
]


def number_items(n: int, seed: int = 0) -> list[dict]:
    """n number items with known answers; deterministic from the seed. The record also holds
    an unrelated number (an id), so reading the wrong number is a visible error."""
    rng = random.Random(seed)
    items = []
    for i in range(n):
        record, question = TEMPLATES[i % len(TEMPLATES)]
        value = rng.randint(2, 400)
        state = record.format(id=rng.randint(1000, 9999), n=value)
        items.append({"task": "numbers", "id": f"number-{seed}-{i}", "gold": {"q": float(value)},
                      "body": {"model": devdata.MODEL, "state": state, "questions": {
                          "q": {"type": "number", "instructions": question}}}})
    return items


def run_mode(url: str, items: list, mode: str, concurrency: int) -> dict:
    """Every item with kwargs.reasoning.mode = mode: records, number results, latency, thoughts."""
    endpoint = url.rstrip("/") + "/v1/systemone"

    def one(item):
        body = {**item["body"], "kwargs": {"reasoning": {"mode": mode}}}
        return item, evaluate.post(endpoint, body)
    with ThreadPoolExecutor(max(1, concurrency)) as pool:
        replies = list(pool.map(one, items))
    records, numbers, ms, errors, thought, asked = [], [], [], 0, 0, 0
    for item, (status, doc, seconds) in replies:
        if status != 200:
            errors += 1
            continue
        ms.append(seconds * 1000)
        effort = (doc.get("x_effort_used") or {}).get("reasoning") or {}
        thought += sum(q["thought"] for q in effort.get("questions", ()))
        asked += len(doc["answers"])
        for qid, answer in doc["answers"].items():
            gold = item["gold"][qid]
            if answer["type"] == "number":
                numbers.append(answer["number"] == gold)
            else:
                records.append(metrics.record(item["task"], answer["type"], answer, gold))
    return {"mode": mode, "n_requests": len(items), "non_200": errors,
            "reads": metrics.summary(records) if records else None,
            "numbers_exact": statistics.mean(numbers) if numbers else None,
            "numbers_n": len(numbers),
            "thought_share": thought / asked if asked else None,
            "latency_p50_ms": round(statistics.median(ms), 1) if ms else None,
            "latency_p95_ms": round(sorted(ms)[int(0.95 * (len(ms) - 1))], 1) if ms else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8741")
    ap.add_argument("--limit", type=int, default=40, help="dev items per task (eval half)")
    ap.add_argument("--numbers", type=int, default=40, help="generated number items")
    ap.add_argument("--modes", nargs="+", default=["off", "auto", "on"])
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    items = devdata.split(devdata.load(), "eval", args.limit) + number_items(args.numbers)
    rows = []
    for mode in args.modes:
        started = time.perf_counter()
        row = run_mode(args.url, items, mode, args.concurrency)
        row["wall_s"] = round(time.perf_counter() - started, 1)
        rows.append(row)
        reads = row["reads"] or {}
        print(f"{mode:>4}: accuracy {evaluate.cell(reads.get('accuracy'))}  ECE "
              f"{evaluate.cell(reads.get('ece'))}  numbers exact "
              f"{evaluate.cell(row['numbers_exact'])} (n {row['numbers_n']})  thought "
              f"{evaluate.cell(row['thought_share'])}  p50 {row['latency_p50_ms']} ms  p95 "
              f"{row['latency_p95_ms']} ms  non-200 {row['non_200']}  ({row['wall_s']} s)",
              flush=True)
    print("command: bench/measure/reasoning_modes.py " + " ".join(sys.argv[1:]))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
