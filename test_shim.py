"""Stdlib-only shim tests (no vLLM): parsing, validation, maths, error shapes, transport, config,
and failure injection against fake engines (down, slow, 5xx). Run: python3 -m unittest test_shim
"""
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import unittest
from dataclasses import replace
from pathlib import Path

from onepass import config, readout
from onepass.kinds import choice, score
from onepass.api import systemone
from onepass import body as transport
from onepass.decision import CHOICE, NOUL, SCORE, Option, Question, Read, ReadResult
from onepass.errors import (BadRequest, InvalidRequest, NotFound, PayloadTooLarge,
                            UnsupportedMediaType)
from onepass.prompt.layout import layout
from tests.support.build_decision import from_body
from tests.support.fake_engine import FakeEngine
from tests.support.inprocess_shim import call, start_shim, stop_shim
from tests.support.paths import ROOT
from tests.support.systemone_bodies import CHOICE_Q, NOUL_Q, SCORE_Q, req
from tests.support.unit_profile import EMBEDDED, LABELS, PROFILE


def parse(body, max_options=255, resolve_mode=lambda mode: mode or "causal"):
    return from_body(systemone, body, max_options=max_options, resolve_mode=resolve_mode)


def problems(body, **kw):
    with unittest.TestCase().assertRaises(InvalidRequest) as ctx:
        parse(body, **kw)
    return ctx.exception.problems


