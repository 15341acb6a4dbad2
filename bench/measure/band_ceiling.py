"""How well the edges mode could do with a perfect reader: the eval half's true boxes read back
through onepass's bands, once as a model sure of each edge's band would give them (the band's
centre) and once as one trained on soft targets would (the expected centre of
tools/models/grounding_targets.py soft_bands: the edge itself, but within half a band of a border).

Usage: .venv/bin/python bench/measure/band_ceiling.py [--data DIR] [--levels 10] [--split eval]
Prints, per reader, the mean IoU and Acc@0.5 over the present items. Why: onepass places each
edge at its read's expected band centre (onepass/kinds/box.py edges_box), so a model trained to
name one band, and sure of it, can be no better than the first line. Each reader's bands are
placed by that same edges_box, so the ceiling follows onepass's reading. Sends nothing.
"""
import argparse
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(BENCH.parent), str(BENCH / "data"), str(BENCH / "lib"),
                str(BENCH.parent / "tools" / "models")]
import box_metrics as bm  # noqa: E402
import box_scenes  # noqa: E402
from grounding_targets import band, soft_bands  # noqa: E402

from onepass.kinds.box import EDGES, edges_box  # noqa: E402


def readers(levels: int) -> dict:
    """Each reader: an edge's fraction -> the distribution over the bands its read gives."""
    def spread(weighted):
        probs = [0.0] * levels
        for b, w in weighted:
            probs[b] += w
        return probs
    return {"one band, sure (band centre)": lambda f: spread([(band(f, levels), 1.0)]),
            "soft targets (expected centre)": lambda f: spread(soft_bands(f, levels))}


def ceiling(items: list, read) -> tuple[float, float]:
    """(mean IoU, Acc@0.5) of the present items' boxes, each edge's read by `read` placed by
    onepass's own edges_box."""
    ious = []
    for it in items:
        if it["present"]:
            placed, _ = edges_box([read(it["box"][e]) for e in EDGES])
            ious.append(bm.iou(it["box"], dict(zip(EDGES, placed))))
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
