"""Stdlib-only tests of the response's x_ extensions (onepass/api/effort.py): x_effort_used
names the re-read, each question's thought, option sets read as listings and each cut state;
x_thoughts only when traced. Run: python3 -S -m unittest tests.unit.api.test_effort
"""
import unittest

from onepass.api import effort
from onepass.decision_model import Effort
from onepass.prompt.fitting import Selection
from onepass.decision_model import Spent, Thought


def key(i):
    return {"question": f"q{i}"}


class TestExtensions(unittest.TestCase):
    def test_nothing_done_beyond_a_read_says_nothing(self):
        """extensions: none for a plain outcome; reasoning off is not reported."""
        plain = Effort(reasoning=Spent("off"))
        self.assertEqual(effort.extensions(plain, 1, key), {})
        self.assertIsNone(effort.effort_used(plain, 1, key))
        self.assertIsNone(effort.effort_used(Effort(), 1, key))

    def test_effort_names_reread_reasoning_and_cuts(self):
        """effort_used: the re-read's threshold, each question's thought, each cut state."""
        spent = Spent("auto", 64, (Thought(1, "hmm", 12, True),), trace=True)
        out = Effort(rereads=1, reread_below=0.6, selections=(Selection(1, 40, 90, "head_tail"),),
                     listed=(0,), reasoning=spent)
        self.assertEqual(effort.extensions(out, 2, key), {
            "x_effort_used": {
                "reread": {"below": 0.6, "first_weight": 0.6667, "questions": 1},
                "reasoning": {"mode": "auto", "token_cap": 64, "questions": [
                    {"question": "q0", "thought": False, "tokens": 0, "cut": False},
                    {"question": "q1", "thought": True, "tokens": 12, "cut": True}]},
                "options_listed": [{"question": "q0"}],
                "state_selection": [{"question": "q1", "kept_tokens": 40, "total_tokens": 90,
                                     "method": "head_tail"}]},
            "x_thoughts": [{"question": "q1", "text": "hmm"}]})

    def test_thoughts_only_when_traced(self):
        """traced_thoughts: None without trace; with trace and no thought, an empty list."""
        thought = (Thought(0, "t", 1, False),)
        self.assertIsNone(effort.traced_thoughts(Effort(reasoning=Spent("on", 8, thought)), key))
        traced = Effort(reasoning=Spent("on", 8, (), True))
        self.assertEqual(effort.extensions(traced, 1, key)["x_thoughts"], [])


if __name__ == "__main__":
    unittest.main()
