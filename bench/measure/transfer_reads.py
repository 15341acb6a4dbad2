"""Read the dev decisions raw (no calibration) in every order and form the transfer judge needs.

Usage: .venv/bin/python bench/measure/transfer_reads.py --url http://127.0.0.1:8741
       --out reads.json.gz [--per-family 24] [--perms 3] [--seed 0] [--concurrency 2]
Owns: choosing the items (the first --per-family of each of the 16 dev families, over both
halves: bench/lib/lofo.py's families), and for each item four requests to a running server,
all with the calibration off (temperature 1, no label prior, no floor), so every answer is the
model's own renormalised label distribution:
  listing     the real state; each question as sent, and each choice again in every cyclic
              shift of its listed order and of --perms seeded random permutations of it
              (each order one question of its own, so one read each)
  listing_cf  the same questions against the content-free state "N/A"
  sets        the real state, option sets (kwargs.layout option_sets), the choice in its listed
              order and in the random permutations
  sets_cf     the same against "N/A"
It writes one record per item (its family, gold answers, each question's kind, option keys and
orders, every answer's probabilities in option-key order, each request's input tokens and
seconds). bench/measure/transfer.py judges what it wrote; nothing here fits or scores.
Never starts or stops a server; a non-200 answer is recorded and stops nothing.
"""
import argparse
import gzip
import json
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH / d) for d in ("data", "lib", "measure")]
import devdata  # noqa: E402
import evaluate  # noqa: E402
import lofo  # noqa: E402

CONTENT_FREE = "N/A"
RAW = {"temperature": {"noul": 1.0, "choice": 1.0, "score": 1.0}, "noul_floor": 0.0,
       "reread_below": 0.0, "label_prior": {}}
LISTING = {"orders": 1, "orders_as_reads": False, "option_sets": False, "repeat": 1}
SETS = {**LISTING, "option_sets": True}


def shifts(order: tuple) -> list:
    return [order[i:] + order[:i] for i in range(len(order))]


def orders_for(keys: tuple, perms: int, seed: str) -> tuple[list, list]:
    """(the random permutations, every order to read: the cyclic shifts of the listed order and
    of each permutation, without repeats, the listed order first)."""
    rng = random.Random(seed)
    drawn = []
    for _ in range(perms):
        p = list(keys)
        rng.shuffle(p)
        drawn.append(tuple(p))
    out = []
    for order in [keys, *drawn]:
        out += [s for s in shifts(order) if s not in out]
    return drawn, out


def plan(item: dict, perms: int, seed: int) -> dict:
    """Each question's kind and keys, and for a choice the orders read: {qid: {...}}."""
    out = {}
    for qid, q in item["body"]["questions"].items():
        if q["type"] == "choice":
            keys = tuple(q["criteria"])
            drawn, every = orders_for(keys, perms, f"{seed}:{item['id']}:{qid}")
            out[qid] = {"kind": "choice", "keys": list(keys), "perms": [list(p) for p in drawn],
                        "orders": [list(o) for o in every]}
        else:
            n = len(q.get("criteria") or []) if q["type"] == "score" else 2
            out[qid] = {"kind": q["type"], "keys": None, "n": n}
    return out


def _copy(q: dict, order) -> dict:
    return {**q, "criteria": {k: q["criteria"][k] for k in order}}


def bodies(item: dict, shape: dict) -> dict:
    """The four requests' bodies, each question named `qid` or `qid~j` (order j of the plan)."""
    questions = item["body"]["questions"]
    listing, sets = {}, {}
    for qid, q in questions.items():
        listing[qid] = q
        if q["type"] == "choice":
            for j, order in enumerate(shape[qid]["orders"]):
                listing[f"{qid}~{j}"] = _copy(q, order)
            sets[qid] = q
            for j, order in enumerate(shape[qid]["perms"]):
                sets[f"{qid}~p{j}"] = _copy(q, order)
    base = {"model": devdata.MODEL}

    def body(state, qs, layout):
        return {**base, "state": state, "questions": qs,
                "kwargs": {"calibration": RAW, "layout": layout}}
    out = {"listing": body(item["body"]["state"], listing, LISTING),
           "listing_cf": body(CONTENT_FREE, listing, LISTING)}
    if sets:
        out["sets"] = body(item["body"]["state"], sets, SETS)
        out["sets_cf"] = body(CONTENT_FREE, sets, SETS)
    return out


