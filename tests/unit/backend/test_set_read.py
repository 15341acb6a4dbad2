"""Stdlib-only tests of a set read's prompt in pieces (onepass/backend/set_read.py), on hand-made
reads: where the head ends (never past the first span), pieces left out when empty, the spans
counted in tokens of pieces tokenized alone, and which cache each piece goes through. Reads laid
out by the layout, and the caches' order of eviction, are tested in
tests/unit/prompt/test_option_sets.py.
Run: python3 -S -m unittest tests.unit.backend.test_set_read
"""
import threading
import unittest
from types import SimpleNamespace

from onepass.backend import set_read

PROMPT = "SYS REC Q: A. x\nB. y\nReply"  # head "SYS REC ", options at 11-16 and 16-21
SPANS = ((11, 16), (16, 21))


def read(prompt=PROMPT, spans=SPANS, head_chars=8):
    return SimpleNamespace(prompt=prompt, spans=spans, head_chars=head_chars)


def words(text):
    """A stand-in tokenizer: one id per space-separated word (so tokens are not characters)."""
    return [len(w) for w in text.split(" ") if w]


class Recording(set_read.IdCache):
    """An IdCache that records the texts asked of it."""

    def __init__(self, *args):
        super().__init__(*args)
        self.asked = []

    def ids(self, text, tokenize):
        self.asked.append(text)
        return super().ids(text, tokenize)


class TestPieces(unittest.TestCase):
    def test_head_then_the_text_to_the_first_span_then_each_span_then_the_tail(self):
        self.assertEqual(set_read.pieces(read()), [("SYS REC ", False), ("Q: ", False),
                                                    ("A. x\n", True), ("B. y\n", True),
                                                    ("Reply", False)])

    def test_the_head_stops_at_the_first_span(self):
        """pieces: a head reaching past the first span's start ends there (a span is never
        cut), so nothing stands between it and the span."""
        got = set_read.pieces(read(head_chars=12))
        self.assertEqual(got[:2], [("SYS REC Q: ", False), ("A. x\n", True)])

    def test_empty_pieces_are_left_out(self):
        """pieces: no head (question first), and a prompt ending at its last span: no empty
        text is tokenized."""
        got = set_read.pieces(read(prompt=PROMPT[:21], head_chars=0))
        self.assertEqual(got, [("SYS REC Q: ", False), ("A. x\n", True), ("B. y\n", True)])


class TestTokenPrompt(unittest.TestCase):
    def test_the_spans_are_in_tokens_of_pieces_tokenized_alone(self):
        """token_prompt: ids piece by piece (no word joins two pieces), each span's first and
        end token."""
        ids, spans = set_read.token_prompt(read(), words, set_read.IdCache(),
                                           set_read.IdCache())
        self.assertEqual(ids, [3, 3, 2, 2, 2, 2, 2, 5])  # SYS REC | Q: | A. x | B. y | Reply
        self.assertEqual(spans, "3:5,5:7")

    def test_only_a_shared_head_goes_through_the_heads_cache(self):
        """token_prompt: the head through `heads`; with no head, the first piece is an
        ordinary piece (through `kept`)."""
        for head_chars, head in ((8, ["SYS REC "]), (0, [])):
            heads, kept = Recording(), Recording()
            set_read.token_prompt(read(head_chars=head_chars), words, heads, kept)
            self.assertEqual(heads.asked, head, head_chars)
            self.assertEqual(len(kept.asked), 4, head_chars)


class Held:
    """A tokenizer whose first call waits until released; every call recorded."""

    def __init__(self):
        self.calls, self.entered, self.release = [], threading.Event(), threading.Event()

    def __call__(self, text):
        self.calls.append(text)
        if len(self.calls) == 1:
            self.entered.set()
            self.release.wait(30)
            if getattr(self, "fail", False):
                raise ConnectionError("the first asker's client left")
        return words(text)


def ask_twice(tokenize):
    """Two threads ask one IdCache for one text, the second while the first is tokenizing
    (given half a second to reach the tokenizer itself, as a cache without waiting would):
    what each got."""
    cache, got = set_read.IdCache(), {}

    def ask(name):
        try:
            got[name] = cache.ids("A. x\n", tokenize)
        except ConnectionError as e:
            got[name] = e
    first = threading.Thread(target=ask, args=("first",))
    first.start()
    tokenize.entered.wait(30)
    second = threading.Thread(target=ask, args=("second",))
    second.start()
    second.join(0.5)  # it waits for the first's ids (or, without waiting, tokenizes)
    tokenize.release.set()
    first.join(30)
    second.join(30)
    return got


class TestConcurrentAsks(unittest.TestCase):
    def test_a_text_asked_while_it_is_tokenized_is_tokenized_once(self):
        """IdCache.ids: the second asker waits for the first's ids, so a request's /tokenize
        calls do not depend on how its concurrent reads interleave."""
        tokenize = Held()
        got = ask_twice(tokenize)
        self.assertEqual(tokenize.calls, ["A. x\n"])
        self.assertEqual(got, {"first": [2, 2], "second": [2, 2]})

    def test_a_failed_first_ask_leaves_the_waiter_to_ask_itself(self):
        """IdCache.ids: the first asker's failure is its own; the waiter tokenizes the text."""
        tokenize = Held()
        tokenize.fail = True
        got = ask_twice(tokenize)
        self.assertEqual(tokenize.calls, ["A. x\n", "A. x\n"])
        self.assertIsInstance(got["first"], ConnectionError)
        self.assertEqual(got["second"], [2, 2])


if __name__ == "__main__":
    unittest.main()
