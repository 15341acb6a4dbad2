"""Stdlib-only tests of the fit step (onepass/fit.py) on a stub engine that counts a token per
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
from onepass.decision_model import NUMBER, Page, Question
from onepass.errors import InvalidRequest
from onepass.kinds.base import Job
from onepass.steps.engine_calls import Reader
from tests.support.build_decision import decision, resolved
from tests.unit.steps.test_engine_calls import NOUL_Q, StubEngine
from tests.support.unit_profile import LABELS, PROFILE

SETTINGS = config.load(["--port", "0"], environ={})
JOB = Job((), PROFILE, SETTINGS, LABELS)


def reader(budget=10 ** 9) -> Reader:
    return Reader(PROFILE, Facts(LABELS, 100_000, True, ""), StubEngine(budget))


class TestSplit(unittest.TestCase):
    def test_first_reads_in_order_then_the_parts_and_a_page_of_them(self):
        """A number between two yes/no questions has no read; the reads' Page is the request's
        state, mode, techniques and images with the read questions (no model, no calibration)."""
        number = Question(NUMBER, "Which order?", ())
        d = resolved(decision([NOUL_Q, number, NOUL_Q], "ticket"), PROFILE)
        s = fit.split(d, JOB)
        self.assertEqual((s.position, s.parts), ((0, None, 1), ((), (), ())))
        self.assertEqual(s.reads, Page(d.state, (NOUL_Q, NOUL_Q), d.attention_mode, d.layout,
                                       d.images))
        self.assertEqual((s.own, s.fixed), (2, frozenset()))


class TestFit(unittest.TestCase):
    def test_over_the_work_budget_nothing_is_fitted(self):
        r = reader()
        d = resolved(decision([NOUL_Q] * 3, "ticket"), PROFILE)
        with self.assertRaises(InvalidRequest):
            fit.plan(d, JOB, r, max_reads=2)
        self.assertEqual(r.engine.calls, [])

    def test_label_reads_are_fitted_and_a_generation_only_request_fits_none(self):
        d = resolved(decision([NOUL_Q, NOUL_Q], "ticket"), PROFILE)
        s = fit.plan(d, JOB, reader(), max_reads=10)
        self.assertEqual((len(s.fitted), s.known, s.asked), (2, None, d))
        number = Question(NUMBER, "Which order?", ())
        s = fit.plan(resolved(decision([number], "ticket"), PROFILE), JOB, reader(), 10)
        self.assertEqual((s.reads.questions, s.fitted, s.results), ((), (), ()))
        self.assertEqual(reads.read(s, reader()), s)  # nothing to read: no engine call


if __name__ == "__main__":
    unittest.main()
