"""Fit a label-position prior and a temperature per question kind, for a one-listing layout.

Usage: .venv/bin/python bench/fit/fit_prior.py --url http://127.0.0.1:8741 [--data PATH ...]
       [--limit N] [--profile NAME] [--config serve_config.json] [--write] [--json OUT]
       [--fit-only] [--layout JSON]
A small model answers largely by position (SmolLM2 mostly says B). Reading every order costs a
read per order; this measures the model's average preference for each listing position instead
and takes it off every answer, at no cost per request (PriDe, Zheng et al. 2023: estimate the
prior over option ids on a few samples, debias the rest).
Owns: the fit split read untempered with the profile's layout (which must list the options once:
orders 1); per kind (noul, choice) and option count, the log of the mean probability of each
position (no gold labels used); one temperature per kind fitted on the debiased fit answers
(fit_calibration.fit_exponent); then the eval split read through the server untempered and with
the fit (kwargs.calibration), every choice also reversed, and the before/after table. With --write,
the profile's calibration block. --fit-only skips the eval reads (bench/measure/evaluate.py then
reads the eval half with the fit: --extra '{"kwargs": {"calibration": <the fit>}}'). --layout
sends a request layout (kwargs.layout, e.g. '{"option_sets": true}') with every read, fit and eval.
Never restarts the server.
"""
import datetime
import json
import math
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]  # bench/: its modules import each other by name
sys.path[:0] = [str(BENCH / d) for d in ("data", "lib", "measure", "fit")]
import decision_metrics as metrics  # noqa: E402
import devdata  # noqa: E402
import evaluate  # noqa: E402
import fit_calibration  # noqa: E402

TINY = 1e-300  # log of an exact 0 stays finite
MIN_QUESTIONS = 8  # an option count needs this many fit questions to get a prior of its own
UNTEMPERED = {"temperature": {"noul": 1.0, "choice": 1.0, "score": 1.0}, "noul_floor": 0.0,
              "reread_below": 0.0, "label_prior": {}}


def position_prior(records: list) -> dict:
    """{option count: log of the mean probability the model gives each listing position}, for
    counts with at least MIN_QUESTIONS questions. Unsupervised: the gold answers are not used,
    so the prior removes what the model prefers whatever the question."""
    by_count = {}
    for rec in records:
        probs = list(rec["probabilities"].values())  # in listing order
        by_count.setdefault(len(probs), []).append(probs)
    return {str(n): [round(math.log(max(math.fsum(col) / len(rows), TINY)), 4)
                     for col in zip(*rows)]
            for n, rows in sorted(by_count.items()) if len(rows) >= MIN_QUESTIONS}


def debias(rec: dict, prior: dict) -> dict:
    """The record as the server answers it with the prior: p_j ∝ p_j / exp(prior_j)."""
    values = prior.get(str(len(rec["probabilities"])))
    if not values:
        return rec
    weights = {k: max(p, TINY) / math.exp(b) for (k, p), b in zip(rec["probabilities"].items(),
                                                                   values)}
    total = math.fsum(weights.values())
    probs = {k: w / total for k, w in weights.items()}
    return {**rec, "probabilities": probs, "top_key": metrics.top_key(probs)}


def calibration(records: list) -> dict:
    """The kwargs.calibration block the fit gives: the position prior of noul and choice, then
    one temperature per kind fitted (log-loss) on the debiased answers."""
    by_kind = metrics.group(records, "kind")
    priors = {kind: position_prior(by_kind.get(kind, [])) for kind in ("noul", "choice")}
    temps = {}
    for kind in devdata.KINDS:
        debiased = [debias(r, priors.get(kind, {})) for r in by_kind.get(kind, [])]
        temps[kind] = round(1 / fit_calibration.fit_exponent(debiased), 4)
    return {**UNTEMPERED, "temperature": temps,
            "label_prior": {kind: p for kind, p in priors.items() if p}}


def main(argv=None) -> int:
    parser = fit_calibration.profile_parser(__doc__)
    parser.add_argument("--write", action="store_true", help="write the fit into the profile")
    parser.add_argument("--json", help="write the fit and both eval rows here")
    parser.add_argument("--fit-only", action="store_true", help="fit, then stop (no eval reads)")
    parser.add_argument("--layout", type=json.loads, default={},
                        help="a request layout sent with every read (kwargs.layout)")
    args = parser.parse_args(argv)
    path, config, name = fit_calibration.read_profile(parser, args)
    layout = {**config["profiles"][name]["layout"], **args.layout}
    if layout.get("orders", 1) != 1:
        parser.error("the prior is per listing position: fit it for a layout with orders 1")
    items = devdata.load(args.data)
    sent = {"layout": args.layout} if args.layout else {}
    untempered = {"kwargs": {**sent, "calibration": UNTEMPERED}}
    fit_run = evaluate.run(args.url, devdata.split(items, "fit", args.limit), args.concurrency,
                           extra=untempered, desc="fit")
    fitted = calibration(fit_run["records"])
    print(f"fit on {len(fit_run['records'])} questions: {json.dumps(fitted)}")
    eval_items = devdata.split(items, "eval", args.limit)
    rows = {}
    for label, cal in () if args.fit_only else (("untempered", UNTEMPERED),
                                                 ("fitted prior and temperatures", fitted)):
        run = evaluate.run(args.url, eval_items, args.concurrency, order_check=True,
                           extra={"kwargs": {**sent, "calibration": cal}},
                           desc=f"eval, {label}")
        rows[label] = evaluate.report(run)["overall"]
    if rows:
        print("| eval half | accuracy | ECE | Brier | order sensitivity | n |")
        print("|---|---|---|---|---|---|")
    for label, m in rows.items():
        print(f"| {label} | " + " | ".join(evaluate.cell(m.get(c)) for c in (
            "accuracy", "ece", "brier", "order_sensitivity", "n")) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps({"fit": fitted, "rows": rows}, indent=2) + "\n")
    if args.write:
        block = config["profiles"][name].setdefault("calibration", {})
        block["temperature"], block["label_prior"] = fitted["temperature"], fitted["label_prior"]
        block["fitted"] = {"temperature and label_prior": {
            "on": f"{' '.join(args.data)} split fit, {len(fit_run['records'])} questions",
            "date": datetime.date.today().isoformat(), "tool": "bench/fit/fit_prior.py"}}
        fit_calibration.save_config(path, config)
        print(f"wrote {path}: profiles.{name}.calibration")
    return 0


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # usage, and nothing run
        sys.exit(print(__doc__))
    sys.exit(main())
