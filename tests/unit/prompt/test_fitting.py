"""Stdlib-only tests of fitting long states into the context (no vLLM): splitting, BM25 choice per
question, head and tail, JSON pruning, shortening a question that cannot fit. The token counter
here counts words (the live tests use vLLM's tokenizer).
Run: python3 -m unittest tests.unit.prompt.test_fitting
"""
import unittest
from dataclasses import replace

from onepass.prompt import fitting
from onepass.prompt import state_parts
from onepass.config import Layout
from onepass.decision_model import Decision, Option, Question
from tests.support.kind_names import CHOICE, NOUL
from onepass.errors import PayloadTooLarge
from tests.support.unit_profile import LABELS, PROFILE

calls = []


def words(texts):
    """A stand-in tokenizer: one token per whitespace-separated word, plus one."""
    calls.append(len(texts))
    return [len(t.split()) + 1 for t in texts]


def filler(n: int) -> list[str]:
    return [f"Paragraph {i} talks about the weather in a quiet town, the rain and the wind "
            f"over the harbour and the hills." for i in range(n)]


NOUL_Q = Question(NOUL, "Was the invoice refunded?", (Option("true", None), Option("false", None)))


def decision(state, *questions, **layout):
    return Decision("m", state, questions or (NOUL_Q,), layout=replace(PROFILE.layout, **layout))


def prompt_state(read) -> str:
    """The record as the prompt shows it (the test profile puts the question after it)."""
    return read.prompt.split("Record:\n", 1)[1].split("\n\nQuestion: ", 1)[0]


