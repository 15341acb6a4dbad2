"""Bootstrap 95% intervals for bench/evaluate.py's metrics, and a comparison of models.

Usage: python bench/bootstrap.py --model NAME EVAL.json LATENCY.txt [--model ...] [--case b]
       [--resamples 2000]
EVAL.json is `bench/evaluate.py --json` on the same items for every model; LATENCY.txt is what
`bench/latency.py` printed for that model (its JSON line for CASE is read: the shim's p50).
Prints one row per model: accuracy, ECE, Brier, Brier skill, order sensitivity (each with a 95%
interval), p50 ms, and the answers per unit of latency: Brier skill per second of p50 (the
measure the embedded model is chosen by) and accuracy over chance per second; then each model
against the first, paired on the same questions (difference of accuracy and of Brier skill,
with intervals).
Owns: resampling decisions (every question of a drawn decision together, since they share a
state) with a fixed seed, and the skill and per-second measures. Never talks to a server.
Brier skill: 1 - Brier / the uniform answer's Brier (1 - 1/n for n options), over the same
questions: 0 is no better than uniform, 1 is perfect. Chance accuracy: the mean of 1/n.
"""
import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import metrics  # noqa: E402

SHOWN = ("accuracy", "ece", "brier", "brier_skill", "order_sensitivity")


def skill(records) -> dict:
    """metrics.summary plus Brier skill against the uniform answer and chance accuracy."""
    records = list(records)
    out = metrics.summary(records)
    uniform = metrics._mean(1 - 1 / len(r["probabilities"]) for r in records)
    out["brier_skill"] = 1 - out["brier"] / uniform if records else None
    out["chance"] = metrics._mean(1 / len(r["probabilities"]) for r in records)
    return out


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
    key = lambda r: (r["task"], r["id"], r["qid"])  # noqa: E731
    mine = {key(r): r for r in other}
    pairs = [(r, mine[key(r)]) for r in base if key(r) in mine]
    joined = [{"task": a["task"], "id": a["id"], "pair": (a, b)} for a, b in pairs]

    def diff(rows):
        a, b = skill(r["pair"][0] for r in rows), skill(r["pair"][1] for r in rows)
        return {m: b[m] - a[m] for m in ("accuracy", "brier_skill")}
    point = diff(joined)
    draws = [diff(s) for s in resample(joined, resamples, seed)]
    return {"n": len(pairs), **{m: (point[m], *interval(d[m] for d in draws)) for m in point}}


def latency_p50(path: str, case: str) -> float:
    for line in Path(path).read_text().splitlines():
        if line.startswith("{") and json.loads(line)["case"].startswith(case):
            return json.loads(line)["shim_p50_ms"]
    sys.exit(f"bootstrap: no case {case!r} JSON line in {path}")


def fmt(value, band=None) -> str:
    text = "-" if value is None else f"{value:.3f}"
    return text if not band or band[0] is None else f"{text} [{band[0]:.3f}, {band[1]:.3f}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", nargs=3, action="append", required=True,
                    metavar=("NAME", "EVAL_JSON", "LATENCY_TXT"))
    ap.add_argument("--case", default="b", help="bench/latency.py case whose p50 is the cost")
    ap.add_argument("--resamples", type=int, default=2000)
    args = ap.parse_args(argv)
    rows = []
    for name, eval_json, latency_txt in args.model:
        records = json.loads(Path(eval_json).read_text())["records"]
        rows.append((name, records, skill(records), intervals(records, args.resamples),
                     latency_p50(latency_txt, args.case)))
    print("| model | n | " + " | ".join(SHOWN) + f" | p50 ms ({args.case}) | Brier skill / s"
          " | accuracy over chance / s |")
    print("|---|---|" + "---|" * (len(SHOWN) + 3))
    for name, records, point, bands, p50 in rows:
        per_s = 1000 / p50
        print(f"| {name} | {point['n']} | " + " | ".join(fmt(point[m], bands[m]) for m in SHOWN)
              + f" | {p50:,.0f} | {point['brier_skill'] * per_s:.4f} | "
              f"{(point['accuracy'] - point['chance']) * per_s:.4f} |")
    for name, records, *_ in rows[1:]:
        d = paired(rows[0][1], records, args.resamples)
        print(f"{name} - {rows[0][0]} on {d['n']} paired questions: accuracy "
              f"{fmt(d['accuracy'][0], d['accuracy'][1:])}, Brier skill "
              f"{fmt(d['brier_skill'][0], d['brier_skill'][1:])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
