"""The transfer judge: reads scored on task families their calibration never saw.

Owns: the 16 dev families (the four sys1bench files, the twelve BIG-bench tasks with
cause_and_effect's three variants as one), the items a run reads (the first N per family), the
candidate reads built from bench/measure/transfer_reads.py's raw reads, the calibrations fitted
on 15 families and applied to the 16th, the family bootstrap, the ECE a perfectly calibrated
read would show at the same size, and order flips under random permutations.
Never talks to a server or writes a file. Standard library only.

A candidate maps (question, listed order, temperature) to probabilities over the question's
options in key order. Its calibration is one temperature per kind, fitted on the held-in
families, in one of three ways:
  raw     T = 1 for every kind
  fitted  the maximum-likelihood T per kind (the mean log-loss of each family, summed over
          families, so a big family does not speak for the rest)
  shrunk  the same with a normal prior on log T at 0 (T = 1) with sd SHRINK_SD: the fit moves
          away from 1 only as far as the families agree it should
"""
import math
import random
from collections import defaultdict

import bootstrap
import decision_metrics as metrics

SHRINK_SD = 0.5  # sd of log T's prior: a temperature of 1.65 or 0.61 is one sd away
T_RANGE = (0.05, 20.0)
MIN_PRIOR = 8  # questions an option count needs for a position prior of its own (fit_prior's)
TINY = 1e-300


def family(task: str) -> str:
    """bigbench/cause_and_effect/one_sentence -> bigbench/cause_and_effect; others as they are."""
    parts = task.split("/")
    return "/".join(parts[:2]) if parts[0] == "bigbench" else task


def pick(items: list, per_family: int) -> list:
    """The first `per_family` items of each family in file order, its tasks taken in turn."""
    by_task = defaultdict(list)
    for item in items:
        by_task[item["task"]].append(item)
    by_family = defaultdict(list)
    for task, its in by_task.items():
        by_family[family(task)].append(its)
    out = []
    for fam, lists in by_family.items():
        taken = []
        for row in range(max(len(x) for x in lists)):
            taken += [x[row] for x in lists if row < len(x)]
        out += taken[:per_family]
    return out


# --- the raw reads of a question --------------------------------------------------------------

def logs(probs) -> list:
    return [math.log(max(p, TINY)) for p in probs]


def softmax(values, t: float = 1.0) -> list:
    top = max(values)
    w = [math.exp((v - top) / t) for v in values]
    s = math.fsum(w)
    return [x / s for x in w]


class Question:
    """One question of one item: its gold, kind, keys and raw reads (log-probs in key order)."""

    def __init__(self, item: dict, qid: str):
        shape = item["questions"][qid]
        self.family, self.kind, self.qid, self.id = item["family"], shape["kind"], qid, item["id"]
        self.task = item["task"]
        gold = item["gold"][qid]
        if self.kind == "choice":
            self.keys = tuple(shape["keys"])
            self.gold = self.keys.index(gold) if gold in self.keys else None
            self.perms = [tuple(p) for p in shape["perms"]]
        else:
            n = shape["n"]
            self.keys = tuple(range(n))
            self.gold = (0 if gold else 1) if self.kind == "noul" else int(gold)
            self.perms = []
        self.base = self.keys
        self.reads = {}  # (variant, order) -> log-probs in key order
        for variant, answers in item["reads"].items():
            orders = {qid: self.base}
            if self.kind == "choice":
                prefix = "p" if variant.startswith("sets") else ""
                listed = self.perms if prefix else [tuple(o) for o in shape["orders"]]
                orders.update({f"{qid}~{prefix}{j}": o for j, o in enumerate(listed)})
            for name, probs in answers.items():
                if name in orders:
                    self.reads[(variant, orders[name])] = self._to_keys(probs, orders[name])

    def _to_keys(self, probs, order) -> list:
        """Probabilities listed in `order` become log-probs in key order."""
        if self.kind != "choice":
            return logs(probs)
        by_key = dict(zip(order, probs))
        return logs(by_key[k] for k in self.keys)

    def read(self, variant: str, order) -> list:
        return self.reads[(variant, tuple(order))]

    def position(self, order) -> list:
        """Each key's listing position in `order` (key order)."""
        return [list(order).index(k) for k in self.keys]

    def complete(self, variants) -> bool:
        if self.gold is None or (self.kind != "choice" and not self.reads):
            return False
        needed = [(v, self.base) for v in variants]
        return all(k in self.reads for k in needed)