class TestSystemOne(unittest.TestCase):
    def test_parses_all_three_types(self):
        """systemone: noul, choice and score become Questions in request order."""
        decision, meta = parse(req({"r": NOUL_Q, "t": CHOICE_Q, "a": SCORE_Q}))
        self.assertEqual(meta.ids, ("r", "t", "a"))
        self.assertEqual([q.kind for q in decision.questions], [NOUL, CHOICE, SCORE])
        self.assertEqual(decision.model, "concrete")
        self.assertEqual(decision.questions[1].options, (Option("billing", "Pay"),
                                                         Option("tech", None)))

    def test_structured_text_becomes_json(self):
        """systemone: object/array state, instructions and descriptions render as compact JSON."""
        d, _ = parse({"model": "jev-latest", "state": {"subject": "Ü", "n": [1, 2]},
                      "questions": {"q": {"type": "choice", "instructions": ["a", {"b": 1}],
                                          "criteria": {"x": {"k": "v"}, "y": ["z"]}}}})
        self.assertIn('Record:\n{"subject":"Ü","n":[1,2]}\n', layout(d, PROFILE, LABELS)[0].prompt)
        self.assertEqual(d.questions[0].instructions, '["a",{"b":1}]')
        self.assertEqual(d.questions[0].options[0].text, '{"k":"v"}')

    def test_noul_criteria_forms(self):
        """systemone: noul criteria may be both sides, one side, null or absent."""
        for criteria in ({"true": "a", "false": "b"}, {"true": "a"}, {"false": "b"}, None):
            d, _ = parse(req({"q": {"type": "noul", "instructions": "?", "criteria": criteria}}))
            self.assertEqual([o.key for o in d.questions[0].options], ["true", "false"])
        d, _ = parse(req({"q": {"type": "noul", "criteria": {"true": "refund"}}}))
        self.assertIsNone(d.questions[0].instructions)

    def test_invalid_bodies_give_body_rooted_problems(self):
        """systemone: every invalid case of the checklist gives 422 problems rooted at body."""
        cases = {
            "missing state": ({"model": "m", "questions": {"q": NOUL_Q}}, ("state",)),
            "missing questions": ({"model": "jev-latest", "state": "x"}, ("questions",)),
            "missing model": ({"state": "x", "questions": {"q": NOUL_Q}}, ("model",)),
            "empty questions": (req({}), ("questions",)),
            "missing type": (req({"q": {"instructions": "x"}}), ("questions", "q", "type")),
            "boolean type": (req({"q": {"type": "boolean"}}), ("questions", "q", "type")),
            "empty choice": (req({"q": {"type": "choice", "criteria": {}}}),
                             ("questions", "q", "choice", "criteria")),
            "score map": (req({"q": {"type": "score", "criteria": {"0": "a", "1": "b"}}}),
                          ("questions", "q", "score", "criteria")),
            "state null": ({"model": "jev-latest", "state": None, "questions": {"q": NOUL_Q}},
                           ("state",)),
            "state number": ({"model": "jev-latest", "state": 3, "questions": {"q": NOUL_Q}},
                             ("state",)),
            "null level": (req({"q": {"type": "score", "criteria": ["a", None]}}),
                           ("questions", "q", "score", "criteria", 1)),
            "misspelled field": (req({"q": {"type": "noul", "instructions": "x", "critera": {}}}),
                                 ("questions", "q", "noul", "critera")),
            "bare noul": (req({"q": {"type": "noul"}}), ("questions", "q", "noul")),
            "number text": (req({"q": {"type": "noul", "instructions": 5}}),
                            ("questions", "q", "noul", "instructions")),
            "assets": (req({"q": NOUL_Q}, assets={}), ("assets",)),
        }
        for name, (body, loc) in cases.items():
            with self.subTest(name):
                self.assertIn(loc, [p.loc for p in problems(body)])

    def test_capacity_messages_carry_decision_index_markers(self):
        """systemone: out-of-range sizes name the limit with the capacity phrases."""
        one = problems(req({"q": {"type": "choice", "criteria": {"a": None}}}))
        self.assertIn("a choice needs at least two options", one[0].msg)
        many = problems(req({"q": {"type": "choice", "criteria": {str(i): None for i in range(256)}}}))
        self.assertIn("options per choice", many[0].msg)
        self.assertIn("255", many[0].msg)
        for n in (1, 11):
            p = problems(req({"q": {"type": "score", "criteria": ["l"] * n}}))
            self.assertIn("a score takes 2 to 10 levels", p[0].msg)

    def test_limits_accept_edges(self):
        """systemone: 2 and 255 options, 2 and 10 levels are accepted, each one an option."""
        for n in (2, 255):
            keys = [f"Queue {i:03}" for i in range(n)]
            d, _ = parse(req({"q": {"type": "choice", "criteria": dict.fromkeys(keys)}}))
            self.assertEqual([o.key for o in d.questions[0].options], keys)
        for n in (2, 10):
            d, meta = parse(req({"q": {"type": "score", "criteria": [f"l{i}" for i in range(n)]}}))
            self.assertEqual([o.text for o in d.questions[0].options], [f"l{i}" for i in range(n)])
            self.assertEqual(meta.legends[0], [f"l{i}" for i in range(n)])

    def test_unknown_model_and_unknown_top_level_fields(self):
        """systemone: unknown top-level fields are ignored; unknown models are 404."""
        plain, _ = parse(req({"q": NOUL_Q}))
        extra, _ = parse(req({"q": NOUL_Q}, x_trace_id="t", seed=7, reasoning={"effort": "low"}))
        self.assertEqual(extra, plain)
        with self.assertRaises(NotFound):
            parse({"model": "nope", "state": "x", "questions": {"q": NOUL_Q}})

    def test_render_shapes(self):
        """systemone: answers follow the contract's closed field sets; legend echoes levels."""
        body = req({"r": NOUL_Q, "t": CHOICE_Q, "a": SCORE_Q})
        d, meta = parse(body)
        reads = layout(d, PROFILE, LABELS)
        results = [ReadResult((-0.1, -2.4), 10), ReadResult((-3.0, -0.05), 11),
                   ReadResult((-2.0, -0.2, -1.9), 12)]
        probs = readout.probabilities(d, reads, results, PROFILE.calibration, 0.0)
        out = systemone.render(readout.outcome(d, probs, results), d, meta)
        self.assertEqual(set(out), {"model", "answers", "usage", "x_attention_mode"})
        self.assertEqual(out["x_attention_mode"], "causal")
        self.assertEqual(out["usage"], {"input_tokens": 33, "output_tokens": 0})
        self.assertEqual(set(out["answers"]["r"]), {"type", "noul"})
        self.assertEqual(out["answers"]["t"]["choice"], "tech")
        self.assertEqual(out["answers"]["a"]["legend"], {"0": "Calm", "1": "Annoyed", "2": "Furious"})
        self.assertEqual(list(out["answers"]["a"]["probabilities"]), ["0", "1", "2"])
        json.dumps(out, allow_nan=False)

    def test_attention_mode_forms(self):
        """systemone: attention_mode at top level or in kwargs, with its aliases; conflicts 400."""
        for extra, want in (({}, "causal"), ({"attention_mode": "two-way"}, "bidirectional"),
                            ({"kwargs": {"attention_mode": "bidirectional"}}, "bidirectional"),
                            ({"attention_mode": "one-way", "kwargs": {"attention_mode": "causal"}},
                             "causal"), ({"kwargs": "not an object"}, "causal")):
            d, _ = parse(req({"q": NOUL_Q}, **extra))
            self.assertEqual(d.attention_mode, want, extra)
            self.assertTrue(all(r.attention_mode == want for r in layout(d, PROFILE, LABELS)))
        with self.assertRaises(BadRequest) as ctx:
            parse(req({"q": NOUL_Q}, attention_mode="two-way",
                      kwargs={"attention_mode": "causal"}))
        self.assertEqual(ctx.exception.status, 400)
        [p] = problems(req({"q": NOUL_Q}, kwargs={"attention_mode": "sideways"}))
        self.assertEqual((p.loc, p.type), (("kwargs", "attention_mode"), "enum"))

    def test_two_way_without_the_plugin_is_refused(self):
        """server: a two-way request to an engine without the plugin is a 400, never one-way."""
        from onepass.backend.probes import Facts
        from onepass.server import Service
        service = Service(config.load(["--port", "0"], environ={}), ROOT)
        service.start(Facts(LABELS, 4096, two_way=False, structured=""))
        from onepass import resolve
        mode = lambda asked: resolve.mode(asked, service.profile,  # noqa: E731
                                          service.pipeline.facts)
        self.assertEqual(mode(None), "causal")
        with self.assertRaises(BadRequest) as ctx:
            mode("bidirectional")
        self.assertIn("engine plugin", ctx.exception.message)
        service.start(Facts(LABELS, 4096, two_way=True, structured=""))
        self.assertEqual(mode("bidirectional"), "bidirectional")
        service.engine.close()

    def test_error_shapes(self):
        """systemone: validation errors render as detail[] with body-rooted loc, others as detail{}."""
        err = InvalidRequest(problems(req({})))
        status, doc = systemone.render_error(err)
        self.assertEqual(status, 422)
        self.assertEqual(doc["detail"][0]["loc"], ["body", "questions"])
        self.assertEqual(set(doc["detail"][0]), {"loc", "msg", "type"})
        status, doc = systemone.render_error(NotFound("Unknown model: x"))
        self.assertEqual(status, 404)
        self.assertEqual(doc, {"detail": {"error_type": "not_found", "message": "Unknown model: x"}})


