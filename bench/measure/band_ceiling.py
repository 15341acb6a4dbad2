"""How well the edges mode could do with a perfect reader: the eval half's true boxes read back
through onepass's bands, once as a model sure of each edge's band would give them (the band's
centre) and once as one trained on soft targets would (the expected centre of
tools/models/grounding_targets.py soft_bands: the edge itself, but within half a band of a border).

Usage: .venv/bin/python bench/measure/band_ceiling.py [--data DIR] [--levels 10] [--split eval]
Prints, per reader, the mean IoU and Acc@0.5 over the present items. Why: onepass places each
edge at its read's expected band centre (onepass/kinds/box.py edges_box), so a model trained to
name one band, and sure of it, can be no better than the first line. Sends nothing.
"""
import argparse
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH / "data"), str(BENCH / "lib"), str(BENCH.parent / "tools" / "models")]
import box_metrics as bm  # noqa: E402
import box_scenes  # noqa: E402
from grounding_targets import band, soft_bands  # noqa: E402

EDGES = ("left", "top", "right", "bottom")


def readers(levels: int) -> dict:
    """Each reader: an edge's fraction -> where onepass would place it."""
    return {"one band, sure (band centre)": lambda f: (band(f, levels) + 0.5) / levels,
            "soft targets (expected centre)": lambda f: sum(
                (b + 0.5) / levels * w for b, w in soft_bands(f, levels))}


def ceiling(items: list, read) -> tuple[float, float]:
    """(mean IoU, Acc@0.5) of the present items' boxes with every edge read by `read`."""
    ious = [bm.iou(it["box"], {e: read(it["box"][e]) for e in EDGES})
            for it in items if it["present"]]
    return sum(ious) / len(ious), sum(v >= 0.5 for v in ious) / len(ious)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="/tmp/onepass_box_scenes",
                        help="box_scenes.jsonl or the directory holding it")
    parser.add_argument("--levels", type=int, default=10, help="bands across the image "
                        "(onepass: as many as the profile's score labels, at most MAX_LEVELS)")
    parser.add_argument("--split", default="eval", choices=("fit", "eval", "all"))
    args = parser.parse_args(argv)
    items = box_scenes.select(box_scenes.load(args.data), args.split)
    print(f"{box_scenes.command(items[0])}, {args.split} half, "
          f"{sum(it['present'] for it in items)} present items, {args.levels} bands")
    for name, read in readers(args.levels).items():
        mean, acc = ceiling(items, read)
        print(f"  {name:32} mean IoU {mean:.3f}  Acc@0.5 {acc:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
