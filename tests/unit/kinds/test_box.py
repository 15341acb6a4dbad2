"""Stdlib-only tests of the box kind: each convention converts a known box to fractions of the
original image; the answer's found/confidence rules; the generation's reading and confidence
map; the box question on /v1/systemone, its refusals there and on /v1/decisions.
Run: python3 -S -m unittest tests.unit.kinds.test_box
"""
import base64
import json
import math
import types
import unittest
from dataclasses import replace

from onepass.api import Limits, decisions, systemone
from onepass.backend.warmup import png
from onepass.decision_model import Question
from tests.support.kind_names import BOX
from onepass.errors import InvalidRequest
from onepass.kinds import box, box_confidence, box_geometry
from onepass.kinds.base import Limit
from onepass.kinds.box_geometry import Convention, convention, to_fractions
from onepass.profile import load_profile
from tests.support.paths import ROOT

# The known box, exact in binary so equality is exact: left, top, right, bottom.
KNOWN = (0.25, 0.125, 0.75, 0.625)
ORIGINAL, RESIZED = (640, 480), (300, 200)  # the resize stretches: the aspect changes
SERVED = Limits(max_options=255, max_questions=400, kinds={BOX: Limit(most=2)})
IMAGE = "data:image/png;base64," + base64.b64encode(png(4, 3, (200, 30, 30))).decode()


class TestConventions(unittest.TestCase):
    def test_each_convention_gives_the_known_box(self):
        """box_geometry: the same box written in every convention reads back as KNOWN."""
        cases = [
            ({"units": "grid", "order": "xyxy", "scale": 1000}, [250, 125, 750, 625]),
            ({"units": "grid", "order": "yxyx", "scale": 1024}, [128, 256, 640, 768]),
            ({"units": "grid", "order": "xyxy", "scale": 1024}, [256, 128, 768, 640]),
            ({"units": "resized_pixels", "order": "xyxy", "resize": {"factor": 28, "min_pixels": 3136, "max_pixels": 12845056}}, [75, 25, 225, 125]),
            ({"units": "resized_pixels", "order": "yxyx", "resize": {"factor": 28, "min_pixels": 3136, "max_pixels": 12845056}}, [25, 75, 125, 225]),
            ({"units": "original_pixels", "order": "xyxy"}, [160, 60, 480, 300]),
        ]
        for raw_conv, raw in cases:
            with self.subTest(raw_conv):
                self.assertEqual(to_fractions(raw, convention(raw_conv), ORIGINAL, RESIZED), KNOWN)

    def test_order_and_units_matter(self):
        """box_geometry: the same numbers under another order or unit give another box."""
        raw = [75, 25, 225, 125]
        xy = to_fractions(raw, Convention("resized_pixels", "xyxy"), ORIGINAL, RESIZED)
        yx = to_fractions(raw, Convention("resized_pixels", "yxyx"), ORIGINAL, RESIZED)
        orig = to_fractions(raw, Convention("original_pixels", "xyxy"), ORIGINAL, RESIZED)
        self.assertEqual(len({xy, yx, orig}), 3)
        self.assertEqual(yx, (25 / 300, 75 / 200, 125 / 300, 1.0))  # 225 of 200 rows: clipped

    def test_clipped_reordered_or_nothing(self):
        """box_geometry: edges past the image are clipped, reversed edges put in order, and a
        box with nothing inside the image (or not four finite numbers) is None."""
        grid = Convention("grid", "xyxy", 1000)
        self.assertEqual(to_fractions([-50, 125, 1200, 625], grid, ORIGINAL, RESIZED),
                         (0.0, 0.125, 1.0, 0.625))
        self.assertEqual(to_fractions([750, 625, 250, 125], grid, ORIGINAL, RESIZED), KNOWN)
        for raw in ([1100, 0, 1200, 100], [500, 100, 500, 600], [1, 2, 3], [1, 2, 3, math.nan],
                    [True, 0, 1, 1], "0,0,1,1", None):
            self.assertIsNone(to_fractions(raw, grid, ORIGINAL, RESIZED), raw)
        self.assertIsNone(to_fractions([1, 1, 2, 2], Convention("resized_pixels", "xyxy"),
                                       ORIGINAL, (0, 0)))

    def test_a_bad_convention_is_refused(self):
        """box_geometry: unknown units/orders, a grid without a scale, pixels with one."""
        for raw in ({"units": "grid", "order": "xyxy"}, {"units": "grid", "order": "xy",
                    "scale": 1000}, {"units": "cm", "order": "xyxy"},
                    {"units": "resized_pixels", "order": "xyxy", "scale": 1000},
                    {"units": "grid", "order": "xyxy", "scale": 1000, "extra": 1}, [1000]):
            with self.assertRaises(ValueError, msg=raw):
                convention(raw)