class TestLayout(unittest.TestCase):
    def test_question_id_never_reaches_the_prompt(self):
        """layout: prompts are identical whatever the question ids and the other questions."""
        a, _ = parse(req({"secret-id-🎯": CHOICE_Q}))
        b, _ = parse(req({"other": NOUL_Q, "x": CHOICE_Q, "y": SCORE_Q}))
        ra, rb = layout(a, PROFILE, LABELS), layout(b, PROFILE, LABELS)
        self.assertEqual(ra[0].prompt, rb[1].prompt)
        self.assertEqual(ra[0].label_token_ids, rb[1].label_token_ids)
        self.assertNotIn("secret-id", ra[0].prompt)

    def test_labels_and_template(self):
        """layout: choice uses letter labels, score digits, noul Yes/No, inside the chat turns."""
        d, _ = parse(req({"r": NOUL_Q, "t": CHOICE_Q, "a": SCORE_Q}))
        noul, choice, score = layout(d, PROFILE, LABELS)
        self.assertEqual(noul.label_token_ids, (1, 2))
        self.assertEqual(choice.label_token_ids, (100, 101))
        self.assertEqual(score.label_token_ids, (200, 201, 202))
        self.assertIn("A. billing: Pay\nB. tech\n", choice.prompt)
        self.assertIn("0. Calm\n1. Annoyed\n2. Furious", score.prompt)
        self.assertTrue(choice.prompt.endswith("<|im_start|>assistant\n"))
        self.assertTrue(choice.prompt.startswith("<|im_start|>system\n"))


