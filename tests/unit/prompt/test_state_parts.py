"""Stdlib-only tests of a state as parts and back (onepass/prompt/state_parts.py): headings and
what they head, JSON leaves and their paths, pieces of long text, and rendering the kept parts
with gap lines (JSON pruned to the kept leaves). Choosing parts to fit is tested in
test_fitting.py.
Run: python3 -S -m unittest tests.unit.prompt.test_state_parts
"""
import unittest

from onepass.prompt import state_parts
from onepass.prompt.state_parts import GAP, MAX_PART_CHARS, render, split


class TestSplit(unittest.TestCase):
    def test_headings_head_what_follows_by_level(self):
        """split: a heading is its own part heading what follows; a deeper one nests under it."""
        parts = split("intro\n\n# A\ntext a\n\n## A1\n\nbody\n\n# B\n\nlast")
        self.assertEqual([(p.text, p.heads) for p in parts],
                         [("intro", ()), ("# A", ()), ("text a", (1,)), ("## A1", (1,)),
                          ("body", (1, 3)), ("# B", ()), ("last", (5,))])

    def test_json_leaves_with_their_paths(self):
        """split: one part per leaf, `path: value`; list steps in brackets, empties are leaves."""
        parts = split({"a": {"b": 1, "c": [True, {"d": None}]}, "e": {}, "f": []})
        self.assertEqual([p.text for p in parts], ["a.b: 1", "a.c[0]: true", "a.c[1].d: null",
                                                   "e: {}", "f: []"])
        self.assertEqual(parts[2].path, ("a", "c", 1, "d"))
        self.assertEqual([p.text for p in split([])], ["(value): []"])

    def test_long_text_is_cut_at_whitespace_else_hard(self):
        """split: text is cut at its last space before MAX_PART_CHARS; without one, hard at it."""
        parts = split("x" * (2 * MAX_PART_CHARS + 5))
        self.assertEqual([len(p.text) for p in parts], [MAX_PART_CHARS, MAX_PART_CHARS, 5])
        text = ("y" * 99 + " ") * 30  # 3000 characters, a space every 100
        spaced = split(text)
        self.assertEqual([len(p.text) for p in spaced], [1199, 1199, 600])  # cut at a space
        self.assertEqual(" ".join(p.text for p in spaced), text)


class TestRender(unittest.TestCase):
    def test_text_gaps_stand_where_parts_were_left_out(self):
        """render: kept parts in order, GAP between runs and at either end left out."""
        text = "one\n\ntwo\n\nthree\n\nfour"
        parts = split(text)
        self.assertEqual(render(text, parts, {1, 3}, True), f"{GAP}\n\ntwo\n\n{GAP}\n\nfour")
        self.assertEqual(render(text, parts, {0, 1}, True), f"one\n\ntwo\n\n{GAP}")
        self.assertEqual(render(text, parts, set(range(4)), True), "one\n\ntwo\n\nthree\n\nfour")
        self.assertEqual(render(text, parts, set(), True), GAP)

    def test_json_is_pruned_to_the_kept_leaves_and_their_parents(self):
        """render: JSON keeps the kept leaves' parents in order; a gap line if any was cut."""
        state = {"a": {"b": 1, "c": 2}, "d": [10, 20, 30]}
        parts = split(state)
        kept = {1, 4}  # a.c and d[2]
        self.assertEqual(render(state, parts, kept, True), '{"a":{"c":2},"d":[30]}\n' + GAP)
        self.assertEqual(render(state, parts, set(range(len(parts))), True),
                         '{"a":{"b":1,"c":2},"d":[10,20,30]}')
        self.assertEqual(render(state, parts, {0}, False), '{\n  "a": {\n    "b": 1\n  }\n}\n'
                         + GAP)

    def test_a_long_json_string_kept_in_pieces(self):
        """render: pieces of one long string kept apart are joined by a gap."""
        value = ("w" * 99 + " ") * 30
        state = {"note": value}
        parts = split(state)
        self.assertGreater(len(parts), 2)
        got = render(state, parts, {0, len(parts) - 1}, True)
        first, last = parts[0].value, parts[-1].value
        self.assertEqual(got, state_parts.render_state({"note": f"{first} {GAP} {last}"}, True)
                         + "\n" + GAP)


if __name__ == "__main__":
    unittest.main()