class TestAnswer(unittest.TestCase):
    def test_found_and_not_found(self):
        """box.answer: not found is the whole image at confidence 0, present kept either way."""
        a = box.answer(None, 0.9, 0.7, "generate")
        b = a.payload
        self.assertEqual((b.left, b.top, b.right, b.bottom), box_geometry.WHOLE)
        self.assertEqual((b.found, b.confidence, b.present), (False, 0.0, 0.7))
        a = box.answer(KNOWN, 0.9, 0.2, "edges")
        b = a.payload
        self.assertEqual((b.found, b.confidence, b.present, b.mode), (True, 0.9, 0.2, "edges"))
        doc = box.KIND.systemone.answer(None, a, None)
        self.assertEqual(set(doc), {"type", "box", "confidence", "present", "found", "x_box_mode",
                                     "x_box_logprob", "x_box_raw"})
        self.assertEqual(doc["box"], dict(zip(("left", "top", "right", "bottom"), KNOWN)))

    def test_confidence_map(self):
        """box_confidence.confidence: a logistic of the coordinate tokens' mean log-prob, increasing in it,
        finite at extremes, 0 when there were no coordinate tokens."""
        fit = {"a": 2.0, "b": 1.0}
        values = [box_confidence.confidence(m, fit) for m in (-5.0, -1.0, -0.5, 0.0)]
        self.assertEqual(values, sorted(values))
        self.assertAlmostEqual(values[2], 0.5)  # a * -0.5 + b = 0
        self.assertEqual(box_confidence.confidence(-1e6, {"a": 1e3, "b": 0.0}), 0.0)
        self.assertEqual(box_confidence.confidence(None, fit), 0.0)

    def test_a_map_may_read_the_box_area(self):
        """map_input: the mean log-prob by default, the log of the box's area as a share of
        the image with "feature": "log_area" (a degenerate box at MIN_AREA), None without a box;
        check_settings takes either feature and refuses another, naming both."""
        frac = (0.25, 0.5, 0.75, 0.625)
        self.assertEqual(box_confidence.map_input({"a": 1, "b": 0}, -0.4, frac), -0.4)
        area = {"a": 1, "b": 0, "feature": "log_area"}
        self.assertAlmostEqual(box_confidence.map_input(area, -0.4, frac), math.log(0.5 * 0.125))
        self.assertEqual(box_confidence.map_input(area, -0.4, (0.5, 0.5, 0.5, 0.9)),
                         math.log(box_confidence.MIN_AREA))
        self.assertIsNone(box_confidence.map_input({"feature": "log_area"}, -0.4, None))
        base = {"convention": {"units": "grid", "order": "xyxy", "scale": 1000},
                "present_temperature": 1.0}
        area = {"a": 1.5, "b": 9.0, "feature": "log_area"}
        box.check_settings({**base, "confidence": {"generate": {"a": 1, "b": 0}, "edges": area}})
        with self.assertRaises(ValueError) as caught:
            box.check_settings({**base, "confidence": {**area, "feature": "area"}})
        self.assertIn("logprob or log_area", str(caught.exception))

    def test_one_map_or_one_per_mode(self):
        """check_settings takes one {a, b} for every mode or one for each of generate and
        edges; a map for one mode only, an unknown mode or a bad number is refused, naming
        both forms; mode_map picks the mode's own map, else the one map."""
        base = {"convention": {"units": "grid", "order": "xyxy", "scale": 1000},
                "present_temperature": 1.0}
        one, per = {"a": 1.0, "b": 0.0}, {"generate": {"a": 1.0, "b": 0.0},
                                          "edges": {"a": -2.0, "b": 0.5}}
        for good in (one, per):
            box.check_settings({**base, "confidence": good})
        for bad in ({"generate": one}, {**per, "hybrid": one}, {"generate": one, "edges": {"a": 1}},
                    {"generate": one, "edges": {"a": float("nan"), "b": 0}}, {"a": 1e4, "b": 0}):
            with self.assertRaises(ValueError) as caught:
                box.check_settings({**base, "confidence": bad})
            self.assertIn("for each of generate, edges", str(caught.exception))
        self.assertEqual(box_confidence.mode_map(per, "edges"), per["edges"])
        self.assertEqual(box_confidence.mode_map(one, "edges"), one)

    def test_read_generation(self):
        """box.read_generation: the box and the mean log-prob of the digit tokens only."""
        tokens = [('{"', -0.01), ("box", 0.0), ('":[', 0.0), ("25", -0.5), (",", 0.0),
                  ("12", -1.5), ("5", -1.0), (",", 0.0), ("75", -0.2), ("0", -0.8), (",", 0.0),
                  ("625", -1.0), ("]}", 0.0)]
        text = "".join(t for t, _ in tokens)
        raw, mean = box.read_generation(text, tokens)
        self.assertEqual(raw, [25, 125, 750, 625])
        self.assertAlmostEqual(mean, (-0.5 - 1.5 - 1.0 - 0.2 - 0.8 - 1.0) / 6)
        self.assertEqual(box.read_generation('{"box":null}', [('{"box":null}', -0.1)]),
                         (None, None))
        self.assertEqual(box.read_generation('{"box":[1,2', [("1", -1.0)]), (None, None))

    def test_schema_bounds_the_coordinates(self):
        """box.schema: four integers up to the convention's largest coordinate, or null."""
        s = box.schema(Convention("grid", "yxyx", 1024).most(ORIGINAL))
        coords = s["properties"]["box"]["anyOf"][0]
        self.assertEqual((coords["items"]["maximum"], coords["minItems"], coords["maxItems"]),
                         (1024, 4, 4))
        self.assertEqual(Convention("original_pixels", "xyxy").most(ORIGINAL), 640)
        self.assertEqual(json.loads(json.dumps(s)), s)


