"""Stdlib-only tests of the Frame around a question (onepass/prompt/layout.py): one Read per
listing carrying its question's index, what a state costs (cost, cost_bytes; `repeat` copies,
image slots at the profile's tokens per image), the rendered state shared by every frame of a
request, the shared head, and neutralising image tokens in client text. Prompt wording and the
techniques' texts are tested in test_shim.py (TestLayout, TestTechniques).
Run: python3 -S -m unittest tests.unit.prompt.test_layout
"""
import unittest
from dataclasses import replace

from onepass import config
from onepass.decision import CHOICE, NOUL, SCORE, TWO_WAY, Option, Question
from onepass.images.formats import Image
from onepass.prompt import layout
from tests.support.build_decision import decision
from tests.support.unit_profile import LABELS, PROFILE, VLM

YES = Question(NOUL, "Refund?", (Option("true", None), Option("false", None)))
TEAM = Question(CHOICE, "Team?", (Option("billing", None), Option("tech", None),
                                  Option("sales", None)))
ANGER = Question(SCORE, "Anger?", (Option("0", "calm"), Option("1", "furious")))
IMAGE = Image(b"", "png", 4, 4)


def by_bytes(texts):
    return [len(t.encode()) for t in texts]


def frames(d, profile=PROFILE, count=by_bytes):
    return layout.frames(d, profile, LABELS, count)


class TestRender(unittest.TestCase):
    def test_one_read_per_listing_each_with_its_question(self):
        """render: a Read per listing (noul 1, choice 4, score 2), each with its index and mode."""
        opts = config.Layout(orders=2, orders_as_reads=True, both_directions=True)
        d = decision((YES, TEAM, ANGER), "ticket", layout=opts, attention_mode=TWO_WAY)
        reads = [frame.render(frame.state_text) for frame in frames(d)]
        self.assertEqual([[r.question for r in rs] for rs in reads],
                         [[0], [1, 1, 1, 1], [2, 2]])  # choice: 2 orders, each reversed
        self.assertEqual({r.attention_mode for rs in reads for r in rs}, {TWO_WAY})
        self.assertEqual([r.whole_tokens for r in frames(d)[0].render("x", 77)], [77])

    def test_frames_share_the_rendered_state(self):
        """frames: one rendering of a JSON state (compact, or indented) for every question."""
        state = {"ticket": "late", "n": [1, 2]}
        fs = frames(decision((YES, TEAM), state))
        self.assertIs(fs[0].state_text, fs[1].state_text)  # rendered once, not per question
        self.assertIs(fs[0].shown_state, fs[1].shown_state)
        self.assertEqual(fs[0].state_text, '{"ticket":"late","n":[1,2]}')
        indented = frames(decision((YES,), state, layout=config.Layout(compact_json=False)))
        self.assertEqual(indented[0].state_text.splitlines()[:2], ["{", '  "ticket": "late",'])

    def test_the_decisions_layout_overrides_the_profiles(self):
        """techniques: a Decision's own layout applies, else the profile's."""
        d = decision((YES,))
        self.assertIs(layout.techniques(d, PROFILE), PROFILE.layout)
        mine = config.Layout(repeat=3)
        self.assertIs(layout.techniques(replace(d, layout=mine), PROFILE), mine)

    def test_the_head_is_system_and_record_shared_by_every_question(self):
        """render: prompt[:head_chars] (system and record) is shared; question first shares 0."""
        fs = frames(decision((YES, TEAM, ANGER), "the ticket text"))
        reads = [r for f in fs for r in f.render(f.state_text)]
        heads = {r.prompt[:r.head_chars] for r in reads}
        self.assertEqual(len(heads), 1)
        self.assertTrue(heads.pop().endswith("Record:\nthe ticket text"))
        first = frames(decision((YES,), "t", layout=config.Layout(question_first=True)))[0]
        self.assertEqual(first.render("t")[0].head_chars, 0)


class TestCost(unittest.TestCase):
    def test_cost_bytes_bounds_cost(self):
        """cost_bytes >= cost for one state; each grows by `repeat` per byte or token of state."""
        state = "é word " * 50
        for repeat in (1, 3):
            frame = frames(decision((TEAM,), state, layout=config.Layout(repeat=repeat)),
                           count=lambda texts: [len(t) // 4 for t in texts])[0]
            n_bytes, n_tokens = len(state.encode()), len(state) // 4
            self.assertGreaterEqual(frame.cost_bytes(n_bytes), frame.cost(n_tokens))
            self.assertEqual(frame.cost(10) - frame.cost(0), 10 * repeat)
            self.assertEqual(frame.cost_bytes(10) - frame.cost_bytes(0), 10 * repeat)
            whole = frame.longest(frame.render(state))
            self.assertLessEqual(whole, frame.cost_bytes(n_bytes))

    def test_cost_of_no_state_is_the_bare_prompt(self):
        """cost(0) is the longest bare read's count; cost_bytes(0) its UTF-8 bytes."""
        frame = frames(decision((YES,), "s"))[0]
        bare, = frame.bare
        self.assertEqual(frame.cost(0), len(bare.prompt.encode()))
        self.assertEqual(frame.cost_bytes(0), len(bare.prompt.encode()))
        self.assertEqual(bare.prompt.count("Record:\n\n"), 1)

    def test_image_slots_cost_tokens_per_image(self):
        """With 2 images each slot costs VLM's tokens_per_image (33): 2 x 32 beyond its text."""
        d = decision((YES,), "s", images=(IMAGE, IMAGE))
        frame = frames(d, VLM)[0]
        bare, = frame.bare
        self.assertEqual(bare.prompt.count("<image>"), 2)
        self.assertEqual(frame.cost_bytes(0), len(bare.prompt.encode()) + 2 * 32)
        self.assertEqual(frame.cost(0), len(bare.prompt.encode()) + 2 * 32)
        plain = frames(replace(d, images=()), VLM)[0]
        self.assertEqual(plain.cost(0), len(plain.bare[0].prompt.encode()))

    def test_repeat_shows_every_image_in_every_copy_at_its_cost(self):
        """Repeat 2 with one image: two slots, each at tokens_per_image."""
        d = decision((YES,), "s", images=(IMAGE,), layout=replace(VLM.layout, repeat=2))
        frame = frames(d, VLM)[0]
        self.assertEqual(frame.cost(0) - len(frame.bare[0].prompt.encode()), 2 * 32)


class TestNeutral(unittest.TestCase):
    def test_image_tokens_in_client_text_are_broken(self):
        """neutral: a zero-width space after each reserved token's first character."""
        reserved = VLM.vision.reserved
        self.assertEqual(layout.neutral("a <image> b <image>", reserved),
                         "a <\u200bimage> b <\u200bimage>")
        self.assertEqual(layout.neutral("<global-img>", reserved), "<\u200bglobal-img>")
        self.assertEqual(layout.neutral("no tokens", reserved), "no tokens")

    def test_the_state_is_shown_neutral_only_under_a_vision_profile(self):
        """shown_state: neutral for a vision profile; as sent for a text one."""
        self.assertEqual(layout.shown_state("x <image>", VLM), "x <\u200bimage>")
        self.assertEqual(layout.shown_state("x <image>", PROFILE), "x <image>")
        frame = frames(decision((YES,), "x <image>"), VLM)[0]
        self.assertIn("x <\u200bimage>", frame.render(frame.state_text)[0].prompt)


if __name__ == "__main__":
    unittest.main()
