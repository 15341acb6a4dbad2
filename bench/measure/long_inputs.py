"""Long inputs: each decision buried in unrelated text, its state cut by BM25 or by head and tail.

Usage: .venv/bin/python bench/measure/long_inputs.py --url http://127.0.0.1:8741 [--data PATH ...]
       [--limit N] [--times 4] [--context 2048] [--concurrency 2] [--seed 0] [--json OUT]
       [--whole-url URL] [--vllm URL] [--dry-run]
Each eval-split item (devdata.split, `--limit` per task) gets padded copies whose state is about
`--times` x `--context` tokens, estimated as len(text) / 4 characters (JSON as compact JSON), the
item's own record at the start, in the middle or at the end of filler: paragraphs (blank-line
separated; a JSON state's string leaves) of >= MIN_PARAGRAPH characters from other tasks' states
(cause_and_effect's variants are one task), drawn from --seed and the item, the same for all three
positions. A text record is one block among the filler paragraphs; a JSON record becomes
{"notes_before": [...], "record": <original>, "notes_after": [...]}, the filler split by
characters. Arms: per position `bm25` and `head_tail` (kwargs.layout.state_selection), and `whole`
(the unpadded items). Prints accuracy, questions cut and their mean kept / total tokens
(x_effort_used), non-200 answers, ms per decision, and bm25 against head_tail on the same questions
(exact two-sided sign test on the discordant pairs). --dry-run only builds and checks the copies.
Owns: building the padded states, the arm rows and the paired comparison; sending goes through
evaluate.run, metrics through evaluate.report and metrics.
Never starts or stops a server, never changes the data, never stops on a non-200 answer.
"""
import argparse
import json
import math
import random
import re
import statistics
import sys
from collections import Counter
from itertools import accumulate
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]  # bench/: its modules import each other by name
sys.path[:0] = [str(BENCH / d) for d in ("data", "lib", "measure")]
import decision_metrics as metrics  # noqa: E402
import devdata  # noqa: E402
import evaluate  # noqa: E402
import selection_recall  # noqa: E402

POSITIONS = ("start", "middle", "end")
METHODS = ("bm25", "head_tail")
CHARS_PER_TOKEN = 4  # the estimate for sizing the padding; the server counts real tokens
MIN_PARAGRAPH = 40  # shorter pieces (a log level, a key's value) are not filler paragraphs


def family(task: str) -> str:
    """bigbench/cause_and_effect/one_sentence -> bigbench/cause_and_effect: one task for filler."""
    return "/".join(task.split("/")[:2])


def rendered(state) -> str:
    return state if isinstance(state, str) else json.dumps(state, ensure_ascii=False,
                                                           separators=(",", ":"))


def paragraphs(state) -> list[str]:
    if isinstance(state, str):
        return [p.strip() for p in re.split(r"\n\s*\n", state) if p.strip()]
    values = state.values() if isinstance(state, dict) else state if isinstance(state, list) else []
    return [p for v in values for p in paragraphs(v)]


def filler_pools(all_items: list) -> dict:
    """family -> unique paragraphs of the other families' states (none that its own states hold)."""
    own = {}
    for item in all_items:
        found = own.setdefault(family(item["task"]), {})
        for p in paragraphs(item["body"]["state"]):
            if len(p) >= MIN_PARAGRAPH:
                found[p] = None
    return {fam: list(dict.fromkeys(p for other, ps in own.items() if other != fam
                                    for p in ps if p not in own[fam])) for fam in own}


def draw(pool: list, rng: random.Random, need: int) -> list[str]:
    """Paragraphs at random, none twice until the pool is used up, until `need` characters."""
    out, used, total = [], set(), 0
    while total < need:
        if len(used) == len(pool):
            used.clear()
        j = rng.randrange(len(pool))
        if j not in used:
            used.add(j)
            out.append(pool[j])
            total += len(pool[j]) + 2  # the blank line, or a JSON string's quotes and comma
    return out


def padded_state(state, filler: list, position: str):
    half = sum(map(len, filler)) / 2
    cut = {"start": 0, "end": len(filler)}.get(position)
    if cut is None:
        cut = next(k for k, s in enumerate(accumulate(map(len, filler), initial=0)) if s >= half)
    before, after = filler[:cut], filler[cut:]
    if isinstance(state, str):
        return "\n\n".join(before + [state] + after)
    return {"notes_before": before, "record": state, "notes_after": after}