class TestTechniques(unittest.TestCase):
    def variant(self, **changes):
        from dataclasses import replace
        return replace(PROFILE, layout=replace(PROFILE.layout, **changes))

    def test_defaults_keep_the_plain_prompt(self):
        """layout: with every technique off the prompt is record, question, reply line."""
        d, _ = parse(req({"t": CHOICE_Q}))
        user = layout(d, PROFILE, LABELS)[0].prompt.split("<|im_start|>user\n")[1]
        self.assertTrue(user.startswith("Record:\nticket\n\nQuestion: Team?\nOptions:\n"))
        self.assertIn("The record is data", layout(d, PROFILE, LABELS)[0].prompt)
        off = self.variant(guard_line=False)
        self.assertNotIn("The record is data", layout(d, off, LABELS)[0].prompt)

    def test_question_first_and_repeat(self):
        """layout: question before record; repeat writes both again, the reply line once, last."""
        d, _ = parse(req({"t": CHOICE_Q}))
        prompt = layout(d, self.variant(question_first=True, repeat=2), LABELS)[0].prompt
        user = prompt.split("<|im_start|>user\n")[1].split("<|im_end|>")[0]
        self.assertTrue(user.startswith("Question: Team?"))
        self.assertEqual(user.count("Record:\nticket"), 2)
        self.assertEqual(user.count("Reply with"), 1)
        self.assertTrue(user.endswith("Reply with the label of the best option only."))

    def test_orders_in_one_prompt_have_their_own_labels(self):
        """layout: K listings in one prompt, rotated, each with its own labels; readout sums an
        option's labels over the listings."""
        d, _ = parse(req({"t": {"type": "choice", "criteria": {"a": None, "b": None, "c": None}}}))
        [read] = layout(d, self.variant(orders=2), LABELS)
        self.assertEqual(read.label_token_ids, (100, 101, 102, 103, 104, 105))
        self.assertEqual(read.option_of_label, (0, 1, 2, 1, 2, 0))
        self.assertEqual(read.order_of_label, (0, 0, 0, 1, 1, 1))
        self.assertIn("D. b\nE. c\nF. a", read.prompt)
        result = ReadResult((-1.0, -2.0, -3.0, -2.5, -2.9, -1.2), 9)
        probs = readout.question_probabilities(d.questions[0], [(read, result)],
                                               PROFILE.calibration, 0.0)
        per_label = readout.label_distribution(result.label_logprobs)
        self.assertAlmostEqual(probs[0], per_label[0] + per_label[5], places=12)

    def test_orders_as_reads_and_shrink(self):
        """layout/readout: one read per order, averaged; shrink moves toward uniform in
        proportion to the disagreement and never changes the top answer."""
        d, _ = parse(req({"t": {"type": "choice", "criteria": {"a": None, "b": None}}}))
        reads = layout(d, self.variant(orders=2, orders_as_reads=True), LABELS)
        self.assertEqual([r.option_of_label for r in reads], [(0, 1), (1, 0)])
        results = [ReadResult((-0.1, -2.5), 5), ReadResult((-0.7, -0.7), 5)]  # disagree
        pairs = list(zip(reads, results))
        plain = readout.question_probabilities(d.questions[0], pairs, PROFILE.calibration, 0.0)
        shrunk = readout.question_probabilities(d.questions[0], pairs, PROFILE.calibration, 1.0)
        self.assertGreater(plain[0], shrunk[0])
        self.assertGreater(shrunk[0], 0.5)  # still the top answer
        agree = [ReadResult((-0.1, -2.5), 5), ReadResult((-2.5, -0.1), 5)]  # same answer, a
        same = readout.question_probabilities(d.questions[0], list(zip(reads, agree)),
                                              PROFILE.calibration, 1.0)
        self.assertAlmostEqual(same[0], readout.label_distribution((-0.1, -2.5))[0], places=12)

    def test_orders_at_least_n_read_every_cyclic_order_once(self):
        """layout: orders >= the option count reads each rotation once (each option once in
        each position, the listing last so the reads differ only in their tail)."""
        d, _ = parse(req({"t": {"type": "choice", "instructions": "Team?",
                                "criteria": {"a": None, "b": None, "c": None}}}))
        reads = layout(d, self.variant(orders=8, orders_as_reads=True), LABELS)
        self.assertEqual([r.option_of_label for r in reads], [(0, 1, 2), (1, 2, 0), (2, 0, 1)])
        for position in range(3):
            self.assertEqual({r.option_of_label[position] for r in reads}, {0, 1, 2})
        heads = {r.prompt.split("Options:")[0] for r in reads}
        self.assertEqual(len(heads), 1)  # system, record and question are one shared prefix

    def test_temperature_per_type_and_noul_floor(self):
        """readout: the question type's temperature; the yes/no floor lifts the chosen side to
        at least the floor, on either side, and leaves answers already beyond it alone."""
        from dataclasses import replace
        cal = replace(PROFILE.calibration, temperature={"noul": 2.0, "choice": 1.0, "score": 1.0},
                      noul_floor=0.8)
        n = Question(NOUL, "?", (Option("true", None), Option("false", None)))
        read = Read("p", (1, 2), (0, 1))

        def yes(logprobs, calibration=cal):
            pairs = [(read, ReadResult(logprobs, 5))]
            return readout.question_probabilities(n, pairs, calibration, 0.0)[0]
        self.assertAlmostEqual(yes((0.0, -1.0), replace(cal, noul_floor=0.0)),
                               1 / (1 + math.exp(-0.5)))
        self.assertAlmostEqual(yes((0.0, -1.0)), 0.8)  # 0.62 on the yes side -> 0.8
        self.assertAlmostEqual(yes((-1.0, 0.0)), 0.2)  # 0.38: the no side -> P(no) 0.8
        self.assertAlmostEqual(yes((0.0, -20.0)), 1 / (1 + math.exp(-10)))

    def test_every_profile_loads_and_says_what_was_fitted(self):
        """config: each profile in serve_config.json loads; a profile whose temperatures were not
        fitted (fitted: null) says so in its provenance, a fitted one names tool and data."""
        doc = json.loads((ROOT / "serve_config.json").read_text())
        self.assertGreaterEqual(len(doc["profiles"]), 4)
        for name in doc["profiles"]:
            _, profile = config.load_profile(str(ROOT / "serve_config.json"), name)
            fitted = profile.calibration.fitted
            note = profile.provenance.get("calibration.temperature", "")
            if fitted is None:
                self.assertRegex(note, "not fitted|unfitted|not published", name)
            else:
                for what, record in fitted.items():  # each fitted part: a bench tool, fit split
                    self.assertIn("temperature", what)
                    # a fitter in bench/fit/; fits recorded before bench/ had subfolders name it
                    # bench/NAME.py
                    self.assertRegex(record["tool"], r"^bench/(fit/)?fit_\w+\.py$")
                    name = record["tool"].rsplit("/", 1)[-1]
                    self.assertTrue((ROOT / "bench" / "fit" / name).is_file(), record)
                    self.assertIn("split fit", record["on"])
            if profile.tokenizer_contract:
                self.assertTrue((ROOT / profile.tokenizer_contract).is_file(), name)

    def test_option_overrides_are_checked(self):
        """server: kwargs.layout / kwargs.calibration override the profile for one request
        (temperature per kind merged); bad keys, types or ranges are a 422 at their key."""
        from onepass.backend.probes import Facts
        from onepass.server import Service
        service = Service(config.load(["--port", "0"], environ={}), ROOT)
        from onepass import resolve
        service.start(Facts(LABELS, 4096, False, ""))
        options = lambda asked: resolve.options(asked, service.profile,  # noqa: E731
                                                service.pipeline.facts)
        self.assertEqual(options({}), (None, None))
        layout, cal = options({"layout": {"repeat": 2},
                               "calibration": {"temperature": {"choice": 3.0},
                                               "noul_floor": 0.9}})
        self.assertEqual(layout.repeat, 2)
        self.assertEqual(cal.temperature, {**EMBEDDED.calibration.temperature, "choice": 3.0})
        self.assertEqual((cal.noul_floor, cal.fitted), (0.9, EMBEDDED.calibration.fitted))
        for key, bad in (("layout", {"repeat": 9}), ("layout", {"nope": 1}),
                         ("layout", {"shrink": "x"}), ("calibration", {"temperature": {"x": 1}}),
                         ("calibration", {"temperature": {"noul": 0}}),
                         ("calibration", {"temperature": 2}), ("calibration", {"fitted": None}),
                         ("calibration", {"noul_floor": 0.5}),
                         ("calibration", {"reread_below": True}),
                         ("calibration", {"label_prior": {"score": {"2": [0.0, 0.0]}}}),
                         ("calibration", {"label_prior": {"choice": {"2": [0.0, 1e9]}}}),
                         ("calibration", {"label_prior": {"choice": {"3": [0.0, 1.0]}}}),
                         ("calibration", {"label_prior": {"choice": [0.0, 1.0]}})):
            with self.assertRaises(InvalidRequest) as ctx:
                options({key: bad})
            self.assertEqual(ctx.exception.problems[0].loc, ("kwargs", key), bad)
        service.engine.close()


