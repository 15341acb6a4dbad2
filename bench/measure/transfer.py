"""Judge reads on task families their calibration never saw: leave one family out, pooled.

Usage: python bench/measure/transfer.py READS.json.gz [--config serve_config.json]
       [--profile NAME] [--resamples 1000] [--only NAME ...] [--json OUT]
READS is bench/measure/transfer_reads.py's output. For every candidate read (bench/lib/lofo.py
builds them from the raw reads) and calibration, fit on 15 of the 16 dev families, answer the
16th, and pool the 16 held-out answers. Prints one row per candidate: accuracy (with chance),
Brier skill against the uniform answer, ECE beside the ECE a perfectly calibrated read with the
same confidences shows at this size (its floor from sampling alone), the share of choices whose
top answer changes under a random permutation of their options (all choices, and those with
three or more options), each with a 95% interval from resampling families; the reads and prompt
tokens a decision costs; then each candidate against the first row (today's read: the
profile's method, a label prior and a temperature per kind, fitted on the other 15 families
like every row), paired. The second row is the --config profile's own label prior and
temperatures as they stand there; fitted on dev data (the 2026-12-06 default's on the fit half
of all 16 families) it saw the families, and items, it is scored on: a fitted-family figure,
not a transfer one.
--fit NAME: also fit candidate NAME's calibration on all 16 families (what a profile ships; the
table's rows are its transfer) and print it as a profile's `calibration` block; with --write,
put it into the profile in --config (temperatures, label prior, and where it came from).
Owns: the candidate list and the table. Never talks to a server. Standard library only.
"""
import argparse
import gzip
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH / d) for d in ("lib",)]
import lofo  # noqa: E402

# name -> (candidate, calibration, uses the fitted position prior, the reads it needs)
CANDIDATES = {
    "today: listing, prior + T": (lofo.with_prior(), "fitted", True, "listing"),
    "listing, --config's prior + T (as fitted there)": (
        lofo.with_prior(), "shipped", True, "listing"),
    "listing, raw": (lofo.single("listing"), "raw", False, "listing"),
    "listing, T fitted": (lofo.single("listing"), "fitted", False, "listing"),
    "listing, T shrunk": (lofo.single("listing"), "shrunk", False, "listing"),
    "listing, prior + T shrunk": (lofo.with_prior(), "shrunk", True, "listing"),
    "listing + content-free, raw": (lofo.single("listing", True), "raw", False, "listing cf"),
    "listing + content-free, T shrunk": (lofo.single("listing", True), "shrunk", False,
                                         "listing cf"),
    "cyclic (log mean), raw": (lofo.cyclic(), "raw", False, "cyclic"),
    "cyclic (log mean), T shrunk": (lofo.cyclic(), "shrunk", False, "cyclic"),
    "cyclic (prob mean), raw": (lofo.cyclic(mean="prob"), "raw", False, "cyclic"),
    "cyclic (prob mean), T fitted": (lofo.cyclic(mean="prob"), "fitted", False, "cyclic"),
    "cyclic (prob mean), T shrunk": (lofo.cyclic(mean="prob"), "shrunk", False, "cyclic"),
    "cyclic + content-free, T shrunk": (lofo.cyclic(True), "shrunk", False, "cyclic cf"),
    "sets, raw": (lofo.sets(), "raw", False, "sets"),
    "sets, T fitted": (lofo.sets(), "fitted", False, "sets"),
    "sets, T shrunk": (lofo.sets(), "shrunk", False, "sets"),
    "sets, prior + T fitted": (lofo.with_prior("sets"), "fitted", True, "sets"),
    "sets, prior + T shrunk": (lofo.with_prior("sets"), "shrunk", True, "sets"),
    "sets + content-free, raw": (lofo.sets(True), "raw", False, "sets cf"),
    "sets + content-free, T shrunk": (lofo.sets(True), "shrunk", False, "sets cf"),
}


