"""Stdlib-only tests of the grounding model's pure parts: the curriculum's solo and crowded
scenes (bench/data/box_scenes.py solo, tools/models/grounding_curriculum.py crowd), the dense
per-token targets (tools/models/grounding_targets.py cell_targets, asked_targets) and reading
written numbers through every convention (bench/measure/box_conventions.py compare).
Run: python3 -S -m unittest tests.unit.bench.test_box_grounding
"""
import random
import sys
import tempfile
import unittest
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "bench" / d) for d in ("data", "lib", "measure")]
sys.path.insert(0, str(ROOT / "tools" / "models"))
import box_conventions  # noqa: E402
import box_scenes  # noqa: E402
import grounding_curriculum  # noqa: E402
import grounding_prompts  # noqa: E402
import grounding_targets as gt  # noqa: E402
from onepass.kinds import box  # noqa: E402
from onepass.profile import load_profile  # noqa: E402
from tests.support.venv_only import NO_TORCH, installed  # noqa: E402


def present_item(index=0):
    i = index
    while True:
        item = box_scenes.make_item(7, i, 0)
        if item["present"]:
            return item
        i += 1


class EdgeOfTest(unittest.TestCase):
    def test_reads_back_the_edge_each_served_read_asks(self):
        # the training examples pair each edge read with its band by these words, so they must
        # follow what onepass asks (onepass/kinds/box.py), even when the target names an edge
        q = box_scenes.make_item(7, 0, 0)
        for instructions in (q["instructions"], "the square at the left edge"):
            asked = box.edge_questions(Question(instructions), 10)
            got = [grounding_prompts.edge_of([{"role": "user", "content": [
                {"type": "text", "text": "Question: " + one.instructions}]}]) for one in asked]
            self.assertEqual(got, list(grounding_prompts.EDGE_FIELDS))


class Question:
    """The one field box.edge_questions reads."""

    def __init__(self, instructions):
        self.instructions = instructions