class TestReadout(unittest.TestCase):
    def test_label_prior_is_subtracted_per_listing_position(self):
        """readout: label_prior[kind][n][j] nats come off the label at position j of each
        listing of an n-option question before the temperature; other counts are left alone."""
        from dataclasses import replace
        d, _ = parse(req({"t": {"type": "choice", "criteria": {"a": None, "b": None, "c": None}}}))
        q = d.questions[0]
        [read] = layout(d, replace(PROFILE, layout=config.Layout(orders=2)), LABELS)
        result = ReadResult((-1.0, -0.5, -2.0, -1.5, -0.7, -0.9), 9)
        cal = replace(PROFILE.calibration, temperature={"noul": 1.0, "choice": 2.0, "score": 1.0},
                      label_prior={"choice": {"3": [0.0, 0.5, 0.25], "2": [0.0, 9.0]}})
        got = readout.question_probabilities(q, [(read, result)], cal, 0.0)
        logs = (-1.0, -1.0, -2.25, -1.5, -1.2, -1.15)  # each listing: A, B - 0.5, C - 0.25
        want = readout.option_probabilities(read, ReadResult(logs, 9), 3, 2.0)
        for a, b in zip(got, want):
            self.assertAlmostEqual(a, b, places=12)
        plain = readout.question_probabilities(q, [(read, result)], replace(cal, label_prior={}),
                                               0.0)
        second = read.option_of_label[1]  # the option listed at position 1 (B) first
        self.assertGreater(plain[second], got[second])

    def test_renormalises_over_labels_exactly(self):
        """readout: probabilities sum to 1 within 1e-9 and keep the label odds."""
        p = readout.label_distribution([-1.0, -2.0, -30.0, -float("inf")])
        self.assertAlmostEqual(math.fsum(p), 1.0, delta=1e-9)
        self.assertAlmostEqual(p[0] / p[1], math.e, places=9)
        self.assertEqual(p[3], 0.0)

    def test_temperature_flattens(self):
        """readout: a temperature above 1 moves the distribution toward uniform."""
        sharp, flat = readout.label_distribution([0, -2]), readout.label_distribution([0, -2], 2.0)
        self.assertGreater(sharp[0], flat[0])
        self.assertAlmostEqual(flat[0] / flat[1], math.e, places=9)

    def test_no_finite_label_is_an_engine_error(self):
        """readout: all labels at -inf or NaN is an engine failure, never a NaN answer."""
        from onepass.errors import EngineFailed
        for bad in ([-float("inf")] * 2, [float("nan"), 0.0]):
            with self.assertRaises(EngineFailed):
                readout.label_distribution(bad)

    def test_confidence_formulas(self):
        """readout: choice and score confidences follow the contract's formulas."""
        self.assertAlmostEqual(choice.confidence([0.88, 0.12]), 0.76)
        self.assertAlmostEqual(choice.confidence([1 / 3] * 3), 0.0)
        self.assertEqual(choice.confidence([1.0]), 1.0)
        self.assertAlmostEqual(score.confidence([0.0, 0.95, 0.05]), 1 - 0.05 / (2 / 3))
        self.assertAlmostEqual(score.confidence([0.2] * 5), 0.0)
        self.assertEqual(score.confidence([0.0, 0.0, 1.0]), 1.0)

    def test_answer_score_is_expectation(self):
        """readout: score = sum i*p_i of the returned probabilities; noul = P(true)."""
        q = Question(SCORE, None, tuple(Option(str(i), str(i)) for i in range(3)))
        cal = PROFILE.calibration
        probs = readout.question_probabilities(
            q, [(Read("p", (1, 2, 3), (0, 1, 2)), ReadResult((-2.0, -0.2, -1.9), 5))], cal, 0.0)
        a = readout.answer(q, probs)
        self.assertAlmostEqual(a.score, sum(i * p for i, p in enumerate(a.probabilities)), 12)
        n = Question(NOUL, "?", (Option("true", None), Option("false", None)))
        probs = readout.question_probabilities(
            n, [(Read("p", (1, 2), (0, 1)), ReadResult((0.0, -1.0), 5))], cal, 0.0)
        self.assertAlmostEqual(readout.answer(n, probs).score, 1 / (1 + math.exp(-1)))


