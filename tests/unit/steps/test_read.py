"""Stdlib-only tests of the read step (onepass/steps/read.py) on the stub engine of
test_engine_calls.py,
which counts a token per byte and refuses two-way reads over its budget as the plugin does: the
fitted reads are sent once, and a refusal for the one-step budget is fitted to the budget it
taught and read again (plumbing only: what vLLM answers is tested live).
Run: python3 -S -m unittest tests.unit.steps.test_read
"""
import unittest

from onepass.steps import fit, read as reads  # reads: the module, read: its step
from onepass.decision_model import TWO_WAY
from tests.support.build_decision import decision, resolved
from tests.support.records import record
from tests.support.unit_profile import PROFILE
from tests.unit.steps.test_fit import reader
from tests.unit.steps.test_engine_calls import NOUL_Q


class TestReads(unittest.TestCase):
    def test_the_fitted_reads_are_sent_once(self):
        r = reader()
        s = reads.read(fit.fit(record(resolved(decision([NOUL_Q], "ticket"), PROFILE), r)))
        self.assertEqual((len(r.engine.calls), len(s.results)), (1, 1))

    def test_a_one_step_refusal_is_fitted_to_the_budget_it_taught(self):
        r = reader(budget=600)
        d = resolved(decision([NOUL_Q], "ticket " * 300, attention_mode=TWO_WAY), PROFILE)
        s = fit.fit(record(d, r))
        self.assertIsNone(s.known)  # nothing learnt yet: fitted to the context
        s = reads.read(s)
        self.assertEqual(len(r.engine.calls), 2)
        self.assertLessEqual(len(s.fitted[0].prompt.encode()), 600)
        self.assertEqual(len(s.results), 1)


if __name__ == "__main__":
    unittest.main()
