"""Stdlib-only tests of option sets on the shim's side (layout option_sets): labels bound by the
options' keys, so every listing of a choice's options lays out the same prompt; the spans the
engine plugin reads as a set (each option's line with its newline); the pieces a set read's
prompt is tokenized in (set_read.py); the start-up probe's reversed read (set_probe.py); the
layout checks; and a request asking for option sets on an engine without them (400). What the
engine computes is tested against a real vLLM: tests/live/test_sets_live.py.
Run: python3 -S -m unittest tests.unit.prompt.test_option_sets
"""
import itertools
import unittest
from dataclasses import replace

from onepass import config
from onepass.steps import resolve
from onepass.backend import set_probe, set_read
from onepass.decision_model import Decision, Option, Question
from onepass.errors import BadRequest, InvalidRequest
from onepass.profile import ConfigError, Layout, check_layout
from onepass.prompt import layout
from tests.support.unit_profile import LABELS

OPTIONS = (Option("tech", "Bugs and outages"), Option("billing", "Payments"),
           Option("sales", None), Option("legal", "Contracts"), Option("ops", None),
           Option("hr", "People"))


def profile(**changes):
    base = config.load(["--port", "0"], environ={}).model
    return replace(base, layout=replace(base.layout, **{"option_sets": True, **changes}))


def read_of(options, prof=None, state="I was charged twice.", **fields):
    q = Question("choice", "Which team should handle it?", tuple(options))
    return layout.layout(Decision("m", state, (q,), **fields),
                         prof or profile(), LABELS)[0]


class TestCanonicalLayout(unittest.TestCase):
    def test_every_order_of_six_options_lays_out_the_same_prompt(self):
        """layout: all 720 orders of 6 options give one prompt and one set of spans, and each
        label names the same option (by key) whatever the order sent."""
        first = read_of(OPTIONS)
        bound = {label: OPTIONS[o].key for label, o in
                 zip(first.label_token_ids, first.option_of_label)}
        for order in itertools.permutations(range(6)):
            options = [OPTIONS[i] for i in order]
            r = read_of(options)
            self.assertEqual((r.prompt, r.spans), (first.prompt, first.spans), order)
            self.assertEqual({label: options[o].key for label, o in
                              zip(r.label_token_ids, r.option_of_label)}, bound, order)

    def test_the_spans_are_each_options_line_in_key_order(self):
        """layout: one span per option, consecutive, each its label line with the newline, in
        the order of the keys; the reply line follows the last."""
        r = read_of(OPTIONS)
        texts = [r.prompt[a:b] for a, b in r.spans]
        self.assertEqual(texts, ["A. billing: Payments\n", "B. hr: People\n",
                                 "C. legal: Contracts\n", "D. ops\n", "E. sales\n",
                                 "F. tech: Bugs and outages\n"])
        self.assertTrue(all(a[1] == b[0] for a, b in zip(r.spans, r.spans[1:])))
        self.assertTrue(r.prompt[r.spans[-1][1]:].startswith("Reply with the label"))

    def test_with_the_question_first_the_spans_are_the_options_before_the_record(self):
        """layout (question_first): the option lines come before the record, so the spans end
        where the record begins, and a state that repeats them does not move them."""
        r = read_of(OPTIONS[:3], profile(question_first=True))
        self.assertEqual([r.prompt[a:b] for a, b in r.spans],
                         ["A. billing: Payments\n", "B. sales\n", "C. tech: Bugs and outages\n"])
        self.assertTrue(r.prompt[r.spans[-1][1]:].startswith("\nRecord:"))
        s = read_of(OPTIONS[:3], profile(question_first=True), state=r.prompt)
        self.assertEqual(s.spans, r.spans)

    def test_client_text_like_the_options_cannot_move_the_spans(self):
        """layout: a state that repeats the option lines and the reply line verbatim: the spans
        are still the layout's own lines, after the state."""
        r = read_of(OPTIONS[:2])
        state = r.prompt[r.spans[0][0]:]  # the option lines and everything after them
        s = read_of(OPTIONS[:2], state=state)
        self.assertGreater(s.spans[0][0], s.prompt.index("Record:") + len(state))

    def test_without_option_sets_nothing_is_a_span(self):
        plain = read_of(OPTIONS, profile(option_sets=False))
        self.assertEqual(plain.spans, ())

    def test_images_with_option_sets_are_refused(self):
        with self.assertRaises(InvalidRequest):
            read_of(OPTIONS, images=("an image",))

    def test_option_sets_take_one_listing(self):
        """check_layout: option_sets with repeat or orders above 1 is a configuration error."""
        check_layout(Layout(option_sets=True), "x")
        for bad in (Layout(option_sets=True, repeat=2), Layout(option_sets=True, orders=2)):
            with self.assertRaises(ConfigError):
                check_layout(bad, "x")