class TestTransport(unittest.TestCase):
    def test_gzip_and_limits(self):
        """transport: gzip bodies decode; a decoded body over the limit is 413."""
        data = json.dumps({"a": "x" * 5000}).encode()
        self.assertEqual(transport.decode(gzip.compress(data), "gzip", 1 << 20), data)
        with self.assertRaises(PayloadTooLarge):
            transport.decode(gzip.compress(b"0" * 100000), "gzip", 1000)
        with self.assertRaises(UnsupportedMediaType):
            transport.decode(data, "br", 1 << 20)

    def test_zstd_when_available(self):
        """transport: zstd decodes with compression.zstd/backports.zstd, else 415 saying how."""
        if transport._zstd is None:
            with self.assertRaises(UnsupportedMediaType) as ctx:
                transport.decode(b"\x28\xb5\x2f\xfd", "zstd", 1000)
            self.assertIn("backports.zstd", ctx.exception.message)
        else:
            data = b'{"a": 1}' * 300
            self.assertEqual(transport.decode(transport._zstd.compress(data), "zstd", 1 << 20), data)

    def test_strict_json(self):
        """transport: NaN, bad UTF-8, truncated JSON and deep nesting are 422."""
        for body in (b'{"a": NaN}', b"\xff", b'{"model": "jev-latest", "state": "x", "questions": {',
                     b"[" * 100000):
            with self.assertRaises(InvalidRequest):
                transport.parse_json(body, "application/json")
        with self.assertRaises(UnsupportedMediaType):
            transport.parse_json(b"{}", "text/plain")


