"""Stdlib-only tests of what every kind inherits (onepass/kinds/base.py): the default hooks of
the decision path (plan: one read of itself; combine: that read's answer; limit: no cap, no
refusal; calibrate: nothing), the required hooks unimplemented, and the shared helpers (the
generation refusal, best, option listings, the criteria and entries checks).
Run: python3 -S -m unittest tests.unit.kinds.test_base
"""
import unittest

from onepass.api.checks import Checker
from onepass.decision import Answer, Option, Question
from onepass.kinds import base


class Bare(base.Kind):
    """A kind that overrides nothing."""
    name, systemone, decisions = "bare", "bare", None


Q = Question("bare", "Which?", (Option("x", None), Option("y", "why")))


class TestDefaults(unittest.TestCase):
    def test_plan_reads_the_question_once(self):
        """plan: one label read of the question itself, no generation."""
        self.assertEqual(Bare().plan(Q, None), base.Plan(reads=(Q,), generation=None))

    def test_combine_is_its_one_reads_answer(self):
        """combine: the first read's answer, whatever the generation."""
        first, other = (Answer("bare", (0.3, 0.7), 0.4, 0.0, 1),
                        Answer("bare", (0.9, 0.1), 0.8, 0.0, 0))
        self.assertIs(Bare().combine(Q, [first, other], ("text", [], False, 3), None), first)

    def test_limit_caps_nothing_and_refuses_nothing(self):
        """limit: no per-request cap beyond max_questions, no refusal."""
        self.assertEqual(Bare().limit(None, None), base.Limit(most=None, refusal=None))

    def test_the_remaining_defaults(self):
        """calibrate returns its input; extras, legend are empty; the required hooks raise."""
        probs = [0.2, 0.8]
        kind = Bare()
        self.assertIs(kind.calibrate(probs, None), probs)
        self.assertEqual(kind.systemone_extras({}, (), None, {}), {})
        self.assertIsNone(kind.systemone_legend({"criteria": [1]}))
        self.assertEqual((kind.reads, kind.rereads, kind.thinks), (True, True, "unsure"))
        for hook, args in (("listings", (Q, None, None)), ("answer", (probs, Q)),
                           ("labels_ok", ((),)), ("warmup_body", ("s",))):
            with self.assertRaises(NotImplementedError, msg=hook):
                getattr(kind, hook)(*args)


class TestHelpers(unittest.TestCase):
    def test_generation_refusal_quotes_the_start_up_check(self):
        """generation_refusal: None when structured outputs passed; else the reason, quoted."""
        self.assertIsNone(base.generation_refusal("year", ""))
        said = base.generation_refusal("year", "xgrammar missing")
        self.assertTrue(said.startswith("year questions need vLLM's structured outputs"))
        self.assertIn("at start-up: xgrammar missing;", said)

    def test_best_is_the_first_highest(self):
        """best: the index of the largest probability, the first one on a tie."""
        self.assertEqual(base.best([0.1, 0.5, 0.4]), 1)
        self.assertEqual(base.best([0.4, 0.2, 0.4]), 0)

    def test_listed_lines_without_instructions(self):
        """listed_lines: no question line without instructions; each listing under its heading."""
        q = Question("bare", None, Q.options)
        lines = base.listed_lines(q, [((("P", 1), ("Q", 2)), (1, 0))], "Pick:", "P or Q",
                                  lambda o: o.text or o.key)
        self.assertEqual(lines, ["Pick:", "P. why", "Q. x", "Reply with P or Q only."])

    def test_criteria_and_entries_checks(self):
        """is_criteria and entries: one problem each, typed missing / dict_type / array_length."""
        check = Checker()
        self.assertFalse(base.is_criteria(None, dict, ("c",), check, "an object"))
        self.assertFalse(base.is_criteria([], dict, ("d",), check, "an object"))
        self.assertTrue(base.is_criteria({}, dict, ("e",), check, "an object"))
        self.assertEqual(base.entries([{}], ("f",), check, 2, 3, "levels"), [])
        self.assertEqual(base.entries([{}, 1], ("g",), check, 2, 3, "levels"), [])
        self.assertEqual(base.entries([{}, {}], ("h",), check, 2, 3, "levels"), [{}, {}])
        self.assertEqual([(p.loc, p.type) for p in check.problems],
                         [(("c",), "missing"), (("d",), "dict_type"), (("f",), "array_length"),
                          (("g", 1), "invalid_type")])

    def test_unknown_fields_and_descriptions(self):
        """unknown_fields names each extra key, sorted; described refuses a non-string."""
        check = Checker()
        base.unknown_fields({"value": 1, "zz": 0, "aa": 0}, {"value"}, ("x", 0), check)
        base.described({"description": 5}, ("x", 1), check)
        base.described({"description": None}, ("x", 2), check)
        self.assertEqual([p.loc for p in check.problems],
                         [("x", 0, "aa"), ("x", 0, "zz"), ("x", 1, "description")])


if __name__ == "__main__":
    unittest.main()