def shipped(config: dict, profile: str) -> dict:
    """The profile's own calibration as a fit: its prior per (kind, n) and temperatures."""
    cal = config["profiles"][profile]["calibration"]
    prior = {(kind, int(n)): v for kind, per in cal.get("label_prior", {}).items()
             for n, v in per.items()}
    return {"prior": prior, "t": dict(cal["temperature"])}


def run(candidate, qs, calibration, uses_prior, fixed):
    if calibration != "shipped":
        return lofo.judge(candidate, qs, calibration, uses_prior)
    records = []  # the shipped values: one fit for every family (it saw all of them)
    for q in qs:
        t = fixed["t"][q.kind]
        p = candidate(q, q.base, t, fixed)
        keys = list(map(str, q.keys))
        rec = {"task": q.family, "id": q.id, "qid": q.qid, "kind": q.kind,
               "probabilities": dict(zip(keys, p)), "gold_key": keys[q.gold], "t": t}
        rec["top_key"] = lofo.metrics.top_key(rec["probabilities"])
        rec["flips"] = [lofo.metrics.top_key(dict(zip(keys, candidate(q, o, t, fixed))))
                        != rec["top_key"] for o in q.perms]
        records.append(rec)
    return records


def costs(doc: dict, qs: list) -> dict:
    """Per decision: reads and prompt tokens (before prefix caching) of each way of reading,
    from the recorded requests' input tokens spread evenly over their questions."""
    per_read = {}
    for variant in ("listing", "listing_cf", "sets", "sets_cf"):
        tok = [c["input_tokens"] / c["questions"] for it in doc["items"]
               for v, c in it["cost"].items() if v == variant and c.get("input_tokens")]
        per_read[variant] = sum(tok) / len(tok) if tok else 0.0
    decisions = len(doc["items"])
    reads = {"listing": 0, "cyclic": 0, "sets": 0}
    for q in qs:
        n = len(q.keys) if q.kind == "choice" else 1
        reads["listing"] += 1
        reads["cyclic"] += n
        reads["sets"] += 1
    out = {}
    for what, base in (("listing", "listing"), ("cyclic", "listing"), ("sets", "sets")):
        r = reads[what] / decisions
        out[what] = (r, r * per_read[base])
        cf = per_read[base + "_cf"]
        out[what + " cf"] = (2 * r, r * (per_read[base] + cf))
    return out


def calibration_block(name: str, qs: list) -> dict:
    """Candidate NAME's calibration fitted on every family: the profile's keys."""
    cand, calib, prior, _ = CANDIDATES[name]
    f = lofo.fit(cand, qs, calib, prior)
    label_prior = {}
    for (kind, n), values in sorted(f["prior"].items()):
        label_prior.setdefault(kind, {})[str(n)] = [round(v, 4) for v in values]
    return {"temperature": {k: round(t, 4) for k, t in f["t"].items()},
            "label_prior": label_prior}


def write(path: str, profile: str, block: dict, how: str | None) -> None:
    """The block into the profile's calibration, and what it was fitted on (None: nothing
    was fitted, a raw read)."""
    import datetime
    config = json.loads(Path(path).read_text())
    cal = config["profiles"][profile]["calibration"]
    cal.update(block)
    cal["fitted"] = how and {"temperature and label_prior": {
        "on": how, "date": datetime.date.today().isoformat(),
        "tool": "bench/measure/transfer.py"}}
    tmp = Path(path + ".tmp")
    tmp.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


DIGITS = [3]