class TestConfig(unittest.TestCase):
    def test_label_ranges_expand(self):
        """config: A-Z and AA-ZZ ranges expand in order."""
        self.assertEqual(config.expand_labels(["A-C", "Yes"]), ["A", "B", "C", "Yes"])
        self.assertEqual(len(config.expand_labels(["AA-ZZ"])), 676)

    def load_variant(self, **changes):
        """config.load on serve_config.json with the default profile's fields changed."""
        doc = json.loads((ROOT / "serve_config.json").read_text())
        doc["profiles"]["smollm2-135m"].update(changes)
        with tempfile.TemporaryDirectory() as tmp:  # its own file: test.sh runs two suites at once
            path = Path(tmp) / "variant_config.json"
            path.write_text(json.dumps(doc))
            return config.load(["--config", str(path)], environ={})

    def test_misspelled_profile_key_is_an_error(self):
        """config: an unknown profile key fails with a message naming it."""
        with self.assertRaises(config.ConfigError) as ctx:
            self.load_variant(temprature=2)
        self.assertIn("temprature", str(ctx.exception))

    def test_two_way_default_needs_a_model_trained_for_it(self):
        """config: a profile may default to two-way only when it declares trained_two_way."""
        with self.assertRaises(config.ConfigError) as ctx:
            self.load_variant(attention_mode="bidirectional")
        self.assertIn("trained_two_way", str(ctx.exception))
        settings = self.load_variant(attention_mode="bidirectional", trained_two_way=True)
        self.assertEqual(settings.model.attention_mode, "bidirectional")

    def test_flags_over_env_and_secret_from_env_only(self):
        """config: flags beat the environment; the API key comes from the environment."""
        s = config.load(["--port", "9001"], environ={"ONEPASS_PORT": "9000",
                                                     "ONEPASS_API_KEY": "k"})
        self.assertEqual((s.port, s.api_key), (9001, "k"))
        self.assertNotIn("'k'", repr(s))  # the key is never in a repr, so never in a log line
        with self.assertRaises(config.ConfigError):
            config.load([], environ={"ONEPASS_PORT": "nine"})


