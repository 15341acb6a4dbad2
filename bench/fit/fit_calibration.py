"""Fit one temperature per question kind (noul, choice, score) against a running onepass server.

Usage: .venv/bin/python bench/fit/fit_calibration.py --url http://127.0.0.1:8741 [--data PATH ...]
       [--limit N] [--profile NAME] [--config serve_config.json] [--write] [--png reliability.png]
Owns: reading the profile's current temperature T0 per kind, fitting on the `fit` split an
exponent a per kind (the server's probabilities p0 are softmax(l/T0), so softmax(l/T) is
p0^(T0/T) renormalised: minimise the log-loss of p ∝ p0^a, then T = T0/a), the before/after
numbers on the fit and eval splits, the reliability diagram, and with --write the profile's
`calibration` block. Never restarts the server, never touches other profiles or keys, never
writes the config without --write.
"""
import argparse
import datetime
import json
import math
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]  # bench/: its modules import each other by name
sys.path[:0] = [str(BENCH / d) for d in ("data", "lib", "measure")]
import decision_metrics as metrics  # noqa: E402
import devdata  # noqa: E402
import evaluate  # noqa: E402

KINDS = devdata.KINDS
A_RANGE = (0.05, 20.0)
GRID = 41  # log-spaced exponents; the loss is convex in a, so the best one brackets the minimum
TINY = 1e-300  # log of an exact 0 (a double underflow) stays finite


def current_temperatures(config: dict, profile: str) -> dict:
    """T0 per kind: calibration.temperature[kind], else the scalar `temperature`, else 1.0."""
    prof = config["profiles"][profile]
    per_kind = (prof.get("calibration") or {}).get("temperature") or {}
    scalar = prof.get("temperature", 1.0)
    return {kind: float(per_kind.get(kind, scalar)) for kind in KINDS}


def rescale(rec: dict, a: float) -> dict:
    """The record with p ∝ p^a (in log space, so large a cannot overflow)."""
    logs = {k: a * math.log(max(p, TINY)) for k, p in rec["probabilities"].items()}
    top = max(logs.values())
    weights = {k: math.exp(v - top) for k, v in logs.items()}
    total = sum(weights.values())
    probs = {k: w / total for k, w in weights.items()}
    return {**rec, "probabilities": probs, "top_key": metrics.top_key(probs)}


def rescaled(records: list, exponents: dict) -> list:
    return [rescale(r, exponents.get(r["kind"], 1.0)) for r in records]


def fit_exponent(records: list) -> float:
    """The a in A_RANGE minimising log-loss: a log-spaced grid, then golden section near the best."""
    if not records:
        return 1.0

    def loss(a):
        return metrics.log_loss([rescale(r, a) for r in records])
    lo, hi = (math.log(x) for x in A_RANGE)
    grid = [math.exp(lo + (hi - lo) * i / (GRID - 1)) for i in range(GRID)]
    return metrics.grid_then_golden(loss, grid, lambda a, b: b - a <= 1e-4 * max(1.0, a))