def probabilities(kind: str, answer: dict, keys) -> list:
    """An answer's probabilities in the question's option order (noul: [yes, no])."""
    if kind == "noul":
        return [answer["noul"], 1 - answer["noul"]]
    p = answer["probabilities"]
    return [p[k] for k in keys] if keys is not None else [p[k] for k in sorted(p, key=int)]


def collect(url: str, items: list, perms: int, seed: int, concurrency: int) -> list:
    endpoint = url.rstrip("/") + "/v1/systemone"
    shapes = [plan(item, perms, seed) for item in items]
    jobs = [(i, name, b) for i, (item, shape) in enumerate(zip(items, shapes))
            for name, b in bodies(item, shape).items()]
    bar = evaluate._progress(len(jobs), "requests")

    def one(job):
        status, doc, seconds = evaluate.post(endpoint, job[2])
        bar.update(1)
        return status, doc, seconds
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        replies = list(pool.map(one, jobs))
    bar.close()
    out = [{"family": lofo.family(item["task"]), "task": item["task"], "id": item["id"],
            "gold": item["gold"], "questions": shape, "reads": {}, "cost": {}}
           for item, shape in zip(items, shapes)]
    for (i, name, body), (status, doc, seconds) in zip(jobs, replies):
        rec = out[i]
        rec["cost"][name] = {"status": status, "seconds": round(seconds, 4),
                             "input_tokens": (doc.get("usage") or {}).get("input_tokens")
                             if status == 200 else None, "questions": len(body["questions"])}
        if status != 200:
            rec["cost"][name]["error"] = json.dumps(doc)[:300]
            continue
        for name_q, answer in doc["answers"].items():
            qid = name_q.split("~")[0]
            q = rec["questions"][qid]
            rec["reads"].setdefault(name, {})[name_q] = probabilities(
                q["kind"], answer, q["keys"] and list(body["questions"][name_q]["criteria"]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8741")
    ap.add_argument("--data", nargs="+", default=[str(devdata.DEFAULT_DATA)])
    ap.add_argument("--per-family", type=int, default=24)
    ap.add_argument("--perms", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--out", required=True, help="where the reads go (.json.gz)")
    args = ap.parse_args(argv)
    items = lofo.pick(devdata.load(args.data), args.per_family)
    start = time.perf_counter()
    out = collect(args.url, items, args.perms, args.seed, args.concurrency)
    doc = {"url": args.url, "model": evaluate_model(args.url), "per_family": args.per_family,
           "perms": args.perms, "seed": args.seed, "seconds": round(time.perf_counter() - start),
           "items": out}
    with gzip.open(args.out, "wt", encoding="utf-8") as f:
        json.dump(doc, f)
    bad = sum(1 for r in out for c in r["cost"].values() if c["status"] != 200)
    print(f"{len(out)} items, {sum(len(r['gold']) for r in out)} questions, "
          f"{sum(len(r['cost']) for r in out)} requests ({bad} not 200) in {doc['seconds']} s "
          f"-> {args.out}")
    return 0 if not bad else 1


def evaluate_model(url: str) -> str | None:
    """The served model's name (/v1/models), for the record."""
    import urllib.request
    try:
        req = urllib.request.Request(url.rstrip("/") + "/v1/models", headers=evaluate.shim_auth.headers())
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)["data"][0]["id"]
    except (OSError, ValueError, KeyError, IndexError):
        return None


if __name__ == "__main__":
    sys.exit(main())
