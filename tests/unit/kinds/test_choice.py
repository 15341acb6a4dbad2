"""Stdlib-only tests of the choice kind (onepass/kinds/choice.py): its listings (rotations in
one prompt, each copy with labels of its own while the labels last), the refusal past the
labels, its answer and confidence, and its renderings. Every cyclic order, reversals and the
two-option tie are tested in test_directions.py; the confidence formula's values in
test_shim.py (test_confidence_formulas).
Run: python3 -S -m unittest tests.unit.kinds.test_choice
"""
import unittest

from onepass.decision_model import Option, Question
from onepass.errors import InvalidRequest
from onepass.kinds import choice
from onepass.profile import Layout
from tests.support.unit_profile import LABELS

KIND = choice.KIND


def question(*keys, texts=None):
    texts = texts or [None] * len(keys)
    return Question("choice", "Team?", tuple(Option(k, t) for k, t in zip(keys, texts)))


class TestListings(unittest.TestCase):
    def test_a_second_order_is_a_rotation_with_its_own_labels(self):
        """listings: orders=2 of 4 options: copy 2 starts at option 2, labels E-H, its heading."""
        q = question("a", "b", "c", "d", texts=["first", None, None, None])
        (lines, pairs, option_of_label, order), = KIND.listings(q, LABELS, Layout(orders=2))
        self.assertEqual(option_of_label, (0, 1, 2, 3, 2, 3, 0, 1))
        self.assertEqual(order, (0, 0, 0, 0, 1, 1, 1, 1))
        self.assertEqual(pairs, LABELS.choice[:8])
        self.assertEqual(lines, ["Question: Team?", "Options:", "A. a: first", "B. b", "C. c",
                                 "D. d", "The same options again, in another order:", "E. c",
                                 "F. d", "G. a: first", "H. b",
                                 "Reply with the label of the best option only."])

    def test_copies_stop_when_the_labels_run_out(self):
        """listings: 20 options in 2 orders with 26 labels: one copy fits, so one listing."""
        q = question(*(f"o{i}" for i in range(20)))
        (lines, pairs, option_of_label, order), = KIND.listings(q, LABELS, Layout(orders=2))
        self.assertEqual((len(pairs), set(order)), (20, {0}))
        self.assertEqual(option_of_label, tuple(range(20)))
        self.assertNotIn("The same options again, in another order:", lines)

    def test_more_options_than_labels_is_refused(self):
        """listings: 27 options with 26 labels is a 422 saying the server's cap."""
        with self.assertRaises(InvalidRequest) as ctx:
            KIND.listings(question(*(f"o{i}" for i in range(27))), LABELS, Layout())
        self.assertIn("at most 26 options per choice", ctx.exception.problems[0].msg)

    def test_orders_as_reads_index_each_read(self):
        """listings: orders=3 as reads of 3 options: one read per rotation, order index 0..2."""
        reads = KIND.listings(question("x", "y", "z"), LABELS,
                              Layout(orders=3, orders_as_reads=True))
        self.assertEqual([r[2] for r in reads], [(0, 1, 2), (1, 2, 0), (2, 0, 1)])
        self.assertEqual([r[3] for r in reads], [(0, 0, 0), (1, 1, 1), (2, 2, 2)])
        self.assertEqual({r[1] for r in reads}, {LABELS.choice[:3]})  # each read: A, B, C


class TestAnswer(unittest.TestCase):
    def test_the_most_probable_option_and_its_confidence(self):
        """answer: best is the top option; confidence (0.6 - 1/3) / (2/3) = 0.4."""
        a = KIND.answer([0.1, 0.6, 0.3], question("x", "y", "z"))
        self.assertEqual((a.kind, a.best, a.payload, a.probabilities), ("choice", 1, None,
                                                                        (0.1, 0.6, 0.3)))
        self.assertAlmostEqual(a.confidence, 0.4, places=12)

    def test_the_contract_confidence_formula(self):
        """confidence: (top - 1/n) / (1 - 1/n): 0.88 of two is 0.76, uniform 0, one option 1."""
        self.assertAlmostEqual(choice.confidence([0.88, 0.12]), 0.76, places=12)
        self.assertAlmostEqual(choice.confidence([1 / 3] * 3), 0.0, places=12)
        self.assertEqual(choice.confidence([1.0]), 1.0)

    def test_a_three_way_tie_goes_to_the_smallest_key(self):
        """answer: tied at the top among later options, the smallest key wins ('b' at 2)."""
        a = KIND.answer([0.2, 0.4, 0.4], question("m", "z", "b"))
        self.assertEqual(a.best, 2)

    def test_renderings_on_both_apis(self):
        """systemone.answer keys by option; decisions.answer echoes the typed values."""
        q = question("true", "true-ish")
        a = KIND.answer([0.75, 0.25], q)
        self.assertEqual(KIND.systemone.answer(q, a, None), {
            "type": "choice", "choice": "true", "probabilities": {"true": 0.75, "true-ish": 0.25},
            "confidence": 0.5})
        self.assertEqual(KIND.decisions.answer("team", (True, "true-ish"), a), {
            "type": "choice", "name": "team", "choice": True, "confidence": 0.5,
            "probabilities": [{"value": True, "probability": 0.75},
                              {"value": "true-ish", "probability": 0.25}]})


if __name__ == "__main__":
    unittest.main()