def profile_parser(doc: str) -> argparse.ArgumentParser:
    """The flags the fitting tools share: the server and data (evaluate's), config, profile."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    evaluate.add_common_args(parser)
    parser.add_argument("--config", default=str(BENCH.parent / "serve_config.json"))
    parser.add_argument("--profile", help="profile name (default: the file's default_profile)")
    return parser


def read_profile(parser, args) -> tuple[Path, dict, str]:
    """(config path, the parsed file, the profile's name); an unknown profile is a usage error."""
    path = Path(args.config)
    config = json.loads(path.read_text(encoding="utf-8"))
    profile = args.profile or config.get("default_profile")
    if profile not in config.get("profiles", {}):
        parser.error(f"no profile {profile!r} in {path}")
    return path, config, profile


def save_config(path: Path, config: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)  # a crash mid-write must not leave a half-written config


def write_config(path: Path, profile: str, temperatures: dict, on: str) -> None:
    """Set the profile's calibration temperatures and their provenance; keep everything else."""
    config = json.loads(path.read_text(encoding="utf-8"))
    calibration = config["profiles"][profile].setdefault("calibration", {})
    calibration["temperature"] = {kind: temperatures[kind] for kind in KINDS}
    calibration["fitted"] = {"temperature": {"on": on, "date": datetime.date.today().isoformat(),
                                             "tool": "bench/fit/fit_calibration.py"}}
    save_config(path, config)


def draw_reliability(path: str, panels: list) -> None:
    """One panel per (title, records before, records after): accuracy against top-option
    confidence per bin, before in red and after in blue, with the diagonal."""
    from PIL import Image, ImageDraw
    size, margin = 360, 50
    image = Image.new("RGB", (len(panels) * (size + 2 * margin), size + 2 * margin + 30), "white")
    draw = ImageDraw.Draw(image)
    for i, (title, before, after) in enumerate(panels):
        x0, y0 = i * (size + 2 * margin) + margin, margin + 20

        def point(conf, acc):
            return x0 + conf * size, y0 + (1 - acc) * size
        draw.text((x0, y0 - 45), title, fill="black")
        for t in range(6):  # grid and ticks every 0.2
            v = t / 5
            draw.line([point(v, 0), point(v, 1)], fill=(225, 225, 225))
            draw.line([point(0, v), point(1, v)], fill=(225, 225, 225))
            draw.text((point(v, 0)[0] - 8, y0 + size + 4), f"{v:.1f}", fill="black")
            draw.text((x0 - 28, point(0, v)[1] - 6), f"{v:.1f}", fill="black")
        draw.rectangle([point(0, 1), point(1, 0)], outline="black")
        draw.line([point(0, 0), point(1, 1)], fill=(150, 150, 150), width=1)
        for records, colour in ((before, (200, 30, 30)), (after, (30, 60, 200))):
            pts = [point(b["confidence"], b["accuracy"])
                   for b in metrics.reliability(records) if b["n"]]
            if len(pts) > 1:
                draw.line(pts, fill=colour, width=2)
            for x, y in pts:
                draw.ellipse([x - 4, y - 4, x + 4, y + 4], fill=colour)
        draw.text((x0, y0 + size + 20), "x: top-option confidence, y: accuracy", fill="black")
        draw.text((x0, y0 - 28), "red: before   blue: after   grey: perfect", fill="black")
    image.save(path)


def _summary_rows(split: str, records: list, exponents: dict, t0: dict, temps: dict) -> list:
    after = rescaled(records, exponents)
    rows = []
    for kind in (*KINDS, "all"):
        mine = [r for r in records if kind in ("all", r["kind"])]
        if not mine:
            continue
        mine_after = [r for r in after if kind in ("all", r["kind"])]
        b, a = metrics.summary(mine), metrics.summary(mine_after)
        rows.append({"split": split, "kind": kind, "n": b["n"],
                     "T0": t0.get(kind), "a": exponents.get(kind), "T": temps.get(kind),
                     **{f"{m}_before": b[m] for m in ("ece", "brier", "log_loss")},
                     **{f"{m}_after": a[m] for m in ("ece", "brier", "log_loss")}})
    return rows


def _print_rows(rows: list) -> None:
    def num(v, fmt=".3f"):
        return "-" if v is None else format(v, fmt)
    print(f"{'split':5} {'kind':6} {'n':>5} {'T0':>6} {'a':>6} {'T':>6}   "
          f"{'ECE before→after':>17}  {'Brier before→after':>19}  {'logloss before→after':>21}")
    for r in rows:
        print(f"{r['split']:5} {r['kind']:6} {r['n']:5d} {num(r['T0'], '.3g'):>6} "
              f"{num(r['a'], '.3g'):>6} {num(r['T'], '.3g'):>6}   "
              f"{num(r['ece_before']):>8}→{num(r['ece_after']):<8}  "
              f"{num(r['brier_before']):>9}→{num(r['brier_after']):<9}  "
              f"{num(r['log_loss_before']):>10}→{num(r['log_loss_after']):<10}")


def _measure(args) -> dict:
    """evaluate.run on the fit and the eval split; non-200 answers are reported, not fatal."""
    items = devdata.load(args.data)
    splits = {}
    for part in ("fit", "eval"):
        chosen = devdata.split(items, part, args.limit)
        splits[part] = evaluate.run(args.url, chosen, args.concurrency, extra=args.extra,
                                    desc=part)
        for what, count in splits[part]["errors"].items():
            print(f"{part}: {what}: {count}")
    return splits


def main(argv=None) -> int:
    parser = profile_parser(__doc__)
    parser.add_argument("--write", action="store_true", help="write the fitted temperatures")
    parser.add_argument("--png", help="save a reliability diagram here")
    args = parser.parse_args(argv)
    config_path, config, profile = read_profile(parser, args)
    t0 = current_temperatures(config, profile)
    splits = _measure(args)
    fit_records = splits["fit"]["records"]
    by_kind = metrics.group(fit_records, "kind")
    exponents = {kind: fit_exponent(by_kind.get(kind, [])) for kind in KINDS}
    temps = {kind: round(t0[kind] / exponents[kind], 4) for kind in KINDS}
    for kind, a in exponents.items():
        if not A_RANGE[0] * 1.01 < a < A_RANGE[1] / 1.01:  # the true optimum may lie beyond
            print(f"warning: {kind}: a = {a:.3g} is at the search bound {A_RANGE}; "
                  "the answers carry little signal for it (or too few questions)")
    rows = []
    for part in ("fit", "eval"):
        rows += _summary_rows(part, splits[part]["records"], exponents, t0, temps)
    print(f"profile {profile}: T0 {t0} -> T {temps}")
    _print_rows(rows)
    if args.write:
        on = f"{' '.join(args.data)} split fit, {len(fit_records)} questions"
        write_config(config_path, profile, temps, on)
        print(f"wrote {config_path}: profiles.{profile}.calibration.temperature = {temps}")
    if args.png:
        draw_reliability(args.png, [(f"{part} split ({len(splits[part]['records'])} questions)",
                                     splits[part]["records"],
                                     rescaled(splits[part]["records"], exponents))
                                    for part in ("fit", "eval")])
        print(f"saved {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
