"""Box conventions proven by failure, with a model trained per convention: `idefics3-grounding`
was trained to write its box in grid 1000 xyxy, `idefics3-grounding-yxyx` (the same model
trained on in grid 1024 yxyx, PaliGemma's convention) in that one. Each is served through its
own profile and through a copy of that profile declaring the other model's convention (a second
shim against the same vLLM; bench/measure/box_conventions.py --declare writes the file): the
words of the question and the reading of the numbers then both say the other convention. Its
own keeps the box, the other loses it. Every bar comes from the model's recorded eval of the
same items (models/NAME/eval/: solo-generate.json through its own profile,
solo-generate-declared.json through the other's), less two standard errors.
"""
import contextlib

import pytest

from tests.support.grounding_eval import bar, boxes_hold, convention, recorded, send
from tests.support.live_stack import (VISION_PROFILE, free_port, serve_stack, start_shim,
                                      stop_stack, wait_health)

import box_conventions  # noqa: E402  (bench/measure, on the path grounding_eval sets)

from onepass.kinds import box_geometry  # noqa: E402
from onepass.kinds.box import EDGES  # noqa: E402

YXYX = "idefics3-grounding-yxyx"
OTHER = {VISION_PROFILE: YXYX, YXYX: VISION_PROFILE}  # the convention each is served wrongly in


def named(conv: dict) -> str:
    """box_conventions' name of a convention a profile declares."""
    return next(name for name, c in box_conventions.CONVENTIONS.items() if c == conv)


@pytest.fixture(scope="module")
def yxyx_stack(tmp_path_factory):
    s = serve_stack(tmp_path_factory.mktemp("yxyx-logs"), {"ONEPASS_PROFILE": YXYX})
    yield s
    stop_stack(s)


@contextlib.contextmanager
def declaring(stack, model: str, conv_name: str, tmp_path):
    """A second shim against STACK's vLLM whose profile MODEL declares CONVENTIONS[conv_name]."""
    path = tmp_path / "declared.json"
    box_conventions.write_declared(model, conv_name, path)
    port = free_port()
    shim = start_shim(stack.vllm_url, port, args=("--config", str(path), "--profile", model))
    try:
        wait_health(f"http://127.0.0.1:{port}", {"ok"})
        yield f"http://127.0.0.1:{port}"
    finally:
        shim.terminate()
        shim.wait(timeout=60)


@pytest.fixture(scope="module")
def served(vision_stack, yxyx_stack, solo_scenes, solo_answers, tmp_path_factory):
    """{model: (records through its own profile, records through the other's convention)}, on
    the session's solo_scenes (the vision model's own answers to them are the session's)."""
    out = {}
    for model, stack in ((VISION_PROFILE, vision_stack), (YXYX, yxyx_stack)):
        own = (solo_answers("generate") if model == VISION_PROFILE
               else send(stack.url, solo_scenes, "generate"))
        wrong = named(convention(OTHER[model]))
        with declaring(stack, model, wrong, tmp_path_factory.mktemp("declared")) as url:
            out[model] = own, send(url, solo_scenes, "generate")
    return out


def test_the_two_models_declare_conventions_of_another_order_and_grid():
    """The pair is a real test of order and scale: each reading differs from the other's; and
    both models' evals were recorded on the same scenes (the session's solo_scenes)."""
    a, b = convention(VISION_PROFILE), convention(YXYX)
    assert a["order"] != b["order"] and a["scale"] != b["scale"], (a, b)
    assert recorded(YXYX, "edges")["scenes"] == recorded(VISION_PROFILE, "edges")["scenes"]


@pytest.mark.parametrize("model", [VISION_PROFILE, YXYX])
def test_each_model_keeps_its_box_through_its_own_convention(solo_scenes, served, model):
    """Through the profile it was trained in, the model's generated boxes hold to its recorded
    eval: mean IoU and Acc@0.5 at least the recording's less two standard errors."""
    ids = {item["id"] for item in solo_scenes}
    boxes_hold(recorded(model, "generate")["records"], served[model][0], ids)


@pytest.mark.parametrize("model", [VISION_PROFILE, YXYX])
def test_each_model_loses_its_box_through_the_other_s_convention(solo_scenes, served, model):
    """Through a profile declaring the other model's convention, item by item, the model loses
    at least the IoU its recorded eval of the same items lost less two standard errors, and
    keeps under half of what its own convention finds."""
    ids = {item["id"] for item in solo_scenes}
    doc = recorded(model, "generate-declared")
    assert_read_as(doc["records"], solo_scenes, convention(OTHER[model]))
    then = {r["id"]: r for r in recorded(model, "generate")["records"]}
    was = [then[r["id"]]["iou"] - r["iou"] for r in doc["records"]
           if r["id"] in ids and r["present_true"]]
    floor = bar(was)
    assert floor > 0.1, (model, floor)  # the recorded eval does show the loss
    own, wrong = ({r["id"]: r for r in records} for records in served[model])
    gaps = [own[i]["iou"] - wrong[i]["iou"] for i in sorted(ids) if own[i]["present_true"]]
    assert sum(gaps) / len(gaps) >= floor, (model, gaps, floor)
    kept = [wrong[i]["iou"] for i in ids if wrong[i]["present_true"]]
    found = [own[i]["iou"] for i in ids if own[i]["present_true"]]
    assert sum(kept) < sum(found) / 2, (model, kept, found)


def assert_read_as(records: list, scenes: list, conv: dict) -> None:
    """The recording was made through CONV: each found box is what CONV reads from the numbers
    the model wrote (the answer's box has three decimals)."""
    reading = box_geometry.convention(conv)
    checked = 0
    for item in scenes:
        rec = next(r for r in records if r["id"] == item["id"])
        if not rec["found"] or rec["x_box_raw"] is None:
            continue
        size = (item["width"], item["height"])
        want = box_geometry.to_fractions(rec["x_box_raw"], reading, size,
                                         box_geometry.resized(reading, size))
        assert want is not None, rec
        assert [rec["box"][k] for k in EDGES] == pytest.approx(want, abs=6e-4), (rec, want)
        checked += 1
    assert checked >= len(scenes) // 2, checked

