"""Stdlib-only tests of the fit step (onepass/steps/fit.py) on a stub engine that counts a token per
byte: the split (first reads in request order, then every further read; the reads' Page shows
the request's state, mode, techniques and images, nothing else), the work budget refused
before anything is fitted, and a request without label reads fitting nothing (plumbing only:
what vLLM answers is tested live).
Run: python3 -S -m unittest tests.unit.steps.test_fit
"""
import unittest

from onepass import config
from onepass.steps import fit, read as reads  # reads: nothing to read sends nothing
from onepass.backend.probes import Facts
from onepass.decision_model import Page, Question
from tests.support.kind_names import NUMBER
from onepass.errors import InvalidRequest
from onepass.kinds.base import Job
from onepass.steps.engine_calls import EngineCalls
from tests.support.build_decision import decision, resolved
from tests.support.records import record
from tests.unit.steps.test_engine_calls import NOUL_Q, StubEngine
from tests.support.unit_profile import LABELS, PROFILE

SETTINGS = config.load(["--port", "0"], environ={})
JOB = Job((), PROFILE, SETTINGS, LABELS)


def max_reads(n: int):
    return config.load(["--port", "0", "--max-reads", str(n)], environ={})


def reader(budget=10 ** 9) -> EngineCalls:
    return EngineCalls(PROFILE, Facts(LABELS, 100_000, True, ""), StubEngine(budget))


class TestSplit(unittest.TestCase):
    def test_first_reads_in_order_then_the_parts_and_a_page_of_them(self):
        """A number between two yes/no questions has no read; the reads' Page is the request's
        state, mode, techniques and images with the read questions (no model, no calibration)."""
        number = Question(NUMBER, "Which order?", ())
        d = resolved(decision([NOUL_Q, number, NOUL_Q], "ticket"), PROFILE)
        s = fit.split(record(d, job=JOB))
        self.assertEqual((s.position, s.parts), ((0, None, 1), ((), (), ())))
        self.assertEqual(s.reads, Page(d.state, (NOUL_Q, NOUL_Q), d.attention_mode, d.layout,
                                       d.images))
        self.assertEqual((s.own, s.fixed), (2, frozenset()))


class TestFit(unittest.TestCase):
    def test_over_the_work_budget_nothing_is_fitted(self):
        r = reader()
        d = resolved(decision([NOUL_Q] * 3, "ticket"), PROFILE)
        with self.assertRaises(InvalidRequest):
            fit.fit(record(d, r, max_reads(2)))
        self.assertEqual(r.engine.calls, [])

    def test_label_reads_are_fitted_and_a_generation_only_request_fits_none(self):
        d = resolved(decision([NOUL_Q, NOUL_Q], "ticket"), PROFILE)
        s = fit.fit(record(d, reader()))
        self.assertEqual((len(s.fitted), s.known, s.decision), (2, None, d))
        number = Question(NUMBER, "Which order?", ())
        r = reader()
        s = fit.fit(record(resolved(decision([number], "ticket"), PROFILE), r))
        self.assertEqual((s.reads.questions, s.fitted, s.results), ((), (), ()))
        self.assertEqual(reads.read(s), s)  # nothing to read: no engine call
        self.assertEqual(r.engine.calls, [])


if __name__ == "__main__":
    unittest.main()
