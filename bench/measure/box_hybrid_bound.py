"""How much any hybrid pick could gain: two box_eval.py runs of the same items, one per mode
(generate and edges), and the best box either mode made for each item.

Usage: .venv/bin/python bench/measure/box_hybrid_bound.py EDGES.json GENERATE.json
EDGES.json, GENERATE.json: bench/measure/box_eval.py --json of an edges and a generate run over
the same items (the records keep each mode's box and calibrated confidence). Prints mean IoU and
Acc@0.5 over the present items answered in both, for: each mode alone, onepass's hybrid rule
replayed on the two records (onepass/kinds/box_confidence.py's `hybrid`: the more confident
box), and the oracle that picks the better box of the two for each item (no rule that picks
one of the two boxes can do better).
Owns: the pairing of two runs' records and the three picks. Never talks to a server.
Why: hybrid "beats both" only if generate's box is the better one on items edges misses; the
oracle says at once whether such items exist (run 33: oracle Acc@0.5 0.889 against edges' 0.864).
"""
import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "bench" / "lib")]
import box_metrics as bm  # noqa: E402

from onepass.kinds.box_confidence import hybrid  # noqa: E402


def paired(edges: list, generated: list) -> list:
    """[(edges record, generate record)] of the present items scored in both runs."""
    by_id = {r["id"]: r for r in generated if r.get("iou") is not None}
    return [(r, by_id[r["id"]]) for r in edges
            if r.get("iou") is not None and r["id"] in by_id]


def picks(pairs: list) -> dict:
    """{pick: (mean IoU, Acc@0.5)} for edges, generate, the hybrid rule and the oracle."""
    def rule(e, g):  # what a hybrid question answers: a not-found box has no confidence
        sure = {"generate": g["confidence"] if g["found"] else None,
                "edges": e["confidence"] if e["found"] else None}
        return g if hybrid(sure["generate"], sure["edges"]) == "generate" else e
    chosen = {"edges": [e for e, _ in pairs], "generate": [g for _, g in pairs],
              "hybrid rule": [rule(e, g) for e, g in pairs],
              "oracle (better of the two)": [max(e, g, key=lambda r: r["iou"]) for e, g in pairs]}
    return {name: (sum(r["iou"] for r in rows) / len(rows),
                   sum(r["iou"] >= bm.HIT_IOU for r in rows) / len(rows))
            for name, rows in chosen.items()} if pairs else {}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("edges", help="box_eval.py --json of an edges run")
    parser.add_argument("generate", help="box_eval.py --json of a generate run, same items")
    args = parser.parse_args(argv)
    runs = [json.loads(Path(p).read_text(encoding="utf-8"))["records"]
            for p in (args.edges, args.generate)]
    pairs = paired(*runs)
    print(f"{len(pairs)} present items answered in both runs")
    for name, (iou, acc) in picks(pairs).items():
        print(f"{name:28} mean IoU {iou:.3f}  Acc@0.5 {acc:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
