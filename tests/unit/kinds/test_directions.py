"""Order-robust reads (issue 24): every cyclic order of a choice's options and each of them
reversed, a score's levels both ways, and ties that never follow the listing."""
import unittest

from onepass import work
from onepass.decision_model import Option, Question
from onepass.kinds import choice, score
from onepass.profile import Layout
from onepass.prompt.layout import LabelSet

LABELS = LabelSet(choice=[(chr(65 + i), 100 + i) for i in range(26)],
                  score=[(str(i), 10 + i) for i in range(10)], noul=[("Yes", 1), ("No", 2)])
BOTH = Layout(orders=8, orders_as_reads=True, both_directions=True)


def listed(q, opts):
    """Each read's options in listing order, by key."""
    return [tuple(q.options[o].key for o in option_of_label)
            for _, _, option_of_label, _ in choice.KIND.listings(q, LABELS, opts)]


class Directions(unittest.TestCase):
    def test_a_reversed_request_reads_the_same_listings(self):
        keys = ("billing", "tech", "sales", "legal")
        forward = Question("choice", "Which team?", tuple(Option(k, None) for k in keys))
        backward = Question("choice", "Which team?", tuple(Option(k, None) for k in keys[::-1]))
        self.assertEqual(len(listed(forward, BOTH)), 8)
        self.assertEqual(sorted(listed(forward, BOTH)), sorted(listed(backward, BOTH)))
        self.assertEqual(work.read_calls([forward], LABELS, BOTH), 8)  # the budget counts them
        one_way = Layout(orders=8, orders_as_reads=True)
        self.assertNotEqual(sorted(listed(forward, one_way)), sorted(listed(backward, one_way)))

    def test_two_options_are_not_read_twice(self):
        """Both ways, the reversal of a two-option listing is its other cyclic order: read once.
        With one order, the reversal is a read of its own."""
        q = Question("choice", "?", (Option("yes", None), Option("no", None)))
        self.assertEqual(listed(q, BOTH), [("yes", "no"), ("no", "yes")])
        self.assertEqual(work.read_calls([q], LABELS, BOTH), 2)
        one = Layout(orders=1, orders_as_reads=True, both_directions=True)
        self.assertEqual(listed(q, one), [("yes", "no"), ("no", "yes")])

    def test_each_read_has_its_own_order_index(self):
        q = Question("choice", "?", tuple(Option(k, None) for k in "xyz"))
        orders = [set(o) for *_, o in choice.KIND.listings(q, LABELS, BOTH)]
        self.assertEqual([min(o) for o in orders], list(range(6)))

    def test_score_levels_both_ways_keep_their_labels(self):
        q = Question("score", None, tuple(Option(str(i), t) for i, t in
                                          enumerate(("calm", "annoyed", "furious"))))
        (up, pairs_up, levels_up, _), (down, pairs_down, levels_down, _) = \
            score.KIND.listings(q, LABELS, BOTH)
        self.assertEqual(up[0:3], ["Levels, lowest first:", "0. calm", "1. annoyed"])
        self.assertEqual(down[0:3], ["Levels, highest first:", "2. furious", "1. annoyed"])
        self.assertEqual(dict(zip(levels_down, pairs_down)), dict(zip(levels_up, pairs_up)))
        self.assertEqual(work.read_calls([q], LABELS, BOTH), 2)
        self.assertEqual(work.read_calls([q], LABELS, Layout()), 1)

    def test_a_tie_goes_to_the_smallest_key_whatever_the_order(self):
        ab = Question("choice", "?", (Option("zeta", None), Option("alpha", None)))
        ba = Question("choice", "?", (Option("alpha", None), Option("zeta", None)))
        self.assertEqual(ab.options[choice.KIND.answer([0.5, 0.5], ab).best].key, "alpha")
        self.assertEqual(ba.options[choice.KIND.answer([0.5, 0.5], ba).best].key, "alpha")
        self.assertEqual(ab.options[choice.KIND.answer([0.6, 0.4], ab).best].key, "zeta")


if __name__ == "__main__":
    unittest.main()
