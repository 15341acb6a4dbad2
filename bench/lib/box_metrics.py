"""The pure maths of the box bench: IoU, binary ECE and reliability bins, percentiles, and the two
calibration fits (a logistic map of x_box_logprob -> P(IoU >= 0.5), and the `present` temperature).

Usage: imported by bench/measure/box_eval.py, bench/fit/fit_box_calibration.py and
tests/unit/bench/.
Owns: numbers in, numbers out; boxes are dicts {left, top, right, bottom} in fractions.
Never does I/O, never imports anything beyond the standard library (the unit tests run under
`python3 -S`), never changes what it is given.
"""
import math

import decision_metrics as metrics  # bench/lib/decision_metrics.py: standard library only

BINS = 10
HIT_IOU = 0.5
L2_A = 1e-2  # a weak prior on the slope: keeps Newton finite on separable or flat data
T_RANGE = (0.01, 100.0)
WHOLE = {"left": 0.0, "top": 0.0, "right": 1.0, "bottom": 1.0}


def area(box: dict) -> float:
    return max(0.0, box["right"] - box["left"]) * max(0.0, box["bottom"] - box["top"])


def iou(a: dict, b: dict) -> float:
    """Intersection over union; 0 when both are empty."""
    inter = area({"left": max(a["left"], b["left"]), "top": max(a["top"], b["top"]),
                  "right": min(a["right"], b["right"]), "bottom": min(a["bottom"], b["bottom"])})
    union = area(a) + area(b) - inter
    return inter / union if union > 0 else 0.0


def sigmoid(u: float) -> float:
    if u >= 0:
        return 1.0 / (1.0 + math.exp(-u))
    e = math.exp(u)  # the other form, so a large negative u cannot overflow
    return e / (1.0 + e)


def log_sigmoid(u: float) -> float:
    return -math.log1p(math.exp(-u)) if u >= 0 else u - math.log1p(math.exp(u))


def logit(p: float, eps: float = 1e-12) -> float:
    p = min(max(p, eps), 1.0 - eps)  # a reported 0 or 1 still has a finite logit
    return math.log(p / (1.0 - p))


def reliability(probs: list, outcomes: list, bins: int = BINS) -> list:
    """Equal-width bins over [0, 1] (1.0 falls in the last): n, mean probability, hit rate."""
    groups = [[] for _ in range(bins)]
    for p, y in zip(probs, outcomes):
        groups[min(max(int(p * bins), 0), bins - 1)].append((p, 1.0 if y else 0.0))
    return [{"lo": i / bins, "hi": (i + 1) / bins, "n": len(g),
             "confidence": sum(p for p, _ in g) / len(g) if g else None,
             "frequency": sum(y for _, y in g) / len(g) if g else None}
            for i, g in enumerate(groups)]


def ece(probs: list, outcomes: list, bins: int = BINS) -> float | None:
    """Expected calibration error of P(event): |frequency - confidence| per bin, count-weighted."""
    total = len(probs)
    if not total:
        return None
    return sum(b["n"] / total * abs(b["frequency"] - b["confidence"])
               for b in reliability(probs, outcomes, bins) if b["n"])


def auc(scores: list, outcomes: list) -> float | None:
    """The chance that a random positive scores above a random negative (ties count half): how
    well the scores rank, whatever threshold they are read at. None without both kinds."""
    pos = [s for s, y in zip(scores, outcomes) if y]
    neg = [s for s, y in zip(scores, outcomes) if not y]
    if not pos or not neg:
        return None
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


def auc_se(area: float, positives: int, negatives: int) -> float:
    """Hanley and McNeil's (1982) standard error of an AUC measured on this many positives and
    negatives."""
    q1, q2 = area / (2 - area), 2 * area ** 2 / (1 + area)
    return math.sqrt((area * (1 - area) + (positives - 1) * (q1 - area ** 2)
                      + (negatives - 1) * (q2 - area ** 2)) / (positives * negatives))


def percentile(values: list, q: float) -> float | None:
    """Linear interpolation between order statistics (q in 0..100)."""
    if not values:
        return None
    s = sorted(values)
    pos = (len(s) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def logistic_nll(a: float, b: float, xs: list, ys: list, l2: float = L2_A) -> float:
    total = 0.5 * l2 * a * a
    for x, y in zip(xs, ys):
        u = a * x + b
        total -= log_sigmoid(u) if y else log_sigmoid(-u)
    return total


def fit_logistic(xs: list, ys: list, l2: float = L2_A) -> tuple:
    """(a, b, note) maximising the likelihood of P(y) = sigmoid(a*x + b), with l2/2 * a^2 added
    to the loss. All hits or all misses have no finite optimum: then a = 0 and b is the logit of
    the smoothed rate (k + 0.5) / (n + 1), and the note says so. No data: (1, 0) and a note."""
    n = len(xs)
    if n == 0:
        return 1.0, 0.0, "no data: kept a = 1, b = 0"
    k = sum(1 for y in ys if y)
    if k in (0, n):
        rate = (k + 0.5) / (n + 1)
        return 0.0, logit(rate), (f"all {'hits' if k else 'misses'} ({n}): no slope can be "
                                  f"fitted; a = 0, b = logit({rate:.3f})")
    a, b = 0.0, logit(k / n)  # the base rate is a good start, and Newton converges from it
    loss = logistic_nll(a, b, xs, ys, l2)
    for _ in range(100):
        ga, gb, haa, hab, hbb = l2 * a, 0.0, l2, 0.0, 0.0
        for x, y in zip(xs, ys):
            p = sigmoid(a * x + b)
            w = max(p * (1.0 - p), 1e-12)
            ga += (p - y) * x
            gb += p - y
            haa += w * x * x
            hab += w * x
            hbb += w
        det = haa * hbb - hab * hab
        if det <= 0:
            break
        da, db = (hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det
        step = 1.0
        while step > 1e-8:  # backtrack: a full Newton step can overshoot far from the optimum
            na, nb = a - step * da, b - step * db
            new = logistic_nll(na, nb, xs, ys, l2)
            if new <= loss:
                break
            step /= 2
        else:
            break
        a, b, converged = na, nb, abs(loss - new) < 1e-10 * max(1.0, abs(loss))
        loss = new
        if converged:
            break
    note = ""
    if abs(a) > 50:
        note = f"slope {a:.3g} is very steep: the data are (nearly) separable by x"
    return a, b, note


def temperature_nll(t: float, raws: list, ys: list) -> float:
    return -sum(log_sigmoid(z / t) if y else log_sigmoid(-z / t) for z, y in zip(raws, ys))


def fit_temperature(raws: list, ys: list, t_range: tuple = T_RANGE) -> tuple:
    """(T, note) minimising the NLL of P(y) = sigmoid(raw / T): a log-spaced grid over t_range,
    then golden section around the best point. The NLL in 1/T is convex, so this finds it."""
    if not raws or all(z == 0 for z in raws):
        return None, "no usable logits: temperature left as it is"
    lo, hi = math.log(t_range[0]), math.log(t_range[1])
    grid = [lo + (hi - lo) * i / 60 for i in range(61)]

    def loss(u):
        return temperature_nll(math.exp(u), raws, ys)
    u = metrics.grid_then_golden(loss, grid, lambda a, b: b - a <= 1e-6)
    t = math.exp(u)
    note = ""
    if t < t_range[0] * 1.05 or t > t_range[1] / 1.05:
        note = f"T = {t:.3g} is at the search bound {t_range}: the logits carry little signal"
    return t, note
