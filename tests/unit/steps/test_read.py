"""Stdlib-only tests of the reads step (onepass/reads.py) on the stub engine of test_reader.py,
which counts a token per byte and refuses two-way reads over its budget as the plugin does: the
fitted reads are sent once, and a refusal for the one-step budget is fitted to the budget it
taught and read again (plumbing only: what vLLM answers is tested live).
Run: python3 -S -m unittest tests.unit.steps.test_read
"""
import unittest

from onepass.steps import fit, read as reads
from onepass.decision_model import TWO_WAY
from tests.support.build_decision import decision, resolved
from tests.support.unit_profile import PROFILE
from tests.unit.steps.test_fit import JOB, reader
from tests.unit.steps.test_engine_calls import NOUL_Q


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
