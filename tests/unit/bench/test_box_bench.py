"""Stdlib-only tests of the box bench (bench/lib/box_metrics.py, box_scenes.py, box_eval.py,
fit_box_calibration.py, box_hybrid_bound.py): IoU and ECE of known cases, the logistic and
temperature fits recovering known parameters, every referring expression picking out exactly
its target, the split, a reply's scoring and its summary per object count, the config write,
the hybrid bound; with Pillow, each drawn shape lies inside its true box.
Run: python3 -S -m unittest tests.unit.bench.test_box_bench
"""
import json
import math
import random
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# bench/ is scripts, not a package
sys.path[:0] = [str(ROOT / "bench" / d) for d in ("data", "lib", "measure", "fit")]
import box_eval  # noqa: E402
import box_hybrid_bound  # noqa: E402
import box_metrics as bm  # noqa: E402
import box_scenes  # noqa: E402
import fit_box_calibration  # noqa: E402

try:
    import PIL  # noqa: F401
    HAVE_PIL = True
except ImportError:
    HAVE_PIL = False

N_ITEMS = 300


def box(l, t, r, b):
    return {"left": l, "top": t, "right": r, "bottom": b}


class TestMetrics(unittest.TestCase):
    def test_iou(self):
        self.assertEqual(bm.iou(box(0, 0, 1, 1), box(0, 0, 1, 1)), 1.0)
        self.assertEqual(bm.iou(box(0, 0, 0.5, 0.5), box(0.5, 0.5, 1, 1)), 0.0)
        self.assertAlmostEqual(bm.iou(box(0, 0, 0.5, 1), box(0.25, 0, 0.75, 1)), 1 / 3)
        self.assertAlmostEqual(bm.iou(bm.WHOLE, box(0, 0, 0.5, 0.5)), 0.25)
        self.assertEqual(bm.iou(box(0.3, 0.3, 0.3, 0.3), box(0.3, 0.3, 0.3, 0.3)), 0.0)

    def test_ece(self):
        # bin 1: mean 0.15, rate 0.5; bin 8: mean 0.85, rate 1 -> 0.5*0.35 + 0.5*0.15
        self.assertAlmostEqual(bm.ece([0.15, 0.15, 0.85, 0.85], [0, 1, 1, 1]), 0.25)
        self.assertAlmostEqual(bm.ece([1.0, 1.0, 0.0], [True, True, False]), 0.0)  # 1.0: last bin
        self.assertIsNone(bm.ece([], []))
        bins = bm.reliability([0.05, 0.95, 1.0], [0, 1, 1])
        self.assertEqual([b["n"] for b in bins], [1] + [0] * 8 + [2])

    def test_auc_ranks_whatever_the_threshold(self):
        """Every positive above every negative: 1, even when all are above 0.5; reversed: 0;
        ties count half; one kind alone: None."""
        self.assertEqual(bm.auc([0.6, 0.7, 0.51], [1, 1, 0]), 1.0)
        self.assertEqual(bm.auc([0.2, 0.9], [True, False]), 0.0)
        self.assertEqual(bm.auc([0.5, 0.5, 0.7], [1, 0, 0]), 0.25)
        self.assertIsNone(bm.auc([0.3, 0.4], [1, 1]))

    def test_percentile(self):
        self.assertEqual(bm.percentile([3, 1, 2], 50), 2)
        self.assertAlmostEqual(bm.percentile([0, 10], 95), 9.5)
        self.assertIsNone(bm.percentile([], 50))

    def test_logistic_fit_recovers_known_a_b(self):
        rng = random.Random(7)
        xs = [rng.uniform(-3.0, 1.0) for _ in range(6000)]
        ys = [rng.random() < bm.sigmoid(2.0 * x + 0.5) for x in xs]
        a, b, note = bm.fit_logistic(xs, ys)
        self.assertAlmostEqual(a, 2.0, delta=0.2)
        self.assertAlmostEqual(b, 0.5, delta=0.2)
        self.assertEqual(note, "")

    def test_logistic_fit_degenerate(self):
        a, b, note = bm.fit_logistic([-1.0, -0.5, -2.0], [True, True, True])
        self.assertEqual(a, 0.0)
        self.assertAlmostEqual(bm.sigmoid(b), 3.5 / 4)
        self.assertIn("all hits", note)
        self.assertEqual(bm.fit_logistic([], [])[:2], (1.0, 0.0))
        a, b, _ = bm.fit_logistic([-1.0, -1.0, -2.0, -2.0], [True, False, True, False])  # flat x
        self.assertTrue(math.isfinite(a) and math.isfinite(b))
        self.assertAlmostEqual(bm.sigmoid(a * -1.5 + b), 0.5, delta=0.01)

    def test_temperature_fit_recovers_known_t(self):
        rng = random.Random(11)
        raws = [rng.gauss(0.0, 4.0) for _ in range(5000)]
        ys = [rng.random() < bm.sigmoid(z / 3.0) for z in raws]
        t, note = bm.fit_temperature(raws, ys)
        self.assertAlmostEqual(t, 3.0, delta=0.3)
        self.assertEqual(note, "")
        self.assertEqual(bm.fit_temperature([0.0, 0.0], [True, False])[0], None)

    def test_auc_se_is_hanley_and_mcneil_s(self):
        # AUC 0.5 on 10 and 10: q1 = q2 = 1/3, variance (0.25 + 2 * 9 * (1/3 - 0.25)) / 100
        self.assertAlmostEqual(bm.auc_se(0.5, 10, 10), math.sqrt(0.0175))
        self.assertLess(bm.auc_se(0.9, 40, 40), bm.auc_se(0.9, 10, 10))
        self.assertLess(bm.auc_se(0.95, 20, 20), bm.auc_se(0.5, 20, 20))

    def test_present_fit_recovers_known_t_and_bias(self):
        """fit_box_calibration.present_fit: T and bias of sigmoid(raw / T + bias) from reads
        drawn so; present_data recovers each read's logit through the served T and bias."""
        rng = random.Random(12)
        raws = [rng.gauss(0.0, 4.0) for _ in range(5000)]
        ys = [rng.random() < bm.sigmoid(z / 2.0 - 1.5) for z in raws]
        t, bias, _ = fit_box_calibration.present_fit(raws, ys)
        self.assertAlmostEqual(t, 2.0, delta=0.2)
        self.assertAlmostEqual(bias, -1.5, delta=0.15)
        served = [{"present": bm.sigmoid(z / 2.0 - 1.5), "present_true": y}
                  for z, y in zip(raws[:5], ys)]
        back, _, _ = fit_box_calibration.present_data(served, 2.0, -1.5)
        for got, want in zip(back, raws):
            self.assertAlmostEqual(got, want, places=6)