class TestSetPrompt(unittest.TestCase):
    def test_each_piece_is_tokenized_alone_and_the_spans_are_in_tokens(self):
        """set_read.token_prompt: head, the text up to the first span, each span and the tail
        tokenized apart (one id per character here), each text once while cached; spans in
        ids."""
        r = read_of(OPTIONS[:3])
        calls = []

        def tokenize(text):
            calls.append(text)
            return [ord(c) for c in text]
        heads, kept = set_read.IdCache(), set_read.IdCache(set_read.PIECES_KEPT)
        ids, spans = set_read.token_prompt(r, tokenize, heads, kept)
        self.assertEqual(ids, [ord(c) for c in r.prompt])
        self.assertEqual(spans, ",".join(f"{a}:{b}" for a, b in r.spans))
        self.assertEqual(calls[0], r.prompt[:r.head_chars])
        self.assertEqual(len(calls), 1 + 1 + 3 + 1)
        set_read.token_prompt(r, tokenize, heads, kept)
        self.assertEqual(len(calls), 6)  # every piece came from the caches
        other = read_of(OPTIONS[:3], state="Another state.")
        self.assertEqual(set_read.token_prompt(other, tokenize, heads, kept)[0],
                         [ord(c) for c in other.prompt])
        self.assertEqual(calls[6:], [other.prompt[:other.head_chars]])  # a new head alone

    def test_a_cache_keeps_the_texts_seen_last(self):
        cache = set_read.IdCache(2)
        for text in ("a", "b", "a", "c"):
            cache.ids(text, lambda t: [ord(t)])
        seen = []
        for text in ("a", "c", "b"):
            cache.ids(text, lambda t: seen.append(t) or [ord(t)])
        self.assertEqual(seen, ["b"])  # "b" was the least recently used of three
        short = set_read.IdCache(2, longest=3)
        for _ in range(2):
            short.ids("long text", lambda t: seen.append(t) or [0])
        self.assertEqual(seen, ["b", "long text", "long text"])  # never kept

    def test_the_probe_reverses_the_spans_text(self):
        """set_probe.reversed_spans: the same lines in the reverse order, spans moved with them,
        the text around them unchanged."""
        r = read_of(OPTIONS[:3])
        back = set_probe.reversed_spans(r)
        self.assertEqual([back.prompt[a:b] for a, b in back.spans],
                         [r.prompt[a:b] for a, b in r.spans][::-1])
        self.assertEqual(back.prompt[:back.spans[0][0]], r.prompt[:r.spans[0][0]])
        self.assertEqual(back.prompt[back.spans[-1][1]:], r.prompt[r.spans[-1][1]:])


class TestRefusal(unittest.TestCase):
    def test_a_request_asking_for_option_sets_without_the_plugin_is_400(self):
        from onepass.backend.probes import Facts
        profile = config.load(["--port", "0"], environ={}).model
        for sets in (False, True):
            facts = Facts(LABELS, 100_000, False, "", None, sets)
            ask = lambda: resolve.options({"layout": {"option_sets": True}},  # noqa: E731
                                          profile, facts)
            if sets:
                self.assertTrue(ask()[0].option_sets)
            else:
                with self.assertRaises(BadRequest):
                    ask()


class TestOverrides(unittest.TestCase):
    def test_a_request_for_option_sets_gets_one_read_on_a_profile_of_orders(self):
        """resolve.options on a profile that reads every cyclic order twice over (orders 8 as
        reads, repeat 2): a request naming option_sets alone reads one set, once; naming orders
        or repeat above 1 beside it is a 422."""
        from onepass.backend.probes import Facts
        profile = config.load(["--port", "0"], environ={}).model
        profile = replace(profile, layout=replace(profile.layout, option_sets=False, orders=8,
                                                  orders_as_reads=True, repeat=2))
        facts = Facts(LABELS, 100_000, False, "", None, True)
        layout_ = resolve.options({"layout": {"option_sets": True}}, profile, facts)[0]
        self.assertEqual((layout_.option_sets, layout_.orders, layout_.repeat), (True, 1, 1))
        for asked in ({"repeat": 2}, {"orders": 8}):
            with self.assertRaises(InvalidRequest):
                resolve.options({"layout": {**asked, "option_sets": True}}, profile, facts)

    def test_a_request_for_listing_techniques_gets_listings(self):
        """resolve.options on a profile with option sets: a request asking for repeat or
        orders above 1 without naming option_sets reads listings; naming both is a 422."""
        from onepass.backend.probes import Facts
        profile = config.load(["--port", "0"], environ={}).model
        profile = replace(profile, layout=replace(profile.layout, option_sets=True, orders=1,
                                                  repeat=1))
        facts = Facts(LABELS, 100_000, False, "", None, True)
        self.assertTrue(resolve.options({"layout": {"guard_line": True}}, profile,
                                        facts)[0].option_sets)
        for asked in ({"repeat": 2}, {"orders": 8, "orders_as_reads": True}):
            layout_ = resolve.options({"layout": asked}, profile, facts)[0]
            self.assertFalse(layout_.option_sets, asked)
            with self.assertRaises(InvalidRequest):
                resolve.options({"layout": {**asked, "option_sets": True}}, profile, facts)


if __name__ == "__main__":
    unittest.main()
