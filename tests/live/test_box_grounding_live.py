"""Box questions answered by a model that sees: the vision stack serves `idefics3-grounding`
(trained here on bench/data/box_scenes.py's scenes, tools/models/train_grounding.py), and these
tests hold its found boxes to the eval recorded beside its weights
(models/idefics3-grounding/eval/, written by bench/measure/box_eval.py), show that a wrong box
convention loses what the right one finds, and check that each shipped grounding model's build
is the same bits whatever torch kernels build it (tests/live/test_box_conventions_live.py
serves the second, trained in another convention).

The model reads a lone object and whether it is the one named; it does not yet pick the named
object out of a crowd (docs/box.md), so its boxes are held on the eval half of the --solo set
(one object each: a present item's target, an absent item's near miss or unlike object), and
only `present` on the full scenes' eval half too. The bars
are derived from the recorded eval of the same items on the same profile: two standard errors
below it, for another CPU's rounding.
"""
import json
import math
import os
import shutil
import subprocess
import sys

import pytest

from tests.support.grounding_eval import bar, boxes_hold, convention, eval_items, send
from tests.support.grounding_eval import recorded as recorded_for
from tests.support.live_stack import ROOT, VISION_PROFILE

import box_conventions  # noqa: E402  (bench/measure, on the path grounding_eval sets)
import box_metrics  # noqa: E402

sys.path.insert(0, str(ROOT / "tools" / "models"))
from build_grounding import MODELS as GROUNDING_MODELS  # noqa: E402  (stdlib at import)

OWN = convention(VISION_PROFILE)
# The conventions a generation in OWN's cannot be read in: another order or other units. The
# same order and units on a 1024 grid is a 2.4% scale, which boxes this rough cannot tell apart
# (docs/box.md: on the eval half it read slightly better, 0.396 against 0.375).
WRONG = [name for name, conv in box_conventions.CONVENTIONS.items()
         if (conv["units"], conv["order"]) != (OWN["units"], OWN["order"])]


def recorded(mode: str, scenes: str = "solo") -> dict:
    return recorded_for(VISION_PROFILE, mode, scenes)


def holds(then: list, now: list, ids: set) -> None:
    """Acc@0.5 and mean IoU at least the recorded eval of the same items less two standard
    errors, and `present` as accurate."""
    boxes_hold(then, now, ids)
    right = [present_right(r) for r in now]
    assert sum(right) / len(right) >= bar([present_right(r) for r in then if r["id"] in ids])


@pytest.mark.parametrize("mode", ["edges", "generate", "hybrid"])
def test_found_boxes_hold_to_the_recorded_eval(solo_scenes, solo_answers, mode):
    """Edges (the mode this model reads best), generate (its written box) and hybrid (the more
    confident of the two), on the first N eval items."""
    ids = {item["id"] for item in solo_scenes}
    holds(recorded(mode)["records"], solo_answers(mode), ids)


@pytest.mark.parametrize("mode", ["edges", "generate"])
def test_each_mode_s_confidence_through_its_own_map(solo_scenes, solo_answers, mode):
    """Each mode's confidence comes from its own fitted map (vision.box.confidence per mode):
    over the found boxes of present items, the mean confidence stays as close to the share that
    hit (IoU >= 0.5) as in the recorded eval of the same items, give or take two standard errors.
    With one mode's map applied to the other's feature, run 25's generate boxes said 0.66 more
    than they hit (docs/box.md)."""
    ids = {item["id"] for item in solo_scenes}

    def gaps(records):
        return [float(r["hit"]) - r["confidence"] for r in records
                if r["id"] in ids and r["present_true"] and r["found"]]
    then, now = gaps(recorded(mode)["records"]), gaps(solo_answers(mode))
    assert abs(sum(then) / len(then)) < 0.15, then  # the recording is calibrated in the large
    mean = sum(now) / len(now)
    spread = math.sqrt(sum((g - mean) ** 2 for g in now) / max(1, len(now) - 1))
    assert abs(mean) <= abs(sum(then) / len(then)) + 2 * spread / math.sqrt(len(now)), (mean,
                                                                                         now)


def ranks_present_as_recorded(then: list, now: list) -> None:
    """`present` ranks the items whose object is there above those whose is not (AUC) at least
    as well as the recorded eval of the same items less two standard errors (Hanley and
    McNeil's)."""
    ids = {r["id"] for r in now}
    then = [r for r in then if r["id"] in ids]
    want = box_metrics.auc([r["present"] for r in then], [r["present_true"] for r in then])
    got = box_metrics.auc([r["present"] for r in now], [r["present_true"] for r in now])
    yes = sum(1 for r in then if r["present_true"])
    se = box_metrics.auc_se(want, yes, len(then) - yes)
    assert got >= want - 2 * se, (got, want, se)


