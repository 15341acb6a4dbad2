"""Stdlib-only tests of the fit and reads steps (onepass/fit.py, onepass/reads.py) on a stub
engine that counts a token per byte and refuses two-way reads over its budget as the plugin does:
the work budget is refused before anything is fitted, a request without label reads fits
nothing, the fitted reads are sent once, and a refusal for the one-step budget is fitted to
the budget it taught and read again (plumbing only: what vLLM answers is tested live).
Run: python3 -S -m unittest tests.unit.test_fit_reads
"""
import unittest

from onepass import config, fit, reads
from onepass.backend.probes import Facts
from onepass.decision import NUMBER, TWO_WAY, Option, Question
from onepass.errors import InvalidRequest
from onepass.kinds.base import Job
from onepass.reader import Reader
from tests.support.build_decision import decision, resolved
from tests.unit.test_reader import NOUL_Q, StubEngine
from tests.support.unit_profile import LABELS, PROFILE

SETTINGS = config.load(["--port", "0"], environ={})
JOB = Job((), PROFILE, SETTINGS, LABELS)


def reader(budget=10 ** 9) -> Reader:
    return Reader(PROFILE, Facts(LABELS, 100_000, True, ""), StubEngine(budget))


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


class TestReads(unittest.TestCase):
    def test_the_fitted_reads_are_sent_once(self):
        r = reader()
        s = reads.read(fit.plan(resolved(decision([NOUL_Q], "ticket"), PROFILE), JOB, r, 10), r)
        self.assertEqual((len(r.engine.calls), len(s.results)), (1, 1))

    def test_a_one_step_refusal_is_fitted_to_the_budget_it_taught(self):
        r = reader(budget=600)
        d = resolved(decision([NOUL_Q], "ticket " * 300, attention_mode=TWO_WAY), PROFILE)
        s = fit.plan(d, JOB, r, 10)
        self.assertIsNone(s.known)  # nothing learnt yet: fitted to the context
        s = reads.read(s, r)
        self.assertEqual(len(r.engine.calls), 2)
        self.assertLessEqual(len(s.fitted[0].prompt.encode()), 600)
        self.assertEqual(len(s.results), 1)


if __name__ == "__main__":
    unittest.main()
