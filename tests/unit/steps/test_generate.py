"""Stdlib-only tests of the split into calls (onepass/fit.py) and the fold into answers
(onepass/generate.py) with the kinds that plan more than
one read of themselves (box) and the pure pieces box combines with: the split into reads (each
question's first read in place, further reads after), folding the parts into one answer through
the kind's combine (present temperature, convention, confidence, hybrid choice, counts), the
edges' box, the processor's resize for pixel conventions. No vLLM: the reads' answers and generations are
given; what vLLM returns is tested live (tests/live/test_box_live.py).
Run: python3 -S -m unittest tests.unit.steps.test_generate
"""
import math
import types
import unittest
from dataclasses import replace

from onepass.steps import fit, generate
from onepass.decision_model import (Answer, Decision, Effort, Generated, Option,
                                    Outcome, Question)
from tests.support.kind_names import BOX, NOUL, SCORE
from onepass.images.formats import Image
from onepass.kinds import box, box_confidence, box_geometry
from onepass.kinds.base import Job
from onepass.kinds.box_geometry import convention
from onepass.prompt.fitting import Selection
from onepass.steps.record import Record
from onepass.prompt.layout import LabelSet

SETTINGS = {"convention": {"units": "grid", "order": "xyxy", "scale": 1000},
            "confidence": {"a": 2.0, "b": 1.0}, "present_temperature": 2.0}
IMAGE = Image(b"", "png", 640, 480)
PROFILE = types.SimpleNamespace(vision=types.SimpleNamespace(box=SETTINGS),
                                calibration=types.SimpleNamespace(number_confidence=None))
JOB = Job((IMAGE,), PROFILE, types.SimpleNamespace(box_max_tokens=48, number_max_tokens=24),
          LabelSet(score=tuple((str(k), k) for k in range(10))))


def decision(*modes):
    qs = [Question(NOUL, "Red?", (Option("true", None), Option("false", None)))]
    qs += [Question(BOX, f"thing {m}", (), box.Asked(m)) for m in modes]
    return Decision(model="m", state="s", questions=tuple(qs), images=(IMAGE,))


def noul(p_yes):
    return Answer(NOUL, (p_yes, 1 - p_yes), 0.0, 0 if p_yes >= 0.5 else 1, p_yes)


def level(k, n=10, p=1.0):
    """A score answer with mass p on band k, the rest spread evenly."""
    probs = [(1 - p) / (n - 1)] * n
    probs[k] = p
    return Answer(SCORE, tuple(probs), 0.0, k, 0.0)


def outcome(answers, **counts):
    return Outcome(tuple(answers), attention_mode="causal", **{"num_input_tokens": 100, **counts})


class TestSplit(unittest.TestCase):
    def test_present_in_place_edges_after(self):
        """fit.split: each box's place holds its present noul; edges and hybrid append four
        score questions over the bands; generate appends none and plans a generation;
        internal names the parts."""
        d = decision("generate", "edges", "hybrid")
        s = fit.split(Record(decision=d, job=JOB))
        kinds = [q.kind for q in s.reads.questions]
        self.assertEqual(kinds, [NOUL] * 4 + [SCORE] * 8)
        self.assertEqual(s.parts, ((), (), (4, 5, 6, 7), (8, 9, 10, 11)))
        self.assertEqual((s.own, s.position), (4, (0, 1, 2, 3)))
        self.assertEqual([p.generation is not None for p in s.plans], [False, True, False, True])
        self.assertEqual(fit.internal(s), {1, 2, 3} | set(range(4, 12)))
        self.assertIn("thing edges", s.reads.questions[2].instructions)
        self.assertIn("left edge of thing edges", s.reads.questions[4].instructions)
        self.assertEqual([len(q.options) for q in s.reads.questions[4:]], [10] * 8)
        self.assertEqual(s.reads.questions[0], d.questions[0])