class TestScenes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.items = [box_scenes.make_item(3, i, N_ITEMS) for i in range(N_ITEMS)]

    def test_expression_is_unique_and_names_the_target(self):
        for item in self.items:
            objects, expr = item["objects"], item["expression"]
            self.assertEqual(item["instructions"], box_scenes.describe(expr))
            self.assertTrue(1 <= len(objects) <= 5, item["id"])
            if item["present"]:
                self.assertEqual(box_scenes.resolve(expr, objects), [item["target"]], item["id"])
            else:
                self.assertEqual(box_scenes.resolve(expr, objects), [], item["id"])
                self.assertIsNone(item["box"])

    def test_targets_have_distractors_and_some_items_are_absent(self):
        absent = sum(not it["present"] for it in self.items)
        self.assertTrue(0.1 * N_ITEMS < absent < 0.3 * N_ITEMS, absent)
        with_distractor = 0
        for it in (it for it in self.items if it["present"]):
            target = it["objects"][it["target"]]
            with_distractor += any(o is not target and (o["shape"] == target["shape"]
                                                        or o["colour"] == target["colour"])
                                   for o in it["objects"])
        self.assertGreater(with_distractor, 0.95 * (N_ITEMS - absent))

    def test_box_is_the_target_in_fractions(self):
        for item in (it for it in self.items if it["present"]):
            l, t, r, b = item["objects"][item["target"]]["px"]
            self.assertEqual(item["box"], box(l / item["width"], t / item["height"],
                                              r / item["width"], b / item["height"]))
            self.assertTrue(0 <= item["box"]["left"] < item["box"]["right"] <= 1)
            self.assertTrue(0 <= item["box"]["top"] < item["box"]["bottom"] <= 1)

    def test_deterministic(self):
        self.assertEqual(box_scenes.make_item(3, 17, N_ITEMS), self.items[17])
        self.assertNotEqual(box_scenes.make_item(4, 17, N_ITEMS)["objects"],
                            self.items[17]["objects"])

    def test_split_is_deterministic_and_disjoint(self):
        fit, ev = (box_scenes.select(self.items, part) for part in ("fit", "eval"))
        ids = [{it["id"] for it in part} for part in (fit, ev)]
        self.assertFalse(ids[0] & ids[1])
        self.assertEqual(ids[0] | ids[1], {it["id"] for it in self.items})
        self.assertEqual(len(fit), len(ev))
        self.assertEqual(fit, box_scenes.select(self.items, "fit"))
        self.assertTrue(all(it["split"] == "fit" for it in fit))
        self.assertEqual(len(box_scenes.select(self.items, "eval", 5)), 5)

    def test_the_solo_set_keeps_each_target_alone_and_says_so(self):
        for item in self.items:
            lone = box_scenes.lone(3, item["index"], N_ITEMS)
            self.assertEqual((lone["id"], lone["box"], lone["present"], lone["split"]),
                             (item["id"] + "-solo", item["box"], item["present"], item["split"]))
            if item["present"]:
                self.assertEqual(lone["objects"], [item["objects"][item["target"]]])
                self.assertEqual(box_scenes.resolve(lone["expression"], lone["objects"]), [0])
            else:  # a near miss: one of its objects, not the one named
                self.assertEqual(len(lone["objects"]), 1)
                self.assertIn(lone["objects"][0], item["objects"])
                self.assertEqual(box_scenes.resolve(lone["expression"], lone["objects"]), [])
            self.assertEqual(box_scenes.command(lone), f"bench/data/box_scenes.py --seed 3 --n "
                             f"{N_ITEMS} --solo")
        self.assertEqual(box_scenes.command(self.items[0]),
                         f"bench/data/box_scenes.py --seed 3 --n {N_ITEMS}")

    @unittest.skipUnless(HAVE_PIL, "Pillow is not installed")
    def test_drawn_pixels_lie_in_the_true_box(self):
        from PIL import Image, ImageDraw
        for item in self.items[:80]:
            self.assertEqual(box_scenes.render(item).size, (item["width"], item["height"]))
            for obj in item["objects"]:
                canvas = Image.new("RGB", (item["width"], item["height"]), "black")
                box_scenes.draw_object(ImageDraw.Draw(canvas), obj)
                drawn = canvas.getbbox()  # (left, top, right, bottom), right/bottom exclusive
                l, t, r, b = obj["px"]
                self.assertTrue(l <= drawn[0] and t <= drawn[1] and drawn[2] <= r and drawn[3] <= b,
                                (item["id"], obj["shape"], drawn, obj["px"]))
                self.assertLessEqual(max(drawn[0] - l, drawn[1] - t, r - drawn[2], b - drawn[3]), 1)