def cell(v, band=None, sign=""):
    d = DIGITS[0]
    text = "-" if v is None else f"{v:{sign}.{d}f}"
    if band and band[0] is not None:
        text += f" [{band[0]:{sign}.{d}f}, {band[1]:{sign}.{d}f}]"
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reads")
    ap.add_argument("--config", default=str(BENCH.parent / "serve_config.json"))
    ap.add_argument("--profile")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--only", nargs="+", help="candidates to run (the first row is always today's)")
    ap.add_argument("--digits", type=int, default=3)
    ap.add_argument("--by-kind", nargs="+", default=[], metavar="NAME",
                    help="also print these rows per question kind")
    ap.add_argument("--against", nargs="+", default=[], metavar="NAME",
                    help="also pair every row with these rows (each must be run)")
    ap.add_argument("--json", help="write every row's figures here")
    ap.add_argument("--fit", choices=list(CANDIDATES)[1:], metavar="NAME",
                    help="print this candidate's calibration fitted on every family")
    ap.add_argument("--write", action="store_true", help="with --fit: write it into --config")
    args = ap.parse_args(argv)
    DIGITS[0] = args.digits
    with gzip.open(args.reads, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    config = json.loads(Path(args.config).read_text())
    fixed = shipped(config, args.profile or config["default_profile"])
    qs = [q for q in lofo.questions(doc)
          if q.complete(["listing", "listing_cf"] + (["sets", "sets_cf"]
                                                      if q.kind == "choice" else []))]
    names = list(CANDIDATES)
    if args.only:
        names = names[:1] + [n for n in names[1:] if n in args.only]
    cost = costs(doc, qs)
    fams = len({q.family for q in qs})
    print(f"{len(qs)} questions ({sum(q.kind == 'choice' for q in qs)} choices) from "
          f"{len(doc['items'])} decisions in {fams} families; model {doc.get('model')}; "
          f"{doc['perms']} random permutations per choice; intervals: {args.resamples} "
          "resamples of families")
    print("| read | calibration | accuracy (chance) | Brier skill | ECE (floor) | flip | "
          "flip, 3+ options | reads / decision | prompt tokens / decision |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = {}
    for name in names:
        cand, calib, prior, reads = CANDIDATES[name]
        records = run(cand, qs, calib, prior, fixed)
        m, band = lofo.measures(records), lofo.intervals(records, args.resamples)
        floor = lofo.ece_floor(records)
        r, tok = cost[reads]
        print(f"| {name.split(', ')[0]} | {name.split(', ', 1)[1]} | "
              f"{cell(m['accuracy'], band['accuracy'])} ({m['chance']:.3f}) | "
              f"{cell(m['brier_skill'], band['brier_skill'])} | "
              f"{cell(m['ece'], band['ece'])} ({floor:.3f}) | {cell(m['flip'], band['flip'])} | "
              f"{cell(m['flip3'], band['flip3'])} | {r:.2f} | {tok:,.0f} |")
        rows[name] = {"measures": m, "intervals": band, "ece_floor": floor, "reads": r,
                      "prompt_tokens": tok, "records": records}
    print()
    for ref in [names[0], *args.against]:
        for name in names:
            if name == ref:
                continue
            d = lofo.paired(rows[ref]["records"], rows[name]["records"], args.resamples)
            rows[name].setdefault("against", {})[ref] = d
            print(f"{name} minus {'today' if ref == names[0] else ref}: " + ", ".join(
                f"{m} {cell(v[0], v[1:], '+')}" for m, v in d.items()))
    for name in args.by_kind:
        for kind in ("noul", "choice", "score"):
            mine = [r for r in rows[name]["records"] if r["kind"] == kind]
            if mine:
                m = lofo.measures(mine)
                print(f"{name}, {kind}: {len(mine)} questions, accuracy {cell(m['accuracy'])} "
                      f"(chance {m['chance']:.3f}), Brier skill {cell(m['brier_skill'])}, ECE "
                      f"{cell(m['ece'])} (floor {lofo.ece_floor(mine):.3f})")
    if args.fit:
        block = calibration_block(args.fit, qs)
        print(f"\n{args.fit}, fitted on all {fams} families: {json.dumps(block)}")
        if args.write:
            name = args.profile or config["default_profile"]
            fitted = CANDIDATES[args.fit][1] != "raw"
            write(args.config, name, block, fitted and f"{len(qs)} questions of all {fams} dev "
                  f"families (bench/measure/transfer_reads.py), read "
                  f"{args.fit.split(', ')[0]!r}")
            print(f"wrote {args.config}: profiles.{name}.calibration")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {k: {x: y for x, y in v.items() if x != "records"} for k, v in rows.items()},
            indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