class TestFold(unittest.TestCase):
    def test_generate(self):
        """generate.fold: the generated box in fractions, its calibrated confidence from the digit
        tokens' mean log-prob, present through the present temperature, the generation's
        prompt and output tokens counted."""
        d = decision("generate")
        s = fit.split(Record(decision=d, job=JOB))
        tokens = [('{"box": [', 0.0), ("250", -0.5), (", ", 0.0), ("125", -0.5), (", ", 0.0),
                  ("750", -0.5), (", ", 0.0), ("625", -0.5), ("]}", 0.0)]
        gen = {1: Generated('{"box": [250, 125, 750, 625]}', tokens, False, 70)}
        out = generate.fold(replace(s, outcome=outcome([noul(0.9), noul(0.8)])), gen)
        b = out.answers[1].payload
        self.assertEqual((b.left, b.top, b.right, b.bottom), (0.25, 0.125, 0.75, 0.625))
        self.assertEqual((b.found, b.mode, b.logprob), (True, "generate", -0.5))
        self.assertAlmostEqual(b.confidence, 1 / (1 + math.exp(-(2.0 * -0.5 + 1.0))))
        self.assertAlmostEqual(b.present, 1 / (1 + math.exp(-math.log(0.8 / 0.2) / 2.0)))
        self.assertEqual(out.answers[0], noul(0.9))
        self.assertEqual((out.num_input_tokens, out.output_tokens), (170, len(tokens)))

    def test_not_found(self):
        """generate.fold: null, a cut generation, or a box outside the image: not found, the whole
        image at confidence 0, present still answered."""
        d = decision("generate")
        s = fit.split(Record(decision=d, job=JOB))
        for text, cut in (('{"box": null}', False), ('{"box": [1, 2', True),
                          ('{"box": [500, 500, 500, 900]}', False)):
            out = generate.fold(replace(s, outcome=outcome([noul(0.9), noul(0.3)])),
                                {1: Generated(text, [("1", -0.1)], cut, 10)})
            b = out.answers[1].payload
            self.assertEqual((b.found, b.confidence, b.logprob), (False, 0.0, None), text)
            self.assertEqual((b.left, b.top, b.right, b.bottom), box_geometry.WHOLE)
            self.assertLess(b.present, 0.5)

    def test_edges_and_hybrid(self):
        """generate.fold: edges puts each edge at its expected band's centre; hybrid answers the
        box of higher confidence (one map here: the edges' certain bands, feature 0, beat a
        generation at -0.1; a generation at log-prob 0 ties and wins); selections of the
        internal questions are dropped."""
        d = decision("edges", "hybrid")
        s = fit.split(Record(decision=d, job=JOB))
        edge_answers = [level(2), level(1), level(7), level(6)]  # 0.25, 0.15, 0.75, 0.65
        gen_agree = Generated('{"box": [200, 100, 800, 700]}', [("200", -0.1)], False, 5)
        reads = outcome([noul(0.5), noul(0.6), noul(0.6)] + edge_answers * 2,
                        effort=Effort(selections=(types_sel(0), types_sel(1), types_sel(5))))
        out = generate.fold(replace(s, outcome=reads), {2: gen_agree})
        e, h = out.answers[1].payload, out.answers[2].payload
        self.assertEqual(e.mode, "edges")
        for got, want in zip((e.left, e.top, e.right, e.bottom), (0.25, 0.15, 0.75, 0.65)):
            self.assertAlmostEqual(got, want)
        self.assertEqual(e.logprob, 0.0)  # every band certain
        self.assertEqual((h.mode, h.left, h.confidence), ("edges", e.left, e.confidence))
        self.assertEqual([sel.question for sel in out.effort.selections], [0, 1])
        sure = Generated('{"box": [0, 0, 100, 100]}', [("100", 0.0)], False, 5)
        h = generate.fold(replace(s, outcome=reads), {2: sure}).answers[2].payload
        self.assertEqual((h.mode, h.right, h.confidence), ("generate", 0.1, e.confidence))
        null = Generated('{"box": null}', [], False, 5)
        self.assertEqual(generate.fold(replace(s, outcome=reads),
                                       {2: null}).answers[2].payload.mode,
                         "edges")

    def test_each_mode_through_its_own_map(self):
        """generate.fold: with a map per mode, a box's confidence comes from the map of the mode
        that made it, never the other's; hybrid compares the two so mapped."""
        maps = {"generate": {"a": 2.0, "b": 1.0}, "edges": {"a": -1.0, "b": 0.5}}
        job = replace(JOB, profile=types.SimpleNamespace(
            vision=types.SimpleNamespace(box={**SETTINGS, "confidence": maps}),
            calibration=PROFILE.calibration))
        d = decision("edges", "generate", "hybrid")
        s = fit.split(Record(decision=d, job=job))
        edges = [level(2, p=0.5), level(1), level(7), level(6)]  # feature log(0.5) / 4
        gen = Generated('{"box": [0, 0, 100, 100]}', [("0", -0.5), ("100", -0.5)], False, 5)
        reads = outcome([noul(0.5)] * 4 + edges * 2)
        out = generate.fold(replace(s, outcome=reads), {2: gen, 3: gen})
        e, g, h = (a.payload for a in out.answers[1:])
        z = -1.0 * (math.log(0.5) / 4) + 0.5
        self.assertAlmostEqual(e.confidence, 1 / (1 + math.exp(-z)))
        self.assertAlmostEqual(g.confidence, 1 / (1 + math.exp(-(2.0 * -0.5 + 1.0))))
        self.assertEqual((h.mode, h.confidence), ("edges", e.confidence))  # 0.66 over 0.5