class SoloTest(unittest.TestCase):
    def test_keeps_the_target_alone_and_names_it(self):
        rng, absent, near, one = random.Random(0), 0, 0, 0
        for i in range(80):
            item = box_scenes.make_item(3, i, 0)
            solo = box_scenes.solo(item, rng)
            if not item["present"]:  # one of its objects, which the words do not name
                absent += 1
                self.assertEqual(len(solo["objects"]), 1)
                self.assertIn(solo["objects"][0], item["objects"])
                self.assertEqual(box_scenes.resolve(solo["expression"], solo["objects"]), [])
                self.assertEqual((solo["box"], solo["present"]), (None, False))
                words = solo["expression"]
                self.assertEqual(solo["instructions"], box_scenes.describe(words))
                self.assertTrue(words.items() <= item["expression"].items())
                if len(words) == 1:  # named by one word: its object is not of it
                    one += 1
                    continue
                named = item["expression"]
                shares = [o["colour"] == named["colour"] or o["shape"] == named["shape"]
                          for o in item["objects"] + solo["objects"]]
                self.assertEqual(shares[-1], any(shares[:-1]))  # a near miss, where there is one
                near += shares[-1]
                continue
            target = item["objects"][item["target"]]
            self.assertEqual(solo["objects"], [target])
            self.assertEqual(solo["box"], item["box"])
            self.assertEqual(box_scenes.resolve(solo["expression"], solo["objects"]), [0])
            self.assertTrue(solo["instructions"].startswith("the "))
        self.assertGreater(absent, 8)
        # named by one word most often (two forms in three), as present items are, and by both
        self.assertTrue(absent // 3 < one < absent, (one, absent))
        self.assertGreater(near, 0)  # each two-word one is a near miss where it can be (above)

    def test_a_crowd_keeps_the_target_its_words_pick_out_and_so_many_others(self):
        rng, kept_relation, shrunk, unlike, absent = random.Random(0), 0, 0, 0, 0
        for i in range(60):
            item = box_scenes.make_item(3, i, 0)
            for stage, (others, distinct) in enumerate(grounding_curriculum.CROWD_STAGES):
                out = grounding_curriculum.crowd(item, stage, rng)
                if not item["present"]:  # as many objects as a present item of the stage
                    self.assertEqual(len(out["objects"]), min(others + 1, len(item["objects"])))
                    self.assertTrue(all(o in item["objects"] for o in out["objects"]))
                    self.assertEqual(box_scenes.resolve(out["expression"], out["objects"]), [])
                    absent += 1
                    continue
                if others >= len(item["objects"]) - 1 and not distinct:
                    self.assertIs(out, item)
                    continue
                self.assertLessEqual(len(out["objects"]), others + 1)
                target = out["objects"][out["target"]]
                self.assertEqual(target, item["objects"][item["target"]])
                self.assertEqual(out["box"], item["box"])
                self.assertEqual(box_scenes.resolve(out["expression"], out["objects"]),
                                 [out["target"]])
                rest = [o for k, o in enumerate(out["objects"]) if k != out["target"]]
                if distinct:  # the first crowded stage: only others unlike it in both
                    self.assertTrue(all(o["colour"] != target["colour"]
                                        and o["shape"] != target["shape"] for o in rest))
                    unlike += len(rest)
                shrunk += 1
                kept_relation += others > 0 and "relation" in out["expression"]
        self.assertGreater(shrunk, 40)
        self.assertGreater(unlike, 10)  # the unlike stage does keep another object, not just solo
        self.assertGreater(kept_relation, 0)  # an anchor can be kept, not always lone
        self.assertGreater(absent, 10)


    def test_mixed_stages_keep_the_lone_share_and_every_crowd_up_to_the_held_one(self):
        rng, held = random.Random(5), len(grounding_curriculum.CROWD_STAGES) - 1
        stages = [grounding_curriculum.mixed_stage(held, 0.4, rng) for _ in range(3000)]
        self.assertTrue(0.36 < stages.count(0) / 3000 < 0.44, stages.count(0))
        crowded = [stages.count(k) for k in range(1, held + 1)]
        self.assertEqual(sum(crowded), 3000 - stages.count(0))  # none past the held stage
        self.assertTrue(min(crowded) > 0.8 * sum(crowded) / held, crowded)  # drawn evenly
        self.assertEqual({grounding_curriculum.mixed_stage(0, 0.0, rng) for _ in range(50)}, {0})
        self.assertEqual({grounding_curriculum.mixed_stage(2, 1.0, rng) for _ in range(50)}, {0})
        self.assertEqual({grounding_curriculum.mixed_stage(2, 0.0, rng) for _ in range(200)},
                         {1, 2})

    def test_a_misnamed_scene_keeps_its_image_and_names_nothing_in_it(self):
        """grounding_curriculum.misnamed: the same objects, words that resolve to none of them
        (so `present` is truly No), named by one word or two as box_scenes names targets; None
        only when another object answers to the words."""
        rng, forms, made = random.Random(3), set(), 0
        for i in range(300):
            item = box_scenes.make_item(7, i, 0)
            if not item["present"]:
                continue
            for scene in (item, box_scenes.solo(item, rng)):
                out = grounding_curriculum.misnamed(scene, rng)
                if out is None:
                    continue
                made += 1
                self.assertEqual(out["objects"], scene["objects"])
                self.assertEqual((out["present"], out["target"], out["box"]), (False, None, None))
                self.assertEqual(box_scenes.resolve(out["expression"], out["objects"]), [])
                self.assertEqual(out["instructions"], box_scenes.describe(out["expression"]))
                forms.add(tuple(sorted(out["expression"])))
        self.assertGreater(made, 300)
        self.assertEqual(forms, {("colour",), ("shape",), ("colour", "shape")})


class ReadTargetsTest(unittest.TestCase):
    def test_the_read_targets_name_the_words_and_what_is_seen(self):
        """read_targets: the named colour and shape (0: not named), then one flag per colour and
        per shape in the image, in grounding_targets' order."""
        objects = [{"colour": "blue", "shape": "star"}, {"colour": "red", "shape": "star"}]
        got = gt.read_targets({"expression": {"colour": "green"}, "objects": objects})
        self.assertEqual(len(got), len(gt.READ))
        self.assertEqual(got[:2], [1 + gt.COLOURS.index("green"), 0])
        self.assertEqual(got[2:7], [int(c in ("blue", "red")) for c in gt.COLOURS])
        self.assertEqual(got[7:], [int(s == "star") for s in gt.SHAPES])
        got = gt.read_targets({"expression": {"shape": "star", "superlative": "largest"},
                               "objects": objects})
        self.assertEqual(got[:2], [0, 1 + gt.SHAPES.index("star")])

    def test_heads_a_run_did_not_ship_keep_their_start(self):
        """load_heads: each shipped head is loaded; one the run did not ship stays as seeded."""
        if not installed("torch"):
            self.skipTest(NO_TORCH)
        import torch
        heads = [torch.nn.Linear(3, 2), torch.nn.Linear(3, 4)]
        shipped = gt.head_tensors([torch.nn.Linear(3, 2)])
        before = heads[1].weight.detach().clone()
        gt.load_heads(heads, shipped)
        self.assertTrue(torch.equal(heads[0].weight, shipped["0.weight"]))
        self.assertTrue(torch.equal(heads[1].weight, before))


class CellTargetsTest(unittest.TestCase):

    def test_a_known_square(self):
        """A 256 x 192 image (stretched to the 128 x 128 view): a square at px [64, 32, 128, 96)
        is [32, 21.3, 64, 64) in the view, so it covers cells x 1, y 0-1; its edges are 0.25,
        0.1666, 0.5, 0.5 of the image."""
        obj = {"colour": "blue", "shape": "square", "size": "large", "px": [64, 32, 128, 96]}
        rows = gt.cell_targets({"width": 256, "height": 192, "objects": [obj]})
        self.assertEqual(len(rows), gt.CELLS ** 2)
        covered = [k for k, r in enumerate(rows) if r[0]]
        self.assertEqual(covered, [1, 5])
        self.assertEqual(rows[1], [3, 2, 2, 2, 5, 1, 6, 5, 0, 5, 0])
        self.assertEqual(rows[0], [0, 0, 0] + [gt.IGNORE] * 8)
        self.assertEqual(len(rows[1]), len(gt.GROUPS))

    def test_the_larger_overlap_wins_a_cell(self):
        small = {"colour": "red", "shape": "circle", "size": "small", "px": [0, 0, 8, 8]}
        big = {"colour": "green", "shape": "star", "size": "large", "px": [20, 0, 128, 128]}
        rows = gt.cell_targets({"width": 128, "height": 128, "objects": [small, big]})
        self.assertEqual(rows[0][:3], [2, 4, 2])  # cell 0: 12 x 32 px of green against 8 x 8

    def test_a_tall_image_is_stretched_not_padded(self):
        """192 x 256: an object in the bottom quarter lies in the view's bottom row of cells
        (with padding to the longest edge it would have been in the third)."""
        obj = {"colour": "red", "shape": "circle", "size": "small", "px": [0, 200, 40, 250]}
        rows = gt.cell_targets({"width": 192, "height": 256, "objects": [obj]})
        self.assertEqual([k for k, r in enumerate(rows) if r[0]], [12])

    def test_every_scene_object_is_under_some_cell(self):
        for i in range(30):
            item = box_scenes.make_item(5, i, 0)
            rows = gt.cell_targets(item)
            named = {(r[0], r[1], r[2]) for r in rows if r[0]}
            self.assertLessEqual(len(named), len(item["objects"]))
            self.assertGreaterEqual(len(named), 1)

    def test_the_asked_targets_mark_the_target_and_its_asked_edge(self):
        """The target's cells are 1 and carry the asked edge's tenth; a distractor's cells and
        empty cells are 0 with the tenth ignored; an absent target marks no cell."""
        target = {"colour": "blue", "shape": "square", "size": "large", "px": [64, 32, 128, 96]}
        other = {"colour": "red", "shape": "circle", "size": "small", "px": [0, 160, 30, 190]}
        item = {"width": 256, "height": 192, "objects": [other, target], "target": 1,
                "present": True, "box": {"left": 0.25, "top": 32 / 192, "right": 0.5,
                                         "bottom": 0.5}}
        for edge, tenth in (("left", 2), ("top", 1), ("right", 5), ("bottom", 5)):
            rows = gt.asked_targets(item, edge)
            self.assertEqual([k for k, r in enumerate(rows) if r[0]], [1, 5])
            self.assertEqual({tuple(rows[k]) for k in (1, 5)}, {(1, tenth)})
            self.assertEqual(rows[12], [0, gt.IGNORE])  # the distractor's cell
            self.assertEqual(rows[0], [0, gt.IGNORE])
        self.assertEqual({tuple(r[1:]) for r in gt.asked_targets(item, None)}, {(gt.IGNORE,)})
        absent = {**item, "target": None, "present": False, "box": None}
        self.assertEqual({tuple(r) for r in gt.asked_targets(absent, "left")}, {(0, gt.IGNORE)})
        self.assertEqual(len(gt.ASKED), len(rows[0]))


class SoftBandsTest(unittest.TestCase):
    def test_the_expected_centre_is_the_edge(self):
        """soft_bands: at most two neighbouring bands, weights summing to 1, and the expected
        band centre (what onepass reads, kinds/box.py edges_box) the edge itself, except within
        half a band of a border, where the border band holds it all."""
        for levels in (10, 7):
            for k in range(0, 1001):
                f = k / 1000
                bands = gt.soft_bands(f, levels)
                self.assertAlmostEqual(sum(w for _, w in bands), 1.0)
                self.assertLessEqual(len(bands), 2)
                if len(bands) == 2:
                    self.assertEqual(bands[1][0], bands[0][0] + 1)
                centre = sum((b + 0.5) / levels * w for b, w in bands)
                self.assertAlmostEqual(centre, min(max(f, 0.5 / levels), 1 - 0.5 / levels))
                self.assertIn(gt.band(f, levels), [b for b, _ in bands])


class ConventionsTest(unittest.TestCase):
    def test_the_right_convention_keeps_a_box_and_wrong_ones_lose_it(self):
        item = present_item()
        b = item["box"]
        raw = [round(b["left"] * 1000), round(b["top"] * 1000), round(b["right"] * 1000),
               round(b["bottom"] * 1000)]
        records = [{"id": item["id"], "x_box_raw": raw}, {"id": item["id"], "x_box_raw": None}]
        rows = box_conventions.compare(records, {item["id"]: item}, box_conventions.CONVENTIONS[
            "grid 1000 xyxy"])
        self.assertEqual(rows["own"]["n"], 1)  # a generation that wrote null is not read
        self.assertGreater(rows["own"]["mean_iou"], 0.95)
        self.assertAlmostEqual(rows["grid 1000 xyxy"]["gap"], 0.0)
        self.assertLess(rows["original pixels xyxy"]["mean_iou"], rows["own"]["mean_iou"])
        self.assertLess(rows["original pixels xyxy"]["mean_iou"], 0.05)
        near = rows["grid 1024 xyxy"]["mean_iou"]  # 2.4 % off in scale: a near miss
        self.assertTrue(0.2 < near < rows["own"]["mean_iou"], near)

    def test_a_declared_convention_changes_the_profile_s_convention_alone(self):
        # the live conventions test serves a model through a profile file made this way
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "declared.json"
            box_conventions.write_declared("idefics3-grounding", "grid 1024 yxyx", path)
            _, got = load_profile(str(path), "idefics3-grounding")
        _, was = load_profile(str(ROOT / "serve_config.json"), "idefics3-grounding")
        self.assertEqual(got.vision.box["convention"],
                         box_conventions.CONVENTIONS["grid 1024 yxyx"])
        self.assertNotEqual(was.vision.box["convention"], got.vision.box["convention"])
        self.assertEqual(replace(got, vision=None), replace(was, vision=None))
        self.assertEqual({k: v for k, v in got.vision.box.items() if k != "convention"},
                         {k: v for k, v in was.vision.box.items() if k != "convention"})


if __name__ == "__main__":
    unittest.main()
