"""What the live box tests share about a trained grounding model: its recorded eval (written
beside its weights by bench/measure/box_eval.py), the first eval items of the --solo set it was
recorded on, answers sent to a stack, and the bar a live figure must clear (the recorded mean
less two standard errors, for another CPU's rounding)."""
import json
import math
import sys
from pathlib import Path

from tests.support.live_stack import ROOT

sys.path[:0] = [str(ROOT / "bench" / d) for d in ("data", "lib", "measure")]
import box_eval  # noqa: E402
import box_scenes  # noqa: E402

from onepass.profile import load_profile  # noqa: E402

N = 40  # eval items of the --solo set (about 5 s a mode here)


def recorded(model: str, mode: str, scenes: str = "solo") -> dict:
    """The eval box_eval.py recorded for models/MODEL on a set's eval half: the --solo set's
    (`solo-MODE.json`) or the full scenes' (`full-MODE.json`)."""
    path = ROOT / "models" / model / "eval" / f"{scenes}-{mode}.json"
    return json.loads(path.read_text(encoding="utf-8"))


def eval_items(model: str, scenes: str = "solo") -> list:
    """The first N eval items of the set MODEL's edges eval was recorded on, rendered."""
    doc = recorded(model, "edges", scenes)
    seed, n = doc["scenes"]["seed"], doc["scenes"]["n"]
    make = box_scenes.lone if doc["scenes"]["solo"] else box_scenes.make_item
    chosen = [make(seed, i, n) for i in range(n) if box_scenes.split_of(i) == "eval"]
    return [{**item, "image": box_scenes.data_url(box_scenes.render(item))}
            for item in chosen[:N]]


def convention(profile: str) -> dict:
    """The box convention PROFILE declares (vision.box.convention)."""
    return load_profile(str(ROOT / "serve_config.json"), profile)[1].vision.box["convention"]


def send(url: str, chosen: list, mode: str) -> list:
    result = box_eval.run(url, chosen, mode, concurrency=2, desc=mode)
    assert not result["errors"], result["error_samples"]
    return result["records"]


def bar(values: list) -> float:
    """The mean less two standard errors of these per-item values."""
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1))
    return mean - 2 * spread / math.sqrt(len(values))


def per_item(records: list, ids: set, key: str) -> list:
    return [float(r[key]) for r in records if r["id"] in ids and r[key] is not None]


def boxes_hold(then: list, now: list, ids: set) -> None:
    """NOW's mean IoU and Acc@0.5 on the items IDS at least THEN's (the recorded eval of the
    same items) less two standard errors."""
    for key in ("iou", "hit"):
        want = bar(per_item(then, ids, key))
        got = per_item(now, ids, key)
        assert sum(got) / len(got) >= want, (key, sum(got) / len(got), want)