def questions(doc: dict) -> list:
    return [Question(item, qid) for item in doc["items"] for qid in item["questions"]]


def shifts(order) -> list:
    order = tuple(order)
    return [order[i:] + order[:i] for i in range(len(order))]


# --- candidates: (question, order, T, fit) -> probabilities in key order ----------------------

def single(variant: str, cf: bool = False):
    """One read in the listed order; with cf, less the content-free read of the same order."""
    def probs(q, order, t, fit):
        lp = q.read(variant, order)
        if cf:
            lp = [a - b for a, b in zip(lp, q.read(variant + "_cf", order))]
        return softmax(lp, t)
    return probs


def labelled(q, variant: str, order) -> tuple:
    """The order a read's labels take the options in: the listed order, or for a set read the
    options' keys sorted (the labels are bound to them, whatever the listing)."""
    return tuple(sorted(q.keys, key=str)) if variant == "sets" and q.kind == "choice" else order


def with_prior(variant: str = "listing"):
    """One read (a choice's as a set with "sets"), less the label prior fitted per kind and
    option count: today's read is the listing's."""
    def probs(q, order, t, fit):
        v = variant if q.kind == "choice" else "listing"
        lp = q.read(v, order)
        prior = fit.get("prior", {}).get((q.kind, len(q.keys)))
        if prior:
            pos = q.position(labelled(q, v, order))
            lp = [x - prior[p] for x, p in zip(lp, pos)]
        return softmax(lp, t)
    probs.variant = variant
    return probs


def cyclic(cf: bool = False, mean: str = "log"):
    """Every cyclic shift of the listed order read; per option the log-probs averaged (mean
    "log": then one temperature) or the tempered probabilities averaged (mean "prob": what
    layout orders = n, orders_as_reads reads). Questions other than choices: one read."""
    def probs(q, order, t, fit):
        if q.kind != "choice":
            return single("listing", cf)(q, order, t, fit)
        rows = []
        for s in shifts(order):
            lp = q.read("listing", s)
            if cf:
                lp = [a - b for a, b in zip(lp, q.read("listing_cf", s))]
            rows.append(lp)
        if mean == "log":
            return softmax([math.fsum(c) / len(rows) for c in zip(*rows)], t)
        dists = [softmax(r, t) for r in rows]
        return [math.fsum(c) / len(dists) for c in zip(*dists)]
    return probs


def sets(cf: bool = False):
    """Choices read as a set (option_sets); other kinds one listing read (with cf likewise)."""
    def probs(q, order, t, fit):
        variant = "sets" if q.kind == "choice" else "listing"
        return single(variant, cf)(q, order, t, fit)
    return probs


# --- fitting on the held-in families ---------------------------------------------------------

def fit_prior(qs: list, variant: str = "listing") -> dict:
    """{(kind, n): log mean probability per label position} over the listed-order reads (no
    gold answers used)."""
    rows = defaultdict(list)
    for q in qs:
        if q.kind in ("noul", "choice"):
            v = variant if q.kind == "choice" else "listing"
            p = dict(zip(q.keys, softmax(q.read(v, q.base))))
            rows[(q.kind, len(q.keys))].append([p[k] for k in labelled(q, v, q.base)])
    return {k: [math.log(max(math.fsum(c) / len(v), TINY)) for c in zip(*v)]
            for k, v in rows.items() if len(v) >= MIN_PRIOR}


def family_loss(candidate, qs: list, t: float, fit: dict) -> float:
    """Sum over families of the family's mean log-loss at temperature t."""
    by_fam = defaultdict(list)
    for q in qs:
        p = candidate(q, q.base, t, fit)[q.gold]
        by_fam[q.family].append(-math.log(max(p, 1e-12)))
    return math.fsum(math.fsum(v) / len(v) for v in by_fam.values())


def fit_temperature(candidate, qs: list, fit: dict, shrink: bool) -> float:
    if not qs:
        return 1.0

    def loss(log_t):
        penalty = log_t ** 2 / (2 * SHRINK_SD ** 2) if shrink else 0.0
        return family_loss(candidate, qs, math.exp(log_t), fit) + penalty
    lo, hi = (math.log(x) for x in T_RANGE)
    grid = [lo + (hi - lo) * i / 30 for i in range(31)]
    return math.exp(metrics.grid_then_golden(loss, grid, lambda a, b: b - a <= 1e-3))