class TestEvalAndFitTools(unittest.TestCase):
    ITEM = {"id": "x", "split": "eval", "present": True, "box": box(0, 0, 0.5, 0.5)}

    def test_score_and_summary(self):
        answer = {"type": "box", "box": box(0, 0, 0.5, 0.5), "found": True, "confidence": 0.9,
                  "present": 0.8, "x_box_logprob": -0.1}
        hit, _ = box_eval.score(self.ITEM, 200, {"answers": {"q": answer}}, 0.1)
        lost = {**answer, "found": False, "box": bm.WHOLE, "confidence": 0, "x_box_logprob": None}
        miss, _ = box_eval.score(self.ITEM, 200, {"answers": {"q": lost}}, 0.3)
        fail, why = box_eval.score(self.ITEM, 503, {"error": "x"}, 0.2)
        self.assertEqual((hit["iou"], hit["hit"]), (1.0, True))
        self.assertAlmostEqual(miss["iou"], 0.25)  # not found scores the whole image
        self.assertEqual(why, "HTTP 503")
        s = box_eval.summary([hit, miss, fail])
        self.assertEqual((s["n"], s["answered"], s["non_200"]), (3, 2, 1))
        self.assertAlmostEqual(s["mean_iou"], 0.625)
        self.assertEqual(s["acc_at_0.5"], 0.5)
        self.assertEqual(s["found_rate"], 0.5)
        self.assertEqual(s["present_accuracy"], 1.0)
        self.assertEqual(s["by_objects"], {})  # one count (ITEM has none): no breakdown

    def test_summary_splits_the_boxes_by_the_scenes_object_count(self):
        answer = {"type": "box", "box": box(0, 0, 0.5, 0.5), "found": True, "confidence": 0.9,
                  "present": 0.8}
        one = {**self.ITEM, "objects": [{}]}
        three = {**one, "objects": [{}, {}, {}]}
        wrong = {**answer, "box": box(0.5, 0.5, 1, 1)}
        records = [box_eval.score(item, 200, {"answers": {"q": a}}, 0.1)[0]
                   for item, a in ((one, answer), (three, answer), (three, wrong),
                                   ({**three, "present": False, "box": None}, answer))]
        rows = box_eval.summary(records)["by_objects"]
        self.assertEqual(sorted(rows), [1, 3])  # the absent item has no box to score
        self.assertEqual((rows[1]["n"], rows[1]["acc_at_0.5"]), (1, 1.0))
        self.assertEqual((rows[3]["n"], rows[3]["acc_at_0.5"], rows[3]["mean_iou"]),
                         (2, 0.5, 0.5))
        self.assertIn("3 objects in the scene: n 2, mean IoU 0.500, Acc@0.5 0.500",
                      box_eval.format_table(box_eval.summary(records)))

    def test_the_hybrid_bound_pairs_items_and_replays_the_rule(self):
        """box_hybrid_bound: items scored in both runs only; the rule answers the more
        confident box (generate's on a tie, edges' when generate found none); the oracle the
        better one, so it is never below either mode."""
        def rec(i, iou, conf, found=True):
            return {"id": i, "iou": iou, "confidence": conf, "found": found}
        edges = [rec("a", 0.9, 0.8), rec("b", 0.2, 0.3), rec("c", 0.6, 0.5), rec("d", 0.7, 0.9),
                 {"id": "absent", "iou": None, "confidence": 0.1, "found": True}]
        generated = [rec("a", 0.4, 0.1), rec("b", 0.7, 0.6), rec("c", 0.1, 0.5, False),
                     rec("d", 0.95, 0.2), rec("e", 1.0, 1.0)]
        pairs = box_hybrid_bound.paired(edges, generated)
        self.assertEqual([e["id"] for e, _ in pairs], ["a", "b", "c", "d"])
        got = box_hybrid_bound.picks(pairs)
        for name, (iou, acc) in (("edges", (2.4, 3)), ("generate", (2.15, 2)),
                                 ("hybrid rule", (2.9, 4)),  # a, b's generated, c, d
                                 ("oracle (better of the two)", (3.15, 4))):  # d's generated
            self.assertAlmostEqual(got[name][0], iou / 4, msg=name)
            self.assertEqual(got[name][1], acc / 4, name)
        self.assertEqual(box_hybrid_bound.picks([]), {})

    def test_confidence_data_reads_what_the_server_reads(self):
        """confidence_data: the records' found boxes of one mode on present items; with
        log_area each feature is the log of the record's box area, as map_input serves it."""
        box = {"left": 0.1, "top": 0.2, "right": 0.5, "bottom": 0.4}
        records = [{"present_true": True, "found": True, "hit": True, "x_box_mode": "edges",
                    "x_box_logprob": -0.3, "box": box, "confidence": 0.7},
                   {"present_true": True, "found": True, "hit": False, "x_box_mode": "generate",
                    "x_box_logprob": -1.0, "box": box, "confidence": 0.2},
                   {"present_true": False, "found": True, "hit": None, "x_box_mode": "edges",
                    "x_box_logprob": -0.1, "box": box, "confidence": 0.9}]
        self.assertEqual(fit_box_calibration.confidence_data(records, "edges"),
                         ([-0.3], [True], [0.7]))
        xs, hits, _ = fit_box_calibration.confidence_data(records, "edges", "log_area")
        self.assertAlmostEqual(xs[0], math.log(0.4 * 0.2))
        self.assertEqual(hits, [True])

    def test_write_config_keeps_the_rest(self):
        original = (ROOT / "serve_config.json").read_text(encoding="utf-8")
        profile = next(name for name, p in json.loads(original)["profiles"].items()
                       if (p.get("vision") or {}).get("box"))
        fitted = {"by": "bench/fit/fit_box_calibration.py", "n": 2, "split": "fit",
                  "data": "bench/data/box_scenes.py --seed 0 --n 4", "date": "2026-01-01"}
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "serve_config.json"
            path.write_text(original, encoding="utf-8")
            fit_box_calibration.write_config(
                path, profile, {"generate": (1.5, -0.25, "logprob"),
                                "edges": (-1.0, 0.5, "log_area")}, 2.0, fitted, -0.75)
            after = json.loads(path.read_text(encoding="utf-8"))
            self.assertEqual(path.read_text(encoding="utf-8"),
                             json.dumps(after, indent=2, ensure_ascii=False) + "\n")
        new_box = after["profiles"][profile]["vision"]["box"]
        self.assertEqual(new_box["confidence"], {"generate": {"a": 1.5, "b": -0.25},
                                                 "edges": {"a": -1.0, "b": 0.5,
                                                           "feature": "log_area"}})
        self.assertEqual((new_box["present_temperature"], new_box["present_bias"],
                          new_box["fitted"]), (2.0, -0.75, fitted))
        before = json.loads(original)
        before["profiles"][profile]["vision"]["box"] = new_box
        self.assertEqual(before, after)  # nothing else moved


if __name__ == "__main__":
    unittest.main()
