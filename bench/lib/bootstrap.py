"""Bootstrap 95% intervals for bench/measure/evaluate.py results, paired differences between rows,
and (with latency files) a comparison of models per unit of latency.

Usage: python bench/lib/bootstrap.py [ROW.json ...] [--model NAME EVAL.json LATENCY.txt ...]
       [--case b] [--resamples 2000] [--seed 0]
Each ROW.json / EVAL.json is `bench/measure/evaluate.py --json` output over the same items; a
ROW.json row is named by its path. `--model` (repeatable) names a row and adds its cost:
LATENCY.txt is what `bench/measure/latency.py` printed for that model (its JSON line for CASE is
read: the shim's p50).
At least one row; the first (ROW.json rows first, then --model rows, each in the order given)
is the base the others are compared with.
Prints "N records in every row", then one table row per row: accuracy, accuracy over chance, ECE,
Brier, Brier skill, order sensitivity (each with its 95% interval) on the records every row has,
and per row its chance accuracy and whether it gives information (Brier skill and accuracy over
chance each with its interval above 0: the default profile's rule); for rows with a
latency file also p50 ms and the answers per unit of latency: Brier skill per second of p50 (the
measure the embedded model is chosen by) and accuracy over chance per second. Then each row
against the first, paired on the same questions: the difference of accuracy and of Brier skill
with intervals from the same resampled decisions in both rows ("not significantly below" the
first row means the accuracy interval reaches 0).
Owns: resampling decisions (every question of a drawn decision together, since they share a
state) with a fixed seed, and the skill and per-second measures. Never talks to a server.
A record is identified across rows by (task, decision id, question id).
Brier skill: 1 - Brier / the uniform answer's Brier (1 - 1/n for n options), over the same
questions: 0 is no better than uniform, 1 is perfect. Chance accuracy: the mean of 1/n.
"""
import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import decision_metrics as metrics  # noqa: E402

SHOWN = ("accuracy", "over_chance", "ece", "brier", "brier_skill", "order_sensitivity")


def key(r: dict) -> tuple:
    """What identifies a record across rows: its task, decision and question."""
    return (r["task"], r["id"], r["qid"])


def skill(records) -> dict:
    """metrics.summary plus Brier skill against the uniform answer and chance accuracy."""
    records = list(records)
    out = metrics.summary(records)
    uniform = metrics._mean(1 - 1 / len(r["probabilities"]) for r in records)
    out["brier_skill"] = 1 - out["brier"] / uniform if records else None
    out["chance"] = metrics._mean(1 / len(r["probabilities"]) for r in records)
    out["over_chance"] = None if out["accuracy"] is None else out["accuracy"] - out["chance"]
    return out


def informative(bands: dict) -> bool:
    """The default profile's rule (docs/configuration.md): Brier skill and accuracy over chance
    each with the lower end of its interval above 0."""
    return all(bands[m][0] is not None and bands[m][0] > 0 for m in ("brier_skill", "over_chance"))


def resample(records, resamples: int, seed: int = 0):
    """RESAMPLES lists of records, each drawing decisions (by id) with replacement."""
    by_id = {}
    for r in records:
        by_id.setdefault((r["task"], r["id"]), []).append(r)
    ids, rng = list(by_id), random.Random(seed)
    for _ in range(resamples):
        yield [r for i in rng.choices(ids, k=len(ids)) for r in by_id[i]]


def interval(values) -> tuple:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None, None
    return values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))]


def intervals(records, resamples: int = 2000, seed: int = 0) -> dict:
    """{metric: (low, high)}: the 2.5th and 97.5th percentiles over the resamples."""
    draws = [skill(s) for s in resample(records, resamples, seed)]
    return {m: interval(d[m] for d in draws) for m in SHOWN}