class TestFit(unittest.TestCase):
    def test_short_states_are_not_counted(self):
        """A prompt no longer in bytes than the budget fits: no tokenizing, no selection."""
        calls.clear()
        reads, selections = fitting.fit(decision("A short record."), PROFILE, LABELS, words, 4000)
        self.assertEqual((calls, selections), ([], []))
        self.assertIn("A short record.", reads[0].prompt)

    def test_planted_paragraph_in_the_middle_is_kept(self):
        """BM25 keeps the relevant paragraph from the middle, in order, with gap lines."""
        paragraphs = filler(200)
        planted = "Invoice 88 was refunded in full on 3 March; nothing is owed."
        paragraphs.insert(100, planted)
        state = "\n\n".join(paragraphs)
        reads, [sel] = fitting.fit(decision(state), PROFILE, LABELS, words, 400)
        kept = prompt_state(reads[0])
        self.assertIn(planted, kept)
        self.assertIn(fitting.GAP, kept)
        self.assertEqual((sel.question, sel.method), (0, "bm25"))
        self.assertLessEqual(sel.kept_tokens, 400)
        self.assertGreater(sel.total_tokens, 10 * 400)
        self.assertTrue(all(r.whole_tokens == sel.total_tokens for r in reads))
        order = [p for p in kept.split("\n\n") if p != fitting.GAP]
        self.assertEqual(order, [p for p in paragraphs if p in order])  # original order

    def test_each_question_keeps_its_own_parts(self):
        """Two questions about different paragraphs read different cuts of one state."""
        paragraphs = filler(150)
        paragraphs[20] = "The parcel arrived crushed and the mug inside is broken."
        paragraphs[130] = "The customer was charged twice for invoice 4471."
        team = Question(CHOICE, "Which team: was the parcel crushed or broken?",
                        (Option("shipping", "damaged parcels"), Option("billing", None)))
        d = decision("\n\n".join(paragraphs), NOUL_Q, team)
        reads, selections = fitting.fit(d, PROFILE, LABELS, words, 300)
        self.assertEqual([s.question for s in selections], [0, 1])
        first, second = prompt_state(reads[0]), prompt_state(reads[1])
        self.assertIn("invoice 4471", first)
        self.assertIn("mug inside is broken", second)
        self.assertNotIn("mug inside is broken", first)

    def test_head_and_tail_when_nothing_matches_or_asked(self):
        paragraphs = filler(100)
        state = "\n\n".join(paragraphs)
        for layout in ({}, {"state_selection": "head_tail"}):
            q = Question(NOUL, "Zebra?", NOUL_Q.options) if not layout else NOUL_Q
            reads, [sel] = fitting.fit(decision(state, q, **layout), PROFILE, LABELS, words, 300)
            kept = prompt_state(reads[0]).split("\n\n")
            self.assertTrue(kept[0] == paragraphs[0], layout)
            self.assertIn(fitting.GAP, kept)
            self.assertIn(paragraphs[-1], prompt_state(reads[0]))

    def test_markdown_headings_stay_with_what_they_head(self):
        sections = []
        for i in range(60):
            sections.append(f"## Section {i}\n" + "\n\n".join(filler(2)))
        sections[30] = "## Billing\nThe invoice was refunded on Monday.\n\n" + filler(1)[0]
        reads, _ = fitting.fit(decision("# Log\n\n" + "\n\n".join(sections)), PROFILE, LABELS,
                               words, 300)
        kept = prompt_state(reads[0])
        self.assertIn("# Log\n\n", kept)
        self.assertIn("## Billing\n\nThe invoice was refunded on Monday.", kept)

    def test_json_leaves_keep_their_parents(self):
        state = {"customer": {"name": "Ada", "plan": "pro"},
                 "events": [{"note": t} for t in filler(120)]
                 + [{"note": "Invoice 88 was refunded in full."}],
                 "tail": "end"}
        parts = state_parts.split(state)
        self.assertEqual(parts[0].text, "customer.name: Ada")
        self.assertEqual(parts[-2].text, "events[120].note: Invoice 88 was refunded in full.")
        reads, [sel] = fitting.fit(decision(state), PROFILE, LABELS, words, 400)
        kept = prompt_state(reads[0])
        self.assertIn('{"note":"Invoice 88 was refunded in full."}', kept)
        self.assertTrue(kept.startswith('{"customer":'), kept[:80])

    def test_a_question_longer_than_the_context_is_shortened(self):
        """Instructions first, then descriptions; option keys and order stay."""
        long_q = Question(CHOICE, "Which team? " * 300,
                          tuple(Option(f"team{i}", "handles things " * 50) for i in range(3)))
        reads, [sel] = fitting.fit(decision("x " * 5000, long_q), PROFILE, LABELS, words, 250)
        self.assertTrue(sel.method.endswith("+question_shortened"))
        for read in reads:
            self.assertLessEqual(words([read.prompt])[0], 250)
            self.assertLess(read.prompt.index("team0"), read.prompt.index("team1"))
            self.assertIn("team2", read.prompt)

    def test_long_paragraph_is_cut_into_pieces(self):
        parts = state_parts.split("word " * 2000)
        self.assertGreater(len(parts), 5)
        self.assertTrue(all(len(p.text) <= state_parts.MAX_PART_CHARS for p in parts))

    def test_counting_is_bounded_by_the_request(self):
        """A 1 MB state asked 20 questions read in 4 orders each (80 reads): the state is
        counted once (whole, then as parts), no text twice, and the rest is the fitted prompts
        (the old path tokenized the whole state for each of the 80 reads: 90 MB)."""
        texts = []

        def recording(batch):
            texts.extend(batch)
            return words(batch)
        state = "\n\n".join(filler(8000))
        team = tuple(Question(CHOICE, f"Which team handles case {i}?",
                              tuple(Option(f"t{j}", None) for j in range(4))) for i in range(20))
        reads, selections = fitting.fit(decision(state, *team, orders=4, orders_as_reads=True),
                                        PROFILE, LABELS, recording, 4000)
        self.assertEqual((len(reads), len(selections)), (80, 20))
        self.assertEqual(len(texts), len(set(texts)))
        longest = max(len(r.prompt) for r in reads)
        self.assertLess(sum(map(len, texts)), 2 * len(state) + 2 * len(reads) * longest)

    def test_limits_refuse_what_cannot_be_cut_cheaply(self):
        """States over 8 MiB, or splitting into more than 20,000 parts, are a 413 (never
        millions of parts in memory)."""
        for state in ("x " * (4 << 20) + "y", "a\n\n" * 30_000):
            with self.assertRaises(PayloadTooLarge):
                fitting.fit(decision(state), PROFILE, LABELS, words, 300)

    def test_repetition_pays_for_every_copy(self):
        state = "\n\n".join(filler(200))
        reads, [sel] = fitting.fit(decision(state, repeat=2), PROFILE, LABELS, words, 500)
        self.assertLessEqual(sel.kept_tokens, 500)
        self.assertEqual(reads[0].prompt.count("Record:"), 2)


if __name__ == "__main__":
    unittest.main()
