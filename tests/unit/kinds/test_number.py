"""Stdlib-only tests of the number kind: what its constraint admits, reading the generated text,
its confidence from the answer's own tokens, the question on /v1/systemone and the 400 on
/v1/decisions, and number questions in fit.split and generate.fold beside read questions.
Run: python3 -S -m unittest tests.unit.kinds.test_number
"""
import math
import types
import unittest
from dataclasses import replace

from onepass.steps import fit, generate
from onepass.api import Limits, decisions, systemone
from onepass.decision_model import (Answer, Decision, Effort, Generated, Option, Outcome,
                                    Question)
from tests.support.kind_names import BOX, NOUL, NUMBER
from onepass.errors import InvalidRequest
from onepass.kinds import number
from onepass.kinds.base import Job, Limit
from onepass.prompt.fitting import Selection
from onepass.steps.record import Record

SERVED = Limits(max_options=255, max_questions=400,
                kinds={NUMBER: Limit(most=2), BOX: Limit(most=4)})
PROFILE = types.SimpleNamespace(calibration=types.SimpleNamespace(number_confidence=None),
                                vision=None)
JOB = Job((), PROFILE, types.SimpleNamespace(number_max_tokens=24), None)


class TestNumber(unittest.TestCase):
    def test_the_constraint_admits_plain_decimals_only(self):
        """number.PATTERN: every text it admits parses as a float; signs, exponents, spaces,
        leading zeros and bare points are not admitted."""
        for text in ("0", "391", "-7", "12.5", "0.25", "-0.5"):
            self.assertIsNotNone(number.WHOLE.fullmatch(text), text)
            self.assertEqual(number.value(text), float(text))
        for text in ("+1", "1e5", "01", "1.", ".5", "1 000", "", "nan", "inf", "--1", "1,5"):
            self.assertIsNone(number.WHOLE.fullmatch(text), text)
            self.assertIsNone(number.value(text), text)
        self.assertIsNone(number.value("9" * 50))  # beyond what a float holds to the digit
        for text in ("1" * 13, "1." + "1" * 7):  # the bound that makes the model stop
            self.assertIsNone(number.WHOLE.fullmatch(text), text)
        longest = "-" + "9" * 12 + "." + "9" * 6
        self.assertEqual(len(longest), 20)
        self.assertIsNotNone(number.WHOLE.fullmatch(longest))

    def test_answer_confidence_and_cut(self):
        """number.answer: the value, the text as written, exp(mean log-prob) of the tokens
        that wrote it (the stop token after is not part of it); a cut generation is null with
        confidence 0; a fit maps the mean through a logistic."""
        tokens = [("39", -0.2), ("1", -0.4), ("<|im_end|>", -3.0)]
        a = number.answer("391", tokens, False, None)
        self.assertEqual((a.kind, a.payload), (NUMBER, number.Written(391.0, "391")))
        self.assertAlmostEqual(a.confidence, math.exp(-0.3))
        cut = number.answer("3915", tokens, True, None)
        self.assertEqual((cut.payload, cut.confidence), (number.Written(None, "3915"), 0.0))
        fitted = number.answer("391", tokens, False, {"a": 2.0, "b": 1.0})
        self.assertAlmostEqual(fitted.confidence, 1 / (1 + math.exp(-(2.0 * -0.3 + 1.0))))
        doc = number.KIND.systemone.answer(None, a, None)
        self.assertEqual(doc, {"type": "number", "number": 391.0, "text": "391",
                               "confidence": a.confidence})
        self.assertEqual(number.constraint(), {"regex": number.PATTERN})

    def test_its_probe(self):
        """probe: its pattern under number_max_tokens; a plain decimal obeys it, anything
        around one does not."""
        probe = number.KIND.probe(types.SimpleNamespace(number_max_tokens=24))
        self.assertEqual((probe.structured, probe.max_tokens), (number.constraint(), 24))
        self.assertEqual([probe.obeys(t) for t in ("12", "-0.5", " 12", "12 apples", "")],
                         [True, True, False, False, False])

    def test_systemone_question_limits_and_decisions_400(self):
        """systemone: instructions required, criteria refused, the per-request limit in the
        limits' shape; decisions: type number is a 400 naming /v1/systemone."""
        q = {"type": "number", "instructions": "How many items?"}
        r = systemone.parse({"model": "m", "state": "s", "questions": {"n": q}}, None, SERVED)
        self.assertEqual([(x.kind, x.instructions) for x in r.questions],
                         [(NUMBER, "How many items?")])
        for bad, loc in (({"type": "number"}, ("questions", "n", "number", "instructions")),
                         ({**q, "criteria": ["a"]}, ("questions", "n", "number", "criteria"))):
            with self.assertRaises(InvalidRequest) as ctx:
                systemone.parse({"model": "m", "state": "s", "questions": {"n": bad}}, None,
                                SERVED)
            self.assertEqual(ctx.exception.problems[0].loc, loc)
        with self.assertRaises(InvalidRequest) as ctx:
            systemone.parse({"model": "m", "state": "s", "questions": {
                f"n{i}": q for i in range(3)}}, None, SERVED)
        self.assertIn("at most 2 number questions", ctx.exception.problems[0].msg)
        with self.assertRaises(InvalidRequest) as ctx:
            decisions.parse({"model": "m", "input": "x", "questions": [q]}, None, SERVED)
        status, err = decisions.render_error(ctx.exception)
        self.assertEqual((status, err["error"]["param"]), (400, "questions[0].type"))
        self.assertIn("/v1/systemone", err["error"]["message"])


class TestNumbersInParts(unittest.TestCase):
    def test_numbers_need_no_read_and_fold_back_in_place(self):
        """fit.split and generate.fold: a number between two read questions is left out of the reads; its answer,
        tokens and prompt count come from its generation, in the request's place; a selection
        of the second read question is reported under its request index."""
        yes = (Option("true", None), Option("false", None))
        d = Decision("m", "s", (Question(NOUL, "A?", yes), Question(NUMBER, "How many?", ()),
                                Question(NOUL, "B?", yes)))
        s = fit.split(Record(decision=d, job=JOB))
        self.assertEqual((s.position, s.own), ((0, None, 1), 2))
        self.assertEqual([p.generation is not None for p in s.plans], [False, True, False])
        self.assertEqual(s.plans[1].generation.structured, number.constraint())
        self.assertEqual([q.instructions for q in s.reads.questions], ["A?", "B?"])
        first = Answer(NOUL, (0.7, 0.3), 0.0, 0, 0.7)
        second = Answer(NOUL, (0.2, 0.8), 0.0, 1, 0.2)
        reads = Outcome((first, second), 50, "causal",
                        effort=Effort(selections=(Selection(1, 5, 9, "bm25"),)))
        out = generate.fold(replace(s, outcome=reads),
                            {1: Generated("12", [("12", -0.1), ("", 0.0)], False, 30)})
        self.assertEqual(out.answers[0], first)
        self.assertEqual(out.answers[2], second)
        self.assertEqual(out.answers[1].payload, number.Written(12.0, "12"))
        self.assertEqual((out.num_input_tokens, out.output_tokens), (80, 2))
        self.assertEqual([sel.question for sel in out.effort.selections], [2])


if __name__ == "__main__":
    unittest.main()
