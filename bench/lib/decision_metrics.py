"""Decision-quality metrics over per-question records.

Owns: turning one System One answer into a record `{task, kind, probabilities, gold_key, top_key}`
(plus `reversed_top_key` when the options were also sent in reversed order), and the maths over
records: accuracy, ECE, multi-class Brier, log-loss, order sensitivity, reliability bins.
Never does I/O, never talks to a server, never changes a record it is given.
"""
import math
from collections import defaultdict

BINS = 10
EPS = 1e-12  # log-loss clamp: one confidently wrong answer must not make the mean infinite
METRICS = ("accuracy", "ece", "brier", "log_loss", "order_sensitivity")
GOLDEN = (math.sqrt(5) - 1) / 2


def answer_probabilities(kind: str, answer: dict) -> dict:
    """Option key -> probability. A noul's `noul` is P(true)."""
    if kind == "noul":
        p = float(answer["noul"])
        return {"true": p, "false": 1.0 - p}
    return {str(k): float(v) for k, v in answer["probabilities"].items()}


def gold_key(kind: str, gold) -> str:
    if kind == "noul":
        return "true" if gold else "false"
    return str(gold)


def top_key(probabilities: dict) -> str:
    """The most likely key; ties go to the first in order (a noul at exactly 0.5 reads true)."""
    return max(probabilities, key=probabilities.get)


def record(task: str, kind: str, answer: dict, gold, **extra) -> dict:
    probabilities = answer_probabilities(kind, answer)
    return {"task": task, "kind": kind, "probabilities": probabilities,
            "gold_key": gold_key(kind, gold), "top_key": top_key(probabilities), **extra}


def confidence(rec: dict) -> float:
    return rec["probabilities"][rec["top_key"]]


def correct(rec: dict) -> bool:
    return rec["top_key"] == rec["gold_key"]


def _mean(values) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def accuracy(records) -> float | None:
    return _mean(1.0 if correct(r) else 0.0 for r in records)


def reliability(records, bins: int = BINS) -> list[dict]:
    """Equal-width bins of top-option confidence: count, mean confidence, accuracy (None: empty)."""
    groups = [[] for _ in range(bins)]
    for r in records:
        groups[min(int(confidence(r) * bins), bins - 1)].append(r)
    return [{"lo": i / bins, "hi": (i + 1) / bins, "n": len(g),
             "confidence": _mean(confidence(r) for r in g), "accuracy": accuracy(g)}
            for i, g in enumerate(groups)]


def ece(records, bins: int = BINS) -> float | None:
    """Expected calibration error: |accuracy - confidence| per bin, weighted by its count."""
    total = len(records)
    if not total:
        return None
    return sum(b["n"] / total * abs(b["accuracy"] - b["confidence"])
               for b in reliability(records, bins) if b["n"])


def brier(records) -> float | None:
    """Mean over questions of the sum over options of (p - one-hot)^2."""
    def one(r):
        probs = r["probabilities"]
        missing_gold = 0.0 if r["gold_key"] in probs else 1.0  # gold not offered: p = 0 for it
        return missing_gold + sum((p - (k == r["gold_key"])) ** 2 for k, p in probs.items())
    return _mean(one(r) for r in records)


def log_loss(records) -> float | None:
    return _mean(-math.log(max(r["probabilities"].get(r["gold_key"], 0.0), EPS))
                 for r in records)


def order_sensitivity(records) -> float | None:
    """Share of (choice) records read both ways whose top answer changed with reversed options."""
    pairs = [r for r in records if r.get("reversed_top_key") is not None]
    return _mean(1.0 if r["reversed_top_key"] != r["top_key"] else 0.0 for r in pairs)


def summary(records) -> dict:
    records = list(records)
    return {"n": len(records), "accuracy": accuracy(records), "ece": ece(records),
            "brier": brier(records), "log_loss": log_loss(records),
            "order_sensitivity": order_sensitivity(records)}


def group(records, field: str) -> dict:
    """Records grouped by one field, groups in first-seen order."""
    out = defaultdict(list)
    for r in records:
        out[r[field]].append(r)
    return dict(out)


def grid_then_golden(loss, grid: list, done) -> float:
    """The minimum of a one-dimensional `loss`: the best grid point, then golden-section search
    between its neighbours until `done(a, b)` says the bracket is narrow enough."""
    best = min(range(len(grid)), key=lambda i: loss(grid[i]))
    a, b = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fc, fd = loss(c), loss(d)
    while not done(a, b):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - GOLDEN * (b - a)
            fc = loss(c)
        else:
            a, c, fc = c, d, fd
            d = a + GOLDEN * (b - a)
            fd = loss(d)
    return (a + b) / 2
