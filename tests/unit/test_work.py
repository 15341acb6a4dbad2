"""One work budget per request (onepass/work.py): every call of the model a request may
make (label reads, box presents and edges, thoughts, the reads after them, box and number
generations) is counted before the first, against --max-reads as a total; over it is a 422 with no
call made, and a request within it makes no more calls than it was counted for.
Run: python3 -m unittest tests.unit.test_work
"""
import unittest
from concurrent.futures import Future
from dataclasses import replace

from onepass import config, work
from onepass.steps import fit
from onepass.steps.record import Record
from onepass.backend.engine import MAX_LOGPROB_TOKEN_IDS
from onepass.backend.probes import Facts
from onepass.images.formats import Image
from onepass.kinds.base import Job
from onepass.kinds.box import Asked
from onepass.profile import Vision
from onepass.decision_model import (Decision, Generated, Option,
                                    Question, ReadResult)
from tests.support.kind_names import BOX, CHOICE, NOUL, NUMBER
from onepass.errors import InvalidRequest
from onepass.prompt.layout import LabelSet
from onepass.pipeline import AT_ENGINE, Pipeline
from onepass.reasoning import Ask
from tests.support.build_decision import decision, resolved
from tests.support.unit_profile import LABELS, PROFILE

YES = (Option("true", None), Option("false", None))
AB = (Option("a", None), Option("b", None))
AS_READS = config.Layout(orders=2, orders_as_reads=True)


