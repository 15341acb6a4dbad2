"""The grounding model's curriculum (tools/models/train_grounding.py): which scenes, edges and
wordings it is shown as it learns, and the gate that widens them.

Why (docs/box.md, "A model that sees"): every run that mixed the four edges, the three kinds,
full scenes or onepass's full prompts in from the start sat on a plateau, one answer for every
image and edge, for 350 to 5,000 steps; held on lone targets' left edges, the edge loss left it
within 150 steps, and each widening the gate made was learnt in a few hundred more. Where it
was widened by the clock instead (a fixed schedule), the edges were lost again (runs 15, 17, 19).
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "data"))
import box_scenes  # noqa: E402

# The curriculum has two parts (three with --start onepass). First a gate: scenes are asked
# their left edge only, and the next edge (EDGE_FIELDS order: left, top, right, bottom) is
# asked too once a --log-every window's mean edge loss is under GATE. The clock (`progress`)
# stands at 0 until all four are asked; from then on each share holds its first value for the
# first `hold` of the steps left, then moves linearly to its last value at `until` (`share`).
#   solo        scenes shown with their target alone (box_scenes.solo)
#   probe       edge reads asked as one line, "Which tenth holds the left edge?" (`probe`)
#   short       examples asked with the question's first lines only (`short`)
#   four_edges  scenes asked every open edge, not one at random
#   others      scenes that also give their present read and box generation
# With --start onepass the edges are asked in onepass's own prompts (no probe or short), and
# once all four are open the gate goes on over the scenes: each stage keeps one more of the
# scene's other objects beside the target (`crowd`), up to CROWD_MAX (the scenes' most), before
# the clock starts.
GATE = 1.2  # nats: ln 10 = 2.30 is a uniform guess over the ten bands
SCHEDULE = {"solo": (1.0, 0.1, 0.8, 0.15),
            "probe": (1.0, 0.0, 0.5, 0.15), "short": (0.9, 0.0, 0.7, 0.0),
            "four_edges": (1.0, 0.0, 0.6, 0.15), "others": (0.0, 1.0, 0.5, 0.15)}


def share(name: str, progress: float) -> float:
    """SCHEDULE[name] = (first, last, until, hold): first up to `hold` of the run, then linear
    to last at `until`."""
    first, last, until, hold = SCHEDULE[name]
    return first + (last - first) * min(1.0, max(0.0, progress - hold) / (until - hold))


def probe(edge: str) -> list:
    """The probe's edge question: the image and one line."""
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text":
                                         f"Which tenth holds the {edge} edge?"}]}]


def short(messages: list, kind: str) -> list:
    """The user turn's image and the question's first line (two for a box: what to find and the
    convention's words); the chat template then adds its default system line."""
    parts = messages[-1]["content"]
    text = "".join(p["text"] for p in parts if p["type"] == "text")
    # the block that is not the record: after it, or before it in a question-first layout
    question = next(b for b in text.split("\n\n") if not b.startswith("Record:")).split("\n")
    keep = question[:2] if kind == "box" else question[:1]
    return [{"role": "user", "content": [p for p in parts if p["type"] != "text"]
             + [{"type": "text", "text": "\n" + "\n".join(keep)}]}]


CROWD_MAX = 4  # box_scenes.sample_scene: at most five objects, the target and four others
# The crowd's stages after the lone target (Examples.crowd is an index here): first one other
# object unlike the target in both colour and shape, then any one, then two, three and four.
# Run 20 went from the lone target to any one other in a single stage and sat near 2.0 nats
# for 1,300 steps before it began to learn which of the two was named (docs/box.md).
CROWD_STAGES = ((0, False), (1, True), (1, False), (2, False), (3, False), (CROWD_MAX, False))


def mixed_stage(stage: int, lone: float, rng: random.Random) -> int:
    """A scene's crowd stage under --mix LONE: lone (stage 0) for this share of scenes, the
    others at a stage drawn evenly from the first crowded one up to STAGE (the held one).
    Why: run 35, held at one stage, learnt its crowd and lost the lone target's boxes
    (Acc@0.5 0.864 -> 0.444 on the --solo eval half): a count the mix keeps showing is not
    lost (run 36: 0.802 with --mix 0.4 over every stage)."""
    if stage == 0 or rng.random() < lone:
        return 0
    return rng.randint(1, stage)


def unlike(a: dict, b: dict) -> bool:
    return a["colour"] != b["colour"] and a["shape"] != b["shape"]


def crowd(item: dict, stage: int, rng: random.Random) -> dict:
    """The item with at most CROWD_STAGES[stage]'s count of its other objects beside the target
    (only ones unlike it, where the stage says so), chosen at random so that the item's words
    still pick out the target alone (a relation keeps its anchor); lone (box_scenes.solo) if no
    such choice is found in a few tries. An absent item shows as many objects as a present one
    of the stage would (box_scenes.solo's near miss at stage 0), so the count never tells
    `present`. Items with no more objects than the stage keeps, and no filter, are returned
    unchanged."""
    others, distinct = CROWD_STAGES[stage]
    objects, target = item["objects"], item["target"]
    if not item["present"]:
        if others == 0:
            return box_scenes.solo(item, rng)
        if others + 1 >= len(objects):
            return item
        return {**item, "objects": [objects[k] for k in sorted(
            rng.sample(range(len(objects)), others + 1))]}
    if others >= len(objects) - 1 and not distinct:
        return item
    rest = [k for k in range(len(objects)) if k != target
            and (not distinct or unlike(objects[k], objects[target]))]
    if others == 0 or not rest:
        return box_scenes.solo(item, rng)
    for _ in range(8):
        keep = sorted([target] + rng.sample(rest, min(others, len(rest))))
        kept = [objects[k] for k in keep]
        if box_scenes.resolve(item["expression"], kept) == [keep.index(target)]:
            return {**item, "objects": kept, "target": keep.index(target)}
    return box_scenes.solo(item, rng)


def misnamed(item: dict, rng: random.Random) -> dict | None:
    """A present item's own scene under words that name nothing in it: the same image asked
    `present` with the answer No (--misname). Named as box_scenes names its targets: by a colour
    or a shape the target is not, or by both with one of them the target's (a near miss). None
    when another object answers to the words (resolve), so the No stays true.
    Why: on lone targets no edge or box needs the words, and an absent item's image differs
    from a present one's, so `present` was learnt from the words' count (run 26) or not at all
    (run 27); the same picture asked both ways can only be told apart by reading both."""
    obj = item["objects"][item["target"]]
    colour = rng.choice([c for c in box_scenes.COLOURS if c != obj["colour"]])
    shape = rng.choice([s for s in box_scenes.SHAPES if s != obj["shape"]])
    expr = rng.choice(({"colour": colour}, {"shape": shape},
                       rng.choice(({"colour": colour, "shape": obj["shape"]},
                                   {"colour": obj["colour"], "shape": shape}))))
    if box_scenes.resolve(expr, item["objects"]):
        return None
    return {**item, "expression": expr, "instructions": box_scenes.describe(expr),
            "present": False, "target": None, "box": None}