def paired(base: list, other: list, resamples: int = 2000, seed: int = 0) -> dict:
    """Differences other - base of accuracy and Brier skill on the questions both answered,
    with intervals from resampling the same decisions for both."""
    mine = {key(r): r for r in other}
    pairs = [(r, mine[key(r)]) for r in base if key(r) in mine]
    joined = [{"task": a["task"], "id": a["id"], "pair": (a, b)} for a, b in pairs]

    def diff(rows):
        a, b = skill(r["pair"][0] for r in rows), skill(r["pair"][1] for r in rows)
        return {m: None if a[m] is None else b[m] - a[m] for m in ("accuracy", "brier_skill")}
    point = diff(joined)
    draws = [diff(s) for s in resample(joined, resamples, seed)]
    return {"n": len(pairs), **{m: (point[m], *interval(d[m] for d in draws)) for m in point}}


def shared(rows: list) -> list:
    """Each row's records restricted to those every row has, each row in its own order."""
    common = set.intersection(*({key(r) for r in records} for records in rows))
    return [[r for r in records if key(r) in common] for records in rows]


def latency_p50(path: str, case: str) -> float:
    for line in Path(path).read_text().splitlines():
        if line.startswith("{") and json.loads(line)["case"].startswith(case):
            return json.loads(line)["shim_p50_ms"]
    sys.exit(f"bootstrap: no case {case!r} JSON line in {path}")


def fmt(value, band=None, sign: str = "") -> str:
    text = "-" if value is None else f"{value:{sign}.3f}"
    if not band or band[0] is None:
        return text
    return f"{text} [{band[0]:{sign}.3f}, {band[1]:{sign}.3f}]"


def per_second(value, per_s: float) -> str:
    return "-" if value is None else f"{value * per_s:.4f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows", nargs="*", metavar="ROW.json", help="an evaluate.py --json file")
    ap.add_argument("--model", nargs=3, action="append", default=[],
                    metavar=("NAME", "EVAL_JSON", "LATENCY_TXT"),
                    help="a named row with its bench/measure/latency.py output (repeatable)")
    ap.add_argument("--case", default="b",
                    help="bench/measure/latency.py case whose p50 is the cost")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    named = [(path, path, None) for path in args.rows] + [tuple(m) for m in args.model]
    if not named:
        ap.error("give at least one ROW.json or --model NAME EVAL.json LATENCY.txt")
    loaded = [json.loads(Path(path).read_text())["records"] for _, path, _ in named]
    loaded = shared(loaded)
    p50s = [latency and latency_p50(latency, args.case) for *_, latency in named]
    print(f"{len(loaded[0])} records in every row; {args.resamples} resamples of decisions")
    costs = any(p50s)
    print("| row | n | " + " | ".join(SHOWN) + (
        f" | p50 ms ({args.case}) | Brier skill / s | accuracy over chance / s |" if costs else " |"))
    print("|---|---|" + "---|" * (len(SHOWN) + (3 if costs else 0)))
    verdicts = []
    for (name, *_), records, p50 in zip(named, loaded, p50s):
        point, bands = skill(records), intervals(records, args.resamples, args.seed)
        line = f"| {name} | {point['n']} | " + " | ".join(fmt(point[m], bands[m]) for m in SHOWN)
        if p50:
            per_s = 1000 / p50
            line += " | ".join(["", f"{p50:,.0f}", per_second(point["brier_skill"], per_s),
                                per_second(point["over_chance"], per_s)])
        elif costs:
            line += " | - | - | -"
        print(line + " |")
        verdicts.append(f"{name}: chance accuracy {point['chance']:.3f}; "
                        + ("gives information" if informative(bands) else
                           "no information shown (an interval reaches 0)"))
    print("\n".join(verdicts))
    for (name, *_), records in list(zip(named, loaded))[1:]:
        d = paired(loaded[0], records, args.resamples, args.seed)
        print(f"{name} minus {named[0][0]} on {d['n']} paired questions: accuracy "
              f"{fmt(d['accuracy'][0], d['accuracy'][1:], '+')}, Brier skill "
              f"{fmt(d['brier_skill'][0], d['brier_skill'][1:], '+')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