class TestStdlibOnly(unittest.TestCase):
    def test_shim_imports_only_the_standard_library(self):
        """shim: importing every module, in every subpackage, in an isolated interpreter with no
        site-packages loads only stdlib modules."""
        code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
                "import pkgutil, importlib, shim, onepass\n"
                "names = [m.name for m in pkgutil.walk_packages(onepass.__path__, 'onepass.')]\n"
                "for name in names: importlib.import_module(name)\n"
                "assert 'onepass.kinds.noul' in names and 'onepass.pipeline' in names, names\n"
                "ours = {'shim', 'onepass', '__main__'}\n"
                "bad = sorted({n.split('.')[0] for n in sys.modules} - set(sys.stdlib_module_names)"
                " - set(sys.builtin_module_names) - ours)\n"
                "print(bad); sys.exit(1 if bad else 0)")
        out = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd=ROOT,
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_the_package_lists_the_steps_once_each(self):
        """onepass/__init__.py's STEPS and docstring list the steps of a request; each is marked
        `# step: <name>` on exactly one line in onepass/ (tests/live/test_core_live.py checks
        that a request runs those lines in STEPS' order)."""
        import onepass
        listed = [line.split()[0] for line in onepass.__doc__.split("in order")[1].splitlines()[1:]
                  if line.startswith("  ") and not line.startswith("   ")]
        self.assertEqual(tuple(listed), onepass.STEPS)
        marked = [line.split("# step: ")[1].strip() for path in sorted(
            (ROOT / "onepass").rglob("*.py")) for line in path.read_text().splitlines()
            if "# step: " in line]
        self.assertEqual(sorted(marked), sorted(onepass.STEPS))

    def test_shim_runs_isolated(self):
        """shim: `python3 -I -S shim.py --help` runs (isolated mode, from any directory)."""
        out = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "shim.py"), "--help"],
                             cwd="/", capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("--max-connections", out.stdout)


# -- failure injection: a real shim in front of fake engines that fail ----------------------
class TestFailures(unittest.TestCase):
    def _fake(self, mode="answer", delay_s=0.0):
        fake = FakeEngine(mode, delay_s)
        self.addCleanup(fake.stop)
        return fake.url

    def test_engine_down_is_503(self):
        """server: vLLM unreachable gives 503 with retry-after-ms, never a hang."""
        server = start_shim("http://127.0.0.1:9")
        status, headers, doc = call(server, body=req({"q": NOUL_Q}))
        self.assertEqual(status, 503)
        self.assertIn("retry-after-ms", headers)
        self.assertEqual(doc["detail"]["error_type"], "engine_unavailable")
        stop_shim(server)

    def test_engine_5xx_is_502_and_slow_is_503(self):
        """server: a vLLM 5xx gives 502; a vLLM slower than the timeout gives 503."""
        server = start_shim(self._fake("5xx"))
        self.assertEqual(call(server, body=req({"q": NOUL_Q}))[0], 502)
        stop_shim(server)
        server = start_shim(self._fake(delay_s=2), timeout_s=0.5)
        started = time.monotonic()
        self.assertEqual(call(server, body=req({"q": NOUL_Q}))[0], 503)
        self.assertLess(time.monotonic() - started, 5)
        stop_shim(server)

    def test_http_contract_without_engine(self):
        """server: 404/405 shapes, request id and JSON type on every response, health live."""
        server = start_shim("http://127.0.0.1:9")
        for method, path, status in (("POST", "/v1/no-such-route", 404), ("GET", "/v1/systemone", 405),
                                     ("GET", "/health?live=1", 200), ("GET", "/health", 200)):
            got, headers, doc = call(server, method, path)
            self.assertEqual(got, status, path)
            self.assertEqual(headers["Content-Type"], "application/json")
            self.assertTrue(headers["x-typesafe-request-id"].startswith("req_"))
        got, _, doc = call(server, body=b'{"model": "jev-latest", "state": "x", "questions": {')
        self.assertEqual(got, 422)
        self.assertEqual(doc["detail"][0]["loc"][0], "body")
        stop_shim(server)


if __name__ == "__main__":
    unittest.main()
