"""Each prompt technique on and off, measured on the dev data's held-back half, one server.

Usage: .venv/bin/python bench/measure/techniques.py --url http://127.0.0.1:8741 [--limit 12]
       [--json OUT] [--only ROW ...] [--png order.png]
Every configuration is a request-level `kwargs.layout` with untempered `kwargs.calibration` (so
one running server serves them all); one more row sends neither: the embedded profile as it
stands. Each reads the eval split of the data (devdata.split, `--limit` items per task), with every
choice also read with its options reversed (order sensitivity). The last rows fit one
temperature per question type on the fit split of a layout (fit_calibration.fit_exponent) and
apply it to that layout's eval-split answers. Prints one table: accuracy, ECE (top
option, 10 bins), Brier, order sensitivity (choice questions), input tokens and latency per
decision (mean, at --concurrency requests at once). --png draws each row's order sensitivity
(bench/lib/plots.py).
"""
import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]  # bench/: its modules import each other by name
sys.path[:0] = [str(BENCH / d) for d in ("data", "lib", "measure", "fit")] + [str(BENCH.parent)]
import decision_metrics as metrics  # noqa: E402
import devdata  # noqa: E402
import evaluate  # noqa: E402
import fit_calibration  # noqa: E402
from onepass.config import Layout  # noqa: E402

# Every row spells its whole layout and untempered calibration (so the table does not move when
# the profile's defaults do); PROFILE_ROW sends no override: the embedded profile as it stands.
PLAIN = asdict(Layout())  # every technique off: the dataclass defaults
UNTEMPERED = {"temperature": {"noul": 1.0, "choice": 1.0, "score": 1.0}, "noul_floor": 0.0,
              "reread_below": 0.0, "label_prior": {}}
CONFIGS = {
    "plain (one read)": {},
    "no guard line": {"guard_line": False},
    "question first": {"question_first": True},
    "repeat 2": {"repeat": 2},
    "orders 2 in one prompt": {"orders": 2},
    "orders 2 in one prompt + shrink 1": {"orders": 2, "shrink": 1.0},
    "orders 2 as two reads + shrink 1": {"orders": 2, "orders_as_reads": True, "shrink": 1.0},
    "repeat 2 + orders 2 + shrink 1": {"repeat": 2, "orders": 2, "shrink": 1.0},
    "question first + orders 2 as two reads + shrink 1": {"question_first": True, "orders": 2,
                                                          "orders_as_reads": True, "shrink": 1.0},
    "every cyclic order as a read + shrink 1": {"orders": 8, "orders_as_reads": True,
                                                "shrink": 1.0},
    "options as a set (one read)": {"option_sets": True},
}
CALIBRATED = ("plain (one read)", "question first + orders 2 as two reads + shrink 1",
              "orders 2 as two reads + shrink 1", "every cyclic order as a read + shrink 1",
              "options as a set (one read)")
FITTED = " + temperatures fitted on the fit half"  # its order sensitivity is its layout's row's
PROFILE_ROW = "the embedded profile (its layout and fitted calibration, no override)"
COLUMNS = ("accuracy", "ece", "brier", "order_sensitivity", "input_tokens_per_decision",
           "latency_ms_per_decision")


def overrides(changes: dict | None) -> dict | None:
    """The request's kwargs for a row: None (the profile as it is) or the full layout, untempered."""
    if changes is None:
        return None
    return {"kwargs": {"layout": {**PLAIN, **changes}, "calibration": UNTEMPERED}}


def measure(url, items, changes, concurrency) -> dict:
    extra = overrides(changes)
    result = evaluate.run(url, items, concurrency, order_check=True, extra=extra)
    return {"report": evaluate.report(result), "records": result["records"]}


def calibrated_row(url, data, limit, concurrency, changes: dict, measured: dict) -> dict:
    """Temperatures fitted on the fit half (same layout), applied to the eval half's answers."""
    fit_items = devdata.split(devdata.load(data), "fit", limit)
    extra = overrides(changes)
    fit = evaluate.run(url, fit_items, concurrency, extra=extra)["records"]
    exponents = {kind: fit_calibration.fit_exponent(recs)
                 for kind, recs in metrics.group(fit, "kind").items()}
    rescaled = fit_calibration.rescaled(measured["records"], exponents)  # ranking unchanged
    row = {**measured["report"]["overall"], **metrics.summary(rescaled)}
    row["order_sensitivity"] = measured["report"]["overall"]["order_sensitivity"]
    row["exponents"] = exponents
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    evaluate.add_common_args(parser)
    parser.add_argument("--json", help="write every row here")
    parser.add_argument("--only", nargs="+", metavar="ROW", default=None,
                        help="measure only these rows of CONFIGS (and their fitted rows)")
    parser.add_argument("--png", help="draw order sensitivity per layout here (matplotlib)")
    args = parser.parse_args(argv)
    items = devdata.split(devdata.load(args.data), "eval", args.limit)
    rows, kept = {}, {}
    chosen = {name: CONFIGS[name] for name in (args.only or CONFIGS)}
    for name, changes in {**chosen, PROFILE_ROW: None}.items():
        measured = measure(args.url, items, changes, args.concurrency)
        kept[name] = measured
        rows[name] = measured["report"]["overall"]
    for name in (n for n in CALIBRATED if n in chosen):
        rows[name + FITTED] = calibrated_row(
            args.url, args.data, args.limit, args.concurrency, CONFIGS[name], kept[name])
    print("| technique | accuracy | ECE | Brier | order sensitivity | input tokens | ms/decision |")
    print("|---|---|---|---|---|---|---|")
    for name, m in rows.items():
        print(f"| {name} | " + " | ".join(evaluate.cell(m.get(c), 0 if c.endswith("decision")
                                                         else 3) for c in COLUMNS) + " |")
    if args.png:
        import plots
        plots.order_sensitivity(args.png, {n: r for n, r in rows.items() if FITTED not in n},
                                plots.label(plots.served_model(args.url)),
                                f"Order sensitivity per layout ({len(items)} eval decisions"
                                f"{f', {args.limit} per task' if args.limit else ''})")
    if args.json:
        Path(args.json).write_text(json.dumps({"limit": args.limit, "data": args.data,
                                               "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
