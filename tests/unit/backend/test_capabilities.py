"""The rule for an optional engine capability the start-up probes did not prove
(onepass/backend/capabilities.py): off with a warning, a problem only where the profile needs it;
vLLM's 4xx and the shim's request refusals count as refused, an engine failure does not.
Run: python3 -S -m unittest tests.unit.backend.test_capabilities
"""
import logging
import unittest

from onepass.backend import capabilities
from onepass.errors import (EngineFailed, EngineRefused, EngineUnavailable, InvalidRequest,
                            OverBudget)


class TestOff(unittest.TestCase):
    def test_needed_is_the_guards_problem_and_nothing_is_logged(self):
        with self.assertNoLogs("onepass", logging.WARNING):
            self.assertEqual(capabilities.off("option sets", "vLLM refused it", True),
                             "this profile needs option sets, but vLLM refused it")

    def test_not_needed_is_a_warning_and_no_problem(self):
        with self.assertLogs("onepass", logging.WARNING) as logs:
            self.assertEqual(capabilities.off("two-way reading", "no plugin", False), "")
        self.assertEqual(logs.output, ["WARNING:onepass:two-way reading off on this server: "
                                       "no plugin"])

    def test_what_counts_as_refused(self):
        for refused in (EngineRefused, InvalidRequest, OverBudget):
            self.assertTrue(issubclass(refused, capabilities.REFUSED), refused)
        for failure in (EngineFailed, EngineUnavailable):
            self.assertFalse(issubclass(failure, capabilities.REFUSED), failure)


if __name__ == "__main__":
    unittest.main()
