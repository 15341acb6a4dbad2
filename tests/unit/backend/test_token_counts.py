"""Token counts several texts a /tokenize call (onepass/backend/token_counts.py): the counts are
each text's own, the calls are few, and a separator that does not split cleanly is never used.
The tokenizers here are stand-ins (words and added tokens); the live tests use vLLM's.
Run: python3 -S -m unittest tests.unit.backend.test_token_counts
"""
import re
import unittest
from types import SimpleNamespace

from onepass.backend import token_counts
from tests.support.unit_profile import PROFILE

ADDED = ("<|sep|>", "<|im_start|>", "<|im_end|>")
WORD = re.compile(r"<\|\w+\|>|\w+|[^\w\s]|\s+")


class Tokenizer:
    """Added tokens whole, then words, punctuation and whitespace runs; `greedy` makes the
    added tokens swallow the whitespace beside them (an added token with lstrip/rstrip)."""

    def __init__(self, greedy: bool = False):
        self.calls, self.greedy, self.ids = 0, greedy, {}

    def __call__(self, text: str) -> list[int]:
        self.calls += 1
        if self.greedy:
            text = re.sub(r"\s*(<\|\w+\|>)\s*", r"\1", text)
        return [self.ids.setdefault(p, len(self.ids)) for p in WORD.findall(text)]


def serial(fn, items):
    return [fn(item) for item in items]


PROFILE_SEP = SimpleNamespace(specials=ADDED, chat_template=PROFILE.chat_template,
                              reasoning=None)


class TestCounts(unittest.TestCase):
    def test_a_batch_gives_each_texts_own_count_in_few_calls(self):
        tok = Tokenizer()
        sep = token_counts.separator(tok, PROFILE_SEP)
        self.assertEqual(sep[0], "<|sep|>")  # the template's markers are never the separator
        texts = [f"Note {i}: rain over the hill.\n\n" + " x" * (i % 5) for i in range(3000)]
        texts += [" lead", "trail ", "\n\n", "", "日本 語", "a <|sep|> inside"]
        tok.calls = 0
        made = []
        got = token_counts.Counts(tok, serial).count(texts, sep, made.append)
        batched = tok.calls
        self.assertEqual(got, [len(Tokenizer()(t)) for t in texts])
        joined = sum(len(t) + len(sep[0]) for t in texts)
        # one call per BATCH_CHARS of joined text, and one for the text holding the separator
        self.assertLessEqual(batched, -(-joined // token_counts.BATCH_CHARS) + 2)
        self.assertEqual(made, [batched])
        tok.calls = 0
        self.assertEqual(token_counts.Counts(tok, serial).count(texts), got)
        self.assertEqual(tok.calls, len(set(texts)))  # no separator: a call each

    def test_counted_texts_are_not_sent_again(self):
        tok = Tokenizer()
        counts = token_counts.Counts(tok, serial)
        counts.count(["a b", "c"])
        tok.calls, made = 0, []
        self.assertEqual(counts.count(["c", "a b"], None, made.append), [1, 3])
        self.assertEqual((tok.calls, made), (0, []))

    def test_a_cached_count_evicted_meanwhile_is_still_given(self):
        """Another request may evict a cached count while this one tokenizes the rest: the
        count found in the cache at the start is the one given."""
        tok = Tokenizer()

        def evicting(fn, items):
            counts._known.clear()  # another request filled the cache meanwhile
            return serial(fn, items)
        counts = token_counts.Counts(tok, evicting)
        counts.count(["a b"])
        self.assertEqual(counts.count(["a b", "c"]), [3, 1])

    def test_a_separator_that_swallows_whitespace_is_refused(self):
        """Texts beside it would lose tokens: no separator, every text counted alone."""
        self.assertIsNone(token_counts.separator(Tokenizer(greedy=True), PROFILE_SEP))

    def test_no_added_token_no_separator(self):
        self.assertIsNone(token_counts.separator(Tokenizer(), SimpleNamespace(
            specials=(), chat_template=PROFILE.chat_template, reasoning=None)))


if __name__ == "__main__":
    unittest.main()