def fit(candidate, qs: list, calibration: str, uses_prior: bool) -> dict:
    variant = getattr(candidate, "variant", "listing")
    out = {"prior": fit_prior(qs, variant) if uses_prior else {}, "t": {}}
    for kind in ("noul", "choice", "score"):
        mine = [q for q in qs if q.kind == kind]
        out["t"][kind] = (1.0 if calibration == "raw" else
                          fit_temperature(candidate, mine, out, calibration == "shrunk"))
    return out


def judge(candidate, qs: list, calibration: str, uses_prior: bool = False) -> list:
    """Leave one family out: for each family, fit on the others and answer its questions in
    the listed order and in each random permutation. One record per question."""
    records = []
    for held in sorted({q.family for q in qs}):
        train = [q for q in qs if q.family != held]
        f = fit(candidate, train, calibration, uses_prior)
        for q in (q for q in qs if q.family == held):
            t = f["t"][q.kind]
            p = candidate(q, q.base, t, f)
            rec = {"task": q.family, "id": q.id, "qid": q.qid, "kind": q.kind,
                   "probabilities": dict(zip(map(str, q.keys), p)),
                   "gold_key": str(q.keys[q.gold]), "t": t}
            rec["top_key"] = metrics.top_key(rec["probabilities"])
            rec["flips"] = [metrics.top_key(dict(zip(map(str, q.keys), candidate(q, o, t, f))))
                            != rec["top_key"] for o in q.perms]
            records.append(rec)
    return records


# --- measures with family-resampled intervals -------------------------------------------------

def flip(records) -> float | None:
    flips = [x for r in records if r["kind"] == "choice" for x in r["flips"]]
    return math.fsum(flips) / len(flips) if flips else None


def flip3(records) -> float | None:
    """Flips of the choices with three or more options (two options have one other order)."""
    return flip([r for r in records if len(r["probabilities"]) >= 3])


def ece_floor(records, draws: int = 200, seed: int = 0) -> float | None:
    """The mean ECE of a perfectly calibrated read with these confidences at this size: each
    answer right with probability its confidence, drawn `draws` times."""
    if not records:
        return None
    rng = random.Random(seed)
    confs = [metrics.confidence(r) for r in records]
    total = 0.0
    for _ in range(draws):
        fake = [{"probabilities": {"a": c, "b": 1 - c} if c >= 0.5 else {"b": 1 - c, "a": c},
                 "top_key": "a", "gold_key": "a" if rng.random() < c else "b"} for c in confs]
        total += metrics.ece(fake)
    return total / draws


def measures(records) -> dict:
    out = bootstrap.skill(records)
    out["flip"], out["flip3"] = flip(records), flip3(records)
    return out


SHOWN = ("accuracy", "chance", "brier_skill", "ece", "flip", "flip3")


def by_family(records, resamples: int, seed: int = 0):
    fams = defaultdict(list)
    for r in records:
        fams[r["task"]].append(r)
    names, rng = sorted(fams), random.Random(seed)
    for _ in range(resamples):
        yield [r for f in rng.choices(names, k=len(names)) for r in fams[f]]


def intervals(records, resamples: int = 1000, seed: int = 0) -> dict:
    draws = [measures(s) for s in by_family(records, resamples, seed)]
    return {m: bootstrap.interval(d[m] for d in draws) for m in SHOWN}


def paired(base: list, other: list, resamples: int = 1000, seed: int = 0) -> dict:
    """other - base for accuracy, Brier skill and ECE, families resampled for both at once."""
    key = bootstrap.key
    mine = {key(r): r for r in other}
    pairs = [(r, mine[key(r)]) for r in base if key(r) in mine]
    fams = defaultdict(list)
    for a, b in pairs:
        fams[a["task"]].append((a, b))
    names, rng = sorted(fams), random.Random(seed)

    def diff(rows):
        a, b = measures(x for x, _ in rows), measures(y for _, y in rows)
        return {m: b[m] - a[m] for m in ("accuracy", "brier_skill", "ece")}
    point = diff(pairs)
    draws = [diff([p for f in rng.choices(names, k=len(names)) for p in fams[f]])
             for _ in range(resamples)]
    return {m: (point[m], *bootstrap.interval(d[m] for d in draws)) for m in point}