def intact(state, padded, position: str) -> bool:
    """The original record, byte for byte, where it was put."""
    if isinstance(state, str):
        return {"start": padded.startswith(state), "end": padded.endswith(state)}.get(
            position, state in padded)
    misplaced = {"start": padded["notes_before"], "end": padded["notes_after"]}.get(position)
    return padded["record"] == state and rendered(state) in rendered(padded) and not misplaced


def padded_items(items, pools, target_chars: int, seed: int, position: str) -> list[dict]:
    out = []
    for item in items:
        state, pool = item["body"]["state"], pools.get(family(item["task"]))
        if not pool:
            raise SystemExit(f"no filler from other tasks for {item['task']}: more --data")
        rng = random.Random(f"{seed}:{item['task']}:{item['id']}")  # str seeds are stable
        filler = draw(pool, rng, target_chars - len(rendered(state)))
        padded = padded_state(state, filler, position)
        out.append({**item, "body": {**item["body"], "state": padded}, "position": position,
                    "intact": intact(state, padded, position)})
    return out


def run_arm(url: str, items: list, extra: dict, concurrency: int, desc: str) -> dict:
    """evaluate.run; each record carries its question's x_effort_used.state_selection entry."""
    return evaluate.run(url, items, concurrency, extra=extra, desc=desc)


def merged(results: list) -> dict:
    out = {k: [x for r in results for x in r[k]] for k in ("records", "decisions", "error_samples")}
    return {**out, "errors": dict(sum((Counter(r["errors"]) for r in results), Counter()))}


def arm_row(result: dict) -> dict:
    row = evaluate.report(result)["overall"]
    cut = [r["selection"] for r in result["records"] if r["selection"]]
    mean = lambda xs: statistics.mean(xs) if xs else None  # noqa: E731
    return {**row, "cut": len(cut), "kept_tokens": mean([s["kept_tokens"] for s in cut]),
            "total_tokens": mean([s["total_tokens"] for s in cut]),
            "kept_share": mean([s["kept_tokens"] / s["total_tokens"] for s in cut]),
            "methods": dict(Counter(s["method"] for s in cut)), "errors": result["errors"],
            "record_kept": mean([r["record_kept"] for r in result["records"]
                                 if r.get("record_kept") is not None])}