def test_present_tells_the_items_with_the_object_from_those_without(solo_answers):
    """On lone objects. A read of the words alone ranks near 0.5 (run 26: 0.55 on the eval
    half, where runs 31 and 33, trained on misnamed scenes, reached 0.95 and 0.97; docs/box.md)."""
    ranks_present_as_recorded(recorded("edges")["records"], solo_answers("edges"))


def test_present_tells_it_among_other_objects_too(vision_stack):
    """On full scenes (2-5 objects, the target beside one that shares its colour or shape;
    an absent object mostly named by a colour and a shape each in the scene, never on one
    object): run 36, trained on crowds
    mixed with lone scenes, ranks them 0.988 on the eval half, where run 33, trained on lone
    ones only, ranked them 0.645 (docs/box.md). Its boxes there are not held to anything: it
    does not pick the named object out of a crowd."""
    doc = recorded("edges", "full")
    assert not doc["scenes"]["solo"], doc["scenes"]
    now = send(vision_stack.url, eval_items(VISION_PROFILE, "full"), "edges")
    assert len({r["objects"] for r in now}) > 1, "full scenes hold different numbers"
    ranks_present_as_recorded(doc["records"], now)


def test_hybrid_answers_the_more_confident_of_the_two_modes(solo_answers):
    """Each hybrid answer is the edges mode's or the generate mode's answer to the same item
    (box and confidence), the one of higher confidence, generate on a tie."""
    by_mode = {mode: {r["id"]: r for r in solo_answers(mode)} for mode in ("edges", "generate")}
    for r in solo_answers("hybrid"):
        e, g = by_mode["edges"][r["id"]], by_mode["generate"][r["id"]]
        want = g if (g["found"] and g["confidence"] >= e["confidence"]) or not e["found"] else e
        assert r["x_box_mode"] == want["x_box_mode"], (r, e, g)
        assert r["confidence"] == pytest.approx(want["confidence"], abs=1e-6), (r, want)
        for edge in ("left", "top", "right", "bottom"):
            assert r["box"][edge] == pytest.approx(want["box"][edge], abs=1e-6), (r, want)


def test_a_wrong_convention_loses_the_box_the_right_one_keeps(solo_scenes, solo_answers):
    """The conventions by failure: what the model wrote (x_box_raw), read in the profile's
    convention, holds to the recorded eval; read in each WRONG one (what a profile declaring it
    would answer), it loses IoU, pair by pair, at least as much as the recorded eval of the same
    items showed less two standard errors of that gap: the conversion is tested by what it does
    to real answers, not only by worked values."""
    ids, by_id = {item["id"] for item in solo_scenes}, {item["id"]: item for item in solo_scenes}
    then = [r for r in recorded("generate")["records"] if r["id"] in ids]
    now = solo_answers("generate")
    was, got = (box_conventions.compare(records, by_id, OWN) for records in (then, now))
    assert got["own"]["mean_iou"] >= bar(box_conventions.ious(then, by_id, OWN))
    for name in WRONG:
        floor = was[name]["gap"] - 2 * was[name]["gap_se"]
        assert floor > 0.1, (name, was[name])  # the recorded eval does show the loss
        assert got[name]["gap"] >= floor, (name, got[name], floor)
        assert got[name]["mean_iou"] < got["own"]["mean_iou"] / 2, (name, got[name])


def present_right(record: dict) -> float:
    """1 when `present` at 0.5 says what the item holds (box_eval's present accuracy)."""
    return float((record["present"] >= 0.5) == record["present_true"])


@pytest.mark.parametrize("model", GROUNDING_MODELS)
def test_the_build_is_the_same_bits_under_torch_s_scalar_kernels(tmp_path, model):
    """serve.sh builds each grounding model from its shipped weights and refuses a build whose
    sha256 is not the recorded one; torch picks its kernels by CPU (AVX2, AVX-512, or none), so
    the build is redone here with the plain kernels forced and must give the recorded digests."""
    shipped, ship = ROOT / "models" / model, tmp_path / "ship"
    shutil.copytree(shipped, ship, ignore=shutil.ignore_patterns("eval", "*.png", "curve.tsv"))
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
    subprocess.run([sys.executable, str(ROOT / "tools" / "models" / "train_grounding.py"),
                    "--record-digests", "--ship", str(ship)], env=env, check=True,
                   capture_output=True, timeout=600)
    assert (json.loads((ship / "digests.json").read_text())
            == json.loads((shipped / "digests.json").read_text()))
