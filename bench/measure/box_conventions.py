"""What the grounding model wrote, read through every box convention: the right one keeps the
box, a wrong one loses it. The conversion code is then tested by what it does to real answers.

Usage: .venv/bin/python bench/measure/box_conventions.py EVAL.json [--data DIR]
       [--profile idefics3-tiny]
       .venv/bin/python bench/measure/box_conventions.py --profile P --declare NAME
       --write-config OUT.json   (serve_config.json with P declaring CONVENTIONS[NAME]: a shim
       started with --config OUT.json serves P's model through that convention, words and all)
EVAL.json: bench/measure/box_eval.py --json of a generate or hybrid run (its records keep the
numbers the model wrote, x_box_raw). Prints, for the profile's convention and each of
CONVENTIONS, the mean IoU and Acc@0.5 over the present items whose generation wrote numbers,
and the paired gap to the profile's convention with its standard error.
Owns: re-reading x_box_raw through onepass/kinds/box_geometry.py's to_fractions for each
convention (what a profile declaring it would answer, the model unchanged), and the profile file
of a declared convention. Never talks to a server; box_eval.py made the answers.
"""
import argparse
import copy
import json
import math
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH / "data"), str(BENCH / "lib")]
import box_metrics as bm  # noqa: E402
import box_scenes  # noqa: E402

from onepass.kinds import box_geometry  # noqa: E402
from onepass.profile import load_profile  # noqa: E402

# The conventions the profiles may declare (docs/box.md), each as a profile would write it.
CONVENTIONS = {
    "grid 1000 xyxy": {"units": "grid", "order": "xyxy", "scale": 1000},
    "grid 1000 yxyx": {"units": "grid", "order": "yxyx", "scale": 1000},
    "grid 1024 xyxy": {"units": "grid", "order": "xyxy", "scale": 1024},
    "grid 1024 yxyx": {"units": "grid", "order": "yxyx", "scale": 1024},
    "original pixels xyxy": {"units": "original_pixels", "order": "xyxy"},
    "resized pixels xyxy (Qwen rule, factor 28)": {
        "units": "resized_pixels", "order": "xyxy",
        "resize": {"factor": 28, "min_pixels": 3136, "max_pixels": 1003520}},
}


def ious(records: list, items: dict, raw_convention: dict) -> list:
    """IoU with the target of each record's written numbers read in `raw_convention`, over the
    present items whose generation wrote numbers (None when the reading leaves no box: 0)."""
    conv = box_geometry.convention(raw_convention)
    out = []
    for rec in records:
        item = items[rec["id"]]
        if not item["present"] or rec.get("x_box_raw") is None:
            continue
        size = (item["width"], item["height"])
        got = box_geometry.to_fractions(rec["x_box_raw"], conv, size,
                                        box_geometry.resized(conv, size))
        out.append(0.0 if got is None else bm.iou(dict(zip(bm.WHOLE, got)), item["box"]))
    return out


def compare(records: list, items: dict, own: dict) -> dict:
    """{name: {n, mean_iou, acc_at_0.5, gap, gap_se}} for the profile's convention ("own") and
    each of CONVENTIONS; gap is the paired mean of (own IoU - this IoU) with its standard error."""
    base = ious(records, items, own)
    out = {}
    for name, conv in {"own": own, **CONVENTIONS}.items():
        these = base if name == "own" else ious(records, items, conv)
        gaps = [a - b for a, b in zip(base, these)]
        n = len(these)
        mean_gap = sum(gaps) / n if n else None
        se = (math.sqrt(sum((g - mean_gap) ** 2 for g in gaps) / (n - 1) / n) if n > 1
              else None)
        out[name] = {"n": n, "mean_iou": sum(these) / n if n else None,
                     "acc_at_0.5": sum(v >= bm.HIT_IOU for v in these) / n if n else None,
                     "gap": mean_gap, "gap_se": se}
    return out


def declared(config: dict, profile: str, conv: dict) -> dict:
    """A copy of the profile file CONFIG in which PROFILE declares CONV as its box convention,
    everything else (the model, its maps) unchanged."""
    out = copy.deepcopy(config)
    out["profiles"][profile]["vision"]["box"]["convention"] = dict(conv)
    return out


def write_declared(profile: str, name: str, path: Path) -> None:
    config = json.loads((ROOT / "serve_config.json").read_text(encoding="utf-8"))
    path.write_text(json.dumps(declared(config, profile, CONVENTIONS[name]), indent=2) + "\n",
                    encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("eval_json", nargs="?")
    parser.add_argument("--data", default=box_scenes.DEFAULT_OUT)
    parser.add_argument("--profile", default="idefics3-tiny",
                        help="the vision profile whose convention is the one the model was asked in")
    parser.add_argument("--declare", choices=sorted(CONVENTIONS),
                        help="with --write-config: the convention the profile is made to declare")
    parser.add_argument("--write-config", type=Path)
    args = parser.parse_args(argv)
    if (args.declare is None) != (args.write_config is None) or not (args.eval_json
                                                                      or args.declare):
        parser.error("give EVAL.json, or --declare NAME with --write-config OUT")
    if args.declare:
        write_declared(args.profile, args.declare, args.write_config)
        print(args.write_config)
        return 0
    records = json.loads(Path(args.eval_json).read_text())["records"]
    items = {it["id"]: it for it in box_scenes.load(args.data)}
    own = load_profile(str(ROOT / "serve_config.json"), args.profile)[1].vision.box["convention"]
    print(f"{'read as':44} {'n':>4} {'mean IoU':>9} {'Acc@0.5':>8} {'gap to own':>16}")
    for name, row in compare(records, items, own).items():
        label = f"{args.profile}'s own ({json.dumps(own)})" if name == "own" else name
        gap = "-" if row["gap"] is None else f"{row['gap']:+.3f} ± {row['gap_se'] or 0:.3f}"
        fmt = (lambda v: "-" if v is None else f"{v:.3f}")
        print(f"{label[:44]:44} {row['n']:>4} {fmt(row['mean_iou']):>9} "
              f"{fmt(row['acc_at_0.5']):>8} {gap:>16}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