class TestPrompts(unittest.TestCase):
    def test_present_is_a_noul_about_the_same_object(self):
        """box.present_question: a yes/no question naming what the box question names."""
        q = box.present_question(Question("box", "the red square", (), box.Asked("generate")))
        self.assertEqual((q.kind, [o.key for o in q.options]), ("noul", ["true", "false"]))
        self.assertIn("the red square", q.instructions)

    def test_generation_lines_follow_the_convention(self):
        """box.prompt_lines: the order and units named are the profile's, the reply line last."""
        q = Question("box", "the red square", (), box.Asked("generate"))
        xy = box.prompt_lines(q, Convention("grid", "xyxy", 1000))
        yx = box.prompt_lines(q, Convention("grid", "yxyx", 1024))
        px = box.prompt_lines(q, Convention("resized_pixels", "xyxy"))
        self.assertIn("[left, top, right, bottom]", xy[1])
        self.assertIn("[top, left, bottom, right]", yx[1])
        self.assertIn("0-1024 grid", yx[1])
        self.assertIn("pixels", px[1])
        self.assertTrue(all(lines[-1].startswith("Reply with") for lines in (xy, yx, px)))


def body(*questions, kwargs=None, image=True):
    doc = {"model": "jev-latest", "state": {"photo": IMAGE} if image else "no image here",
           "questions": {f"q{i}": q for i, q in enumerate(questions)}}
    if kwargs is not None:
        doc["kwargs"] = kwargs
    return doc


def problems(doc, limits=SERVED):
    with unittest.TestCase().assertRaises(InvalidRequest) as ctx:
        systemone.parse(doc, None, limits)
    return [(p.loc, p.type) for p in ctx.exception.problems], ctx.exception.problems