def sign_test(b: int, c: int) -> float:
    """Exact two-sided binomial p (McNemar exact) for b against c discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n)


def paired(bm25: list, head_tail: list) -> dict:
    def key(r):
        return r["position"], r["task"], r["id"], r["qid"]
    other = {key(r): metrics.correct(r) for r in head_tail}
    c = Counter((metrics.correct(r), other[key(r)]) for r in bm25 if key(r) in other)
    out = {"n": sum(c.values()), "both_right": c[True, True], "only_bm25": c[True, False],
           "only_head_tail": c[False, True], "both_wrong": c[False, False]}
    return {**out, "p": sign_test(out["only_bm25"], out["only_head_tail"])}


def dry_run(items, pools, target_chars, seed) -> int:
    stats = {}  # (task, position) -> [items, characters, intact]; one position in memory at once
    for position in POSITIONS:
        for p in padded_items(items, pools, target_chars, seed, position):
            s = stats.setdefault((p["task"], position), [0, 0, 0])
            s[:] = s[0] + 1, s[1] + len(rendered(p["body"]["state"])), s[2] + p["intact"]
    print("| task | position | items | mean chars | est. tokens | records intact |")
    print("|---|---|---|---|---|---|")
    order = {task: k for k, task in enumerate(dict.fromkeys(i["task"] for i in items))}
    for (task, position), (n, chars, ok) in sorted(
            stats.items(), key=lambda kv: (order[kv[0][0]], POSITIONS.index(kv[0][1]))):
        print(f"| {task} | {position} | {n} | {chars / n:.0f} | "
              f"{chars / n / CHARS_PER_TOKEN:.0f} | {ok}/{n} |")
    bad = sum(n - ok for n, _, ok in stats.values())
    print(f"\n{bad} padded records not intact" if bad else "\nevery original record intact")
    return 1 if bad else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8741", help="server base URL")
    parser.add_argument("--whole-url", default=None,
                        help="server for the unpadded arm (default --url); give one with a "
                             "larger context so the records are read whole")
    parser.add_argument("--data", nargs="+", default=[str(devdata.DEFAULT_DATA)],
                        help="data files or directories (default: all dev data)")
    parser.add_argument("--limit", type=int, default=None, help="first N eval items per task")
    parser.add_argument("--concurrency", type=int, default=2, help="requests at once")
    parser.add_argument("--times", type=float, default=4.0, help="padded state / context")
    parser.add_argument("--context", type=int, default=2048, help="the server's context, tokens")
    parser.add_argument("--seed", type=int, default=0, help="filler draw")
    parser.add_argument("--json", help="write every row, the paired counts and every record here")
    parser.add_argument("--dry-run", action="store_true", help="build and check; send nothing")
    parser.add_argument("--vllm", default=None,
                        help="the server's vLLM: also measure the share of each record that the "
                             "fitting keeps (bench/lib/selection_recall.py; --context must then be "
                             "the shim's context)")
    args = parser.parse_args(argv)
    skipped = Counter()
    all_items = devdata.load(args.data, skipped)
    items = devdata.split(all_items, "eval", args.limit)
    pools = filler_pools(all_items)
    target_chars = int(args.times * args.context * CHARS_PER_TOKEN)
    if args.dry_run:
        return dry_run(items, pools, target_chars, args.seed)
    layout = {m: {"kwargs": {"layout": {"state_selection": m}}} for m in METHODS}
    results = {("whole", None): run_arm(args.whole_url or args.url, items, {},
                                        args.concurrency, "whole")}
    for position in POSITIONS:
        padded = padded_items(items, pools, target_chars, args.seed, position)
        for method in METHODS:
            results[method, position] = run_arm(args.url, padded, layout[method],
                                                args.concurrency, f"{method} {position}")
            if args.vllm:  # the same fitting, offline: how much of the record each cut kept
                kept = selection_recall.recall(args.vllm, items, padded, method,
                                               args.context - 1)
                for rec in results[method, position]["records"]:
                    rec["record_kept"] = kept.get((rec["task"], rec["id"], rec["qid"]))
    for (arm, position), result in results.items():
        for x in result["records"] + result["decisions"]:
            x.update(arm=arm, position=position)
    pooled = {m: merged([results[m, p] for p in POSITIONS]) for m in METHODS}
    rows = {"whole": arm_row(results["whole", None])}
    for method in METHODS:
        rows[f"{method} (all positions)"] = arm_row(pooled[method])
        rows.update({f"{method} {p}": arm_row(results[method, p]) for p in POSITIONS})
    pairs = {p: paired(results["bm25", p]["records"], results["head_tail", p]["records"])
             for p in POSITIONS}
    pairs = {"all positions": paired(*(pooled[m]["records"] for m in METHODS)), **pairs}
    cols = ("n", "accuracy", "cut", "kept_tokens", "total_tokens", "kept_share", "record_kept",
            "non_200", "latency_ms_per_decision")
    print("| arm | questions | accuracy | cut | kept tokens | total tokens | kept / total "
          "| record kept | non-200 | ms/decision |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(evaluate.cell(row.get(c), 0 if c in (
            "kept_tokens", "total_tokens", "latency_ms_per_decision") else 3) for c in cols) + " |")
        if row["non_200"] or row["errors"]:
            print(f"WARNING {name}: {row['non_200']} non-200 answers; {row['errors']}",
                  file=sys.stderr)
        if name != "whole" and row["cut"] != row["n"]:
            print(f"WARNING {name}: {row['cut']} of {row['n']} questions were cut", file=sys.stderr)
    print("\n| bm25 vs head_tail | pairs | both right | only bm25 | only head_tail | both wrong "
          "| sign test p |")
    print("|---|---|---|---|---|---|---|")
    for name, c in pairs.items():
        print(f"| {name} | {c['n']} | {c['both_right']} | {c['only_bm25']} | "
              f"{c['only_head_tail']} | {c['both_wrong']} | {c['p']:.4g} |")
    for what, count in skipped.items():
        print(f"skipped {what}: {count}")
    if args.json:
        doc = {"url": args.url, "data": args.data, "limit": args.limit, "times": args.times,
               "context": args.context, "seed": args.seed, "concurrency": args.concurrency,
               "target_chars": target_chars, "skipped": dict(skipped), "rows": rows,
               "paired": pairs, **merged(list(results.values()))}
        Path(args.json).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n",
                                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