class CountingEngine:
    """Every call the pipeline makes, by kind: label reads (a call per slice of 128 label ids,
    as Engine.read makes them) and
    generations (each submit one); answers are constants (never read for content)."""

    def __init__(self):
        self.reads, self.generations, self.two_way_budget = 0, 0, None

    def count(self, texts, sep=None, calls=None):
        return [len(t.encode()) // 4 for t in texts]

    def read_all(self, reads):
        self.reads += sum(-(-len(r.label_token_ids) // MAX_LOGPROB_TOKEN_IDS) for r in reads)
        return [ReadResult(tuple(-1.0 for _ in r.label_token_ids), 10) for r in reads]

    def submit(self, fn, *args):
        self.generations += 1
        done = Future()
        done.set_result(Generated("12", [("12", -0.1)], False, 10))
        return done

    @property
    def calls(self) -> int:
        return self.reads + self.generations


def pipeline(max_reads: int, labels=LABELS) -> Pipeline:
    settings = config.load(["--port", "0", "--max-reads", str(max_reads)], environ={})
    pipe = Pipeline(settings, CountingEngine(), None, Facts(labels, 100_000, False, ""))
    pipe.serving.calls.profile = PROFILE
    pipe.serving = replace(pipe.serving, profile=PROFILE)
    return pipe


def answer(pipe: Pipeline, d: Decision):
    """Pipeline.decide's steps at the engine (fit to generate), after what resolve fixes (the
    profile's layout and calibration): a Decision built here has no body to parse."""
    r = Record(pipe.serving, decision=resolved(d, PROFILE))
    for step in AT_ENGINE:
        r = step(r)
    return r.outcome


def split(d: Decision, labels=LABELS) -> Record:
    settings = config.load(["--port", "0"], environ={})
    return fit.split(Record(decision=resolved(d, PROFILE),
                            job=Job(d.images, PROFILE, settings, labels)))


def choices(n: int, reasoning=None, layout=AS_READS) -> Decision:
    return decision((Question(CHOICE, f"q{i}?", AB) for i in range(n)), "ticket",
                    layout=layout, reasoning=reasoning)


def calls(d, s, labels) -> work.Calls:
    """The plan the fit step counts for Decision d split as s."""
    return work.plan(s.reads, s.plans, d.questions, d.reasoning, labels)


class TestWorkBudget(unittest.TestCase):
    def test_the_issues_request_is_refused_before_any_call(self):
        """400 choices read in two orders as reads (exactly 800 reads) with reasoning on made
        1,600 label reads and 400 thoughts: now a 422 naming the total, and no call."""
        pipe = pipeline(800)
        with self.assertRaises(InvalidRequest) as ctx:
            answer(pipe, choices(400, Ask("on")))
        self.assertIn("needs up to 2000 calls of the model (800 reads, 400 thoughts, 800 "
                      "reads after them, 0 generations); this server makes at most 800",
                      ctx.exception.problems[0].msg)
        self.assertEqual(pipe.engine.calls, 0)

    def test_within_the_budget_every_call_is_counted(self):
        """A request planned at exactly the limit is answered, in at most that many calls; one
        question more is a 422 with no call. Auto counts every question that may think."""
        for mode in ("on", "auto"):
            with self.subTest(mode):
                pipe = pipeline(20)  # 5 choices: 10 reads, 5 thoughts, 10 reads again = 25
                with self.assertRaises(InvalidRequest):
                    answer(pipe, choices(5, Ask(mode)))
                self.assertEqual(pipe.engine.calls, 0)
                pipe = pipeline(16)  # 4 choices: 8 + 4 + 8 = 20 > 16; 3: 6 + 3 + 6 = 15
                answer(pipe, choices(3, Ask(mode)))
                self.assertLessEqual(pipe.engine.calls, 15)

    def test_numbers_and_thoughts_on_them(self):
        numbers = tuple(Question(NUMBER, f"n{i}?", ()) for i in range(3))
        d = decision(numbers + (Question(NOUL, "y?", YES),), "ticket", reasoning=Ask("on"))
        self.assertEqual(calls(d, split(d), LABELS),
                         work.Calls(reads=1, thoughts=4, rereads=1, generations=3))
        pipe = pipeline(8)
        with self.assertRaises(InvalidRequest):
            answer(pipe, d)
        self.assertEqual(pipe.engine.calls, 0)
        pipe = pipeline(9)
        answer(pipe, d)
        self.assertLessEqual(pipe.engine.calls, 9)

    def test_box_presents_edges_and_generations_count(self):
        box = Question(BOX, "the red circle", (), params=Asked("hybrid"))
        d = decision((box, Question(NOUL, "y?", YES)), images=(Image(b"", "png", 64, 48),))
        vision = replace(PROFILE, vision=Vision("<image>", ("<image>",), 64, box={
            "convention": {"units": "grid", "order": "xyxy", "scale": 1000},
            "confidence": {"a": 1.0, "b": 0.0}, "present_temperature": 1.0}))
        job = Job(d.images, vision, config.load(["--port", "0"], environ={}), LABELS)
        s = fit.split(Record(decision=resolved(d, PROFILE), job=job))
        self.assertEqual(calls(d, s, LABELS),
                         work.Calls(reads=1 + 4 + 1, thoughts=0, rereads=0, generations=1))

    def test_a_read_of_more_labels_than_one_call_returns_counts_each_slice(self):
        """vLLM returns at most 128 label ids per call: a choice of 200 options is read in two
        calls, and the plan counts both (it counted one read)."""
        many = LabelSet(noul=LABELS.noul, score=LABELS.score,
                        choice=tuple((f"L{i}", 1000 + i) for i in range(255)))
        options = tuple(Option(f"o{i}", None) for i in range(200))
        d = decision((Question(CHOICE, "which?", options),))
        self.assertEqual(calls(d, split(d, many), many),
                         work.Calls(reads=2, thoughts=0, rereads=0, generations=0))
        pipe = pipeline(1, many)
        with self.assertRaises(InvalidRequest):
            answer(pipe, d)
        self.assertEqual(pipe.engine.calls, 0)
        pipe = pipeline(2, many)
        answer(pipe, d)
        self.assertEqual(pipe.engine.calls, 2)

    def test_an_optional_reread_only_from_the_spare(self):
        """calibration.reread_below re-reads from what the plan leaves, never past the limit."""
        unsure = replace(PROFILE.calibration, reread_below=1.0)  # every choice is unsure
        for limit, calls in ((2, 2), (3, 2), (4, 4), (9, 4)):
            with self.subTest(limit=limit):
                pipe = pipeline(limit)
                answer(pipe, replace(choices(2, layout=config.Layout()), calibration=unsure))
                self.assertEqual(pipe.engine.calls, calls)


if __name__ == "__main__":
    unittest.main()