class TestSystemOne(unittest.TestCase):
    FIND = {"type": "box", "instructions": "the red square in photo"}

    def test_the_question_and_its_mode(self):
        """systemone: a box beside a noul; mode generate by default, kwargs.box.mode for every
        box, the question's own box.mode first."""
        r = systemone.parse(body(self.FIND, {"type": "noul", "instructions": "Red?"}), None, SERVED)
        self.assertEqual([(q.kind, q.params) for q in r.questions],
                         [("box", box.Asked("generate")), ("noul", None)])
        r = systemone.parse(body(self.FIND, {**self.FIND, "box": {"mode": "hybrid"}},
                                 kwargs={"box": {"mode": "edges"}}), None, SERVED)
        self.assertEqual([q.params.mode for q in r.questions], ["edges", "hybrid"])

    def test_bad_box_questions(self):
        """systemone: criteria, no instructions, an unknown mode, no image: one 422 each."""
        for q, where in (({**self.FIND, "criteria": {"a": "b"}}, ("box", "criteria")),
                         ({"type": "box"}, ("box", "instructions")),
                         ({**self.FIND, "box": {"mode": "guess"}}, ("box", "box", "mode")),
                         ({**self.FIND, "box": {"mode": "edges", "k": 1}}, ("box", "box", "k"))):
            locs, _ = problems(body(q))
            self.assertEqual([loc for loc, _ in locs], [("questions", "q0") + where], q)
        locs, _ = problems(body(self.FIND, self.FIND, kwargs={"box": {"mode": 3}}))
        self.assertEqual(locs, [(("kwargs", "box", "mode"), "enum")])  # once, not per question
        locs, _ = problems(body(self.FIND, image=False))
        self.assertEqual(locs, [(("questions", "q0", "box"), "missing")])

    def test_box_limit(self):
        """systemone: more box questions than the limit is the limits' 422 shape."""
        locs, found = problems(body(self.FIND, self.FIND, self.FIND))
        self.assertEqual(locs, [(("questions",), "too_long")])
        self.assertIn("at most 2 box questions", found[0].msg)

    def test_refused_where_not_served(self):
        """systemone: a server that refuses boxes says why at the question's type, 422."""
        limits = replace(SERVED, kinds={BOX: Limit(2, "no boxes on a text model")})
        locs, found = problems(body(self.FIND, {"type": "noul", "instructions": "x"}), limits)
        self.assertEqual(locs, [(("questions", "q0", "type"), "union_tag_invalid")])
        self.assertEqual(found[0].msg, "no boxes on a text model")
        status, doc = systemone.render_error(InvalidRequest(found))
        self.assertEqual((status, doc["detail"][0]["loc"][0]), (422, "body"))

    def test_decisions_has_no_box(self):
        """decisions: type box is a 400 naming the field and /v1/systemone."""
        doc = {"model": "jev-latest", "input": "text", "questions": [
            {"type": "predicate", "instructions": "x"}, {"type": "box", "instructions": "y"}]}
        with self.assertRaises(InvalidRequest) as ctx:
            decisions.parse(doc, None, SERVED)
        status, err = decisions.render_error(ctx.exception)
        self.assertEqual((status, err["error"]["param"]), (400, "questions[1].type"))
        self.assertIn("/v1/systemone", err["error"]["message"])


class TestServerRefusal(unittest.TestCase):
    def test_text_only_and_no_structured_outputs(self):
        """box.limit: a text-only profile refuses boxes for its model; a vision profile with a
        convention refuses them until the start-up probe found structured outputs, and then
        with the probe's reason."""
        path = str(ROOT / "serve_config.json")
        reasons = {}
        for name in ("smollm2-135m-fast", "idefics3-tiny"):
            settings = types.SimpleNamespace(model=load_profile(path, name)[1],
                                             max_box_questions=4)
            failed = types.SimpleNamespace(structured="the generation gave 'hello'")
            reasons[name] = box.KIND.limit(settings, failed).refusal
            passed = box.KIND.limit(settings, types.SimpleNamespace(structured=""))
            self.assertEqual(passed.refusal is None, name == "idefics3-tiny")
            self.assertEqual(passed.most, 4)
        self.assertIn("vision-language", reasons["smollm2-135m-fast"])
        self.assertIn("structured outputs", reasons["idefics3-tiny"])
        self.assertIn("the generation gave 'hello'", reasons["idefics3-tiny"])


if __name__ == "__main__":
    unittest.main()