def types_sel(i):
    return Selection(i, 10, 20, "bm25")


class TestPieces(unittest.TestCase):
    def test_edges_box_orders_and_feature(self):
        """box.edges_box: reversed edges are put in order; a flat distribution lands at the
        centre with the feature log(1/n)."""
        flat = [0.1] * 10
        fr, feature = box.edges_box([flat, flat, flat, flat])
        self.assertEqual(fr, (0.5, 0.5, 0.5, 0.5))
        self.assertAlmostEqual(feature, math.log(0.1))
        fr, _ = box.edges_box([level(8).probabilities, level(0).probabilities,
                               level(1).probabilities, level(9).probabilities])
        self.assertEqual(fr, (0.15, 0.05, 0.85, 0.95))

    def test_hybrid_answers_the_more_confident_box(self):
        """box_confidence.hybrid: the mode whose box is more confident; generate on a tie or when neither
        found a box; the one that found a box when the other did not."""
        self.assertEqual(box_confidence.hybrid(0.3, 0.8), "edges")
        self.assertEqual(box_confidence.hybrid(0.8, 0.3), "generate")
        self.assertEqual(box_confidence.hybrid(0.5, 0.5), "generate")
        pick = box_confidence.hybrid
        self.assertEqual((pick(None, 0.1), pick(0.1, None), pick(None, None)),
                         ("edges", "generate", "generate"))

    def test_tempered(self):
        """box.tempered: T = 1 and the ends unchanged; T > 1 pulls towards 0.5."""
        self.assertEqual(box.tempered(0.8, 1.0), 0.8)
        self.assertEqual((box.tempered(0.0, 3.0), box.tempered(1.0, 3.0)), (0.0, 1.0))
        self.assertTrue(0.5 < box.tempered(0.8, 2.0) < 0.8)
        self.assertTrue(0.2 < box.tempered(0.2, 2.0) < 0.5)
        # the bias shifts the logit after the temperature: 0.5 -> sigmoid(bias), ends kept
        self.assertAlmostEqual(box.tempered(0.5, 2.0, 1.0), 1 / (1 + math.exp(-1.0)))
        self.assertAlmostEqual(box.tempered(0.8, 0.5, -0.3),
                               1 / (1 + math.exp(-(math.log(4.0) / 0.5 - 0.3))))
        self.assertEqual((box.tempered(0.0, 1.0, 2.0), box.tempered(1.0, 1.0, -2.0)), (0.0, 1.0))
        good = {"convention": {"units": "grid", "order": "xyxy", "scale": 1000},
                "confidence": {"a": 1.0, "b": 0.0}, "present_temperature": 1.0}
        box.check_settings({**good, "present_bias": -2.5})
        for bad in (float("nan"), 101.0, "1"):
            with self.assertRaises(ValueError):
                box.check_settings({**good, "present_bias": bad})

    def test_resized_like_the_processor(self):
        """box_geometry.resized: sides rounded to the factor, then scaled into the pixel
        bounds (values worked by hand from Qwen2-VL's rule); no resize for grid units."""
        conv = convention({"units": "resized_pixels", "order": "xyxy", "resize": {
            "factor": 28, "min_pixels": 3136, "max_pixels": 1003520}})
        self.assertEqual(box_geometry.resized(conv, (640, 480)), (644, 476))
        self.assertEqual(box_geometry.resized(conv, (4000, 3000)), (1148, 840))
        self.assertEqual(box_geometry.resized(conv, (20, 10)), (84, 56))
        grid = convention(SETTINGS["convention"])
        self.assertEqual(box_geometry.resized(grid, (640, 480)), (640, 480))
        for bad in ({"units": "resized_pixels", "order": "xyxy"},
                    {**SETTINGS["convention"], "resize": {"factor": 28, "min_pixels": 1,
                                                          "max_pixels": 2}},
                    {"units": "resized_pixels", "order": "xyxy", "resize": {
                        "factor": 28, "min_pixels": 9, "max_pixels": 2}}):
            with self.assertRaises(ValueError, msg=bad):
                convention(bad)


if __name__ == "__main__":
    unittest.main()
