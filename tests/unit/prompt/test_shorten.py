"""Shortening a question too long for its read even with no state (onepass/prompt/shorten.py):
the instructions are halved first, the option descriptions only when that is not enough; keys
and their order stay; texts past max_chars are cut before any counting.
Run: python3 -S -m unittest tests.unit.prompt.test_shorten
"""
import unittest

from onepass.decision_model import Option, Question
from onepass.prompt.shorten import shorten
from onepass.prompt.state_parts import GAP
from tests.support.kind_names import CHOICE


def size(q: Question) -> int:
    return len(q.instructions or "") + sum(len(o.key) + len(o.text or "") for o in q.options)


def question(instructions: str, descriptions: int) -> Question:
    return Question(CHOICE, instructions, tuple(Option(k, "d" * descriptions)
                                                for k in ("billing", "tech", "sales")))


class TestShorten(unittest.TestCase):
    def test_instructions_go_first(self):
        q = question("i" * 4000, 20)
        out = shorten(q, lambda c: size(c) <= 1000, 100_000)
        self.assertLessEqual(size(out), 1000)
        self.assertTrue(out.instructions.endswith(" " + GAP))
        self.assertEqual(out.options, q.options)  # the descriptions were not needed

    def test_then_the_descriptions_keys_kept(self):
        q = question("i" * 4000, 2000)
        out = shorten(q, lambda c: size(c) <= 1500, 100_000)
        self.assertLessEqual(size(out), 1500)
        self.assertEqual([o.key for o in out.options], ["billing", "tech", "sales"])
        self.assertTrue(all(o.text is None or o.text.endswith(GAP) for o in out.options))

    def test_nothing_fits_leaves_the_keys_alone(self):
        out = shorten(question("i" * 50, 50), lambda c: False, 100_000)
        self.assertEqual([(o.key, o.text) for o in out.options],
                         [("billing", None), ("tech", None), ("sales", None)])

    def test_long_texts_are_cut_before_counting(self):
        seen = []
        shorten(question("i" * 1_000_000, 1_000_000), lambda c: seen.append(size(c)) or True, 500)
        self.assertLessEqual(max(seen), 4 * (500 + len(GAP) + 1) + 20)


if __name__ == "__main__":
    unittest.main()
