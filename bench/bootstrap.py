"""Bootstrap 95% intervals for bench/evaluate.py results, and paired differences between rows.

Usage: python bench/bootstrap.py ROW.json [ROW.json ...] [--resamples 2000] [--seed 0]
Each ROW.json is `bench/evaluate.py --json` output over the same items. Prints accuracy, ECE,
Brier and order sensitivity with percentile intervals (records resampled with replacement),
then, against the first row, the paired accuracy difference and its interval (the same
resampled items in both rows): "not significantly below" means that interval reaches 0.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import metrics  # noqa: E402

FIELDS = ("accuracy", "ece", "brier", "order_sensitivity")


def key(r: dict) -> tuple:
    """What identifies a record across rows: its task, item and question."""
    return (r.get("task"), r.get("item"), r.get("question"), r.get("gold_key"))


def interval(values: list[float]) -> tuple[float, float]:
    values = sorted(v for v in values if v is not None)
    if not values:
        return (float("nan"), float("nan"))
    return values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))]


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    rows = [(p, {key(r): r for r in json.loads(Path(p).read_text())["records"]}) for p in a.rows]
    shared = sorted(set.intersection(*(set(recs) for _, recs in rows)), key=repr)
    rng = random.Random(a.seed)
    draws = [[rng.choice(shared) for _ in shared] for _ in range(a.resamples)]
    print(f"{len(shared)} records in every row; {a.resamples} resamples")
    base = None
    for path, recs in rows:
        whole = metrics.summary([recs[k] for k in shared])
        spread = {f: interval([metrics.summary([recs[k] for k in d])[f] for d in draws])
                  for f in FIELDS}
        cells = ", ".join(f"{f} {whole[f]:.3f} [{spread[f][0]:.3f}, {spread[f][1]:.3f}]"
                          if whole[f] is not None else f"{f} -" for f in FIELDS)
        line = f"{path}: {cells}"
        if base is None:
            base = recs
        else:
            hit = lambda r: 1.0 if r["top_key"] == r["gold_key"] else 0.0  # noqa: E731
            gaps = [sum(hit(recs[k]) - hit(base[k]) for k in d) / len(d) for d in draws]
            low, high = interval(gaps)
            whole_gap = sum(hit(recs[k]) - hit(base[k]) for k in shared) / len(shared)
            line += f"; accuracy minus the first row {whole_gap:+.3f} [{low:+.3f}, {high:+.3f}]"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
