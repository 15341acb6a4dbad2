"""The request flags (engine/onepass_engine/flags.py), without vLLM: `attention_mode` and
`set_spans` read from SamplingParams.extra_args (stand-ins here), absent, known and odd values.
Standard library only: runs in the stdlib run too.
Run: python3 -S -m unittest tests.unit.engine.test_flags
"""
import sys
import unittest
from types import SimpleNamespace

from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "engine"))
from onepass_engine import flags  # noqa: E402


def params(**extra) -> SimpleNamespace:
    """A SamplingParams stand-in whose extra_args (the body's vllm_xargs) hold `extra`."""
    return SimpleNamespace(extra_args=extra)


class TestAttentionMode(unittest.TestCase):
    def test_no_flag_is_one_way(self):
        for p in (SimpleNamespace(), SimpleNamespace(extra_args=None), params(),
                  params(other="bidirectional")):
            self.assertIs(flags.requested_two_way(p), False, vars(p))
            self.assertIs(flags.is_two_way(p), False, vars(p))

    def test_each_spelling_of_each_mode(self):
        for value in ("bidirectional", "two-way"):
            self.assertIs(flags.requested_two_way(params(attention_mode=value)), True)
            self.assertIs(flags.is_two_way(params(attention_mode=value)), True)
        for value in ("causal", "one-way"):
            self.assertIs(flags.requested_two_way(params(attention_mode=value)), False)
            self.assertIs(flags.is_two_way(params(attention_mode=value)), False)

    def test_an_unknown_value_is_refused_naming_the_known_ones(self):
        """Strings only, exactly as spelled: vLLM narrows JSON true to 1, so a number or a
        boolean is refused rather than guessed."""
        for value in ("Bidirectional", "Two-way", "two_way", "", "true", 1, 0, True, None, 1.0,
                      ["bidirectional"], {"mode": "causal"}):
            with self.assertRaises(ValueError, msg=repr(value)) as caught:
                flags.requested_two_way(params(attention_mode=value))
            message = str(caught.exception)
            self.assertIn("vllm_xargs.attention_mode", message)
            self.assertIn(repr(value), message)
            for known in ("bidirectional", "causal", "one-way", "two-way"):
                self.assertIn(known, message)
            # An admitted request never holds one; the fast check reads it as one-way.
            self.assertFalse(flags.is_two_way(params(attention_mode=value)))


class TestSetSpans(unittest.TestCase):
    def test_no_spans(self):
        for p in (SimpleNamespace(), SimpleNamespace(extra_args=None), params(),
                  params(attention_mode="two-way")):
            self.assertEqual(flags.requested_spans(p), ())

    def test_spans_read_in_order(self):
        self.assertEqual(flags.requested_spans(params(set_spans="3:5,5:9")), ((3, 5), (5, 9)))
        self.assertEqual(flags.requested_spans(params(set_spans="1:2,2:3,3:7")),
                         ((1, 2), (2, 3), (3, 7)))

    def test_the_most_spans(self):
        most = ",".join(f"{i}:{i + 1}" for i in range(1, flags.MAX_SPANS + 1))
        self.assertEqual(len(flags.requested_spans(params(set_spans=most))), flags.MAX_SPANS)
        over = most + f",{flags.MAX_SPANS + 1}:{flags.MAX_SPANS + 2}"
        with self.assertRaisesRegex(ValueError, f"names {flags.MAX_SPANS + 1} spans; 2 to "):
            flags.requested_spans(params(set_spans=over))

    def test_malformed_values(self):
        """Not "start:end,...": a number (vLLM's narrowing), a list, a missing bound, words."""
        for value in (5, 3.5, ["3:5", "5:9"], "", "3:5,", "3-5,5-9", "3:5:7,7:9", "a:b,b:c",
                      "3:5;5:9", None):
            with self.assertRaisesRegex(ValueError, r'must read "start:end,start:end,\.\.\."',
                                        msg=repr(value)):
                flags.requested_spans(params(set_spans=value))

    def test_spans_that_read_but_break_a_rule(self):
        """One span; then empty, reversed, from the first token, overlapping, with a gap."""
        with self.assertRaisesRegex(ValueError, "names 1 spans; 2 to"):
            flags.requested_spans(params(set_spans="3:5"))
        for value in ("3:3,3:5", "5:3,3:9", "0:2,2:4", "3:5,4:9", "3:5,6:9"):
            with self.assertRaisesRegex(ValueError, r"^vllm_xargs\.set_spans: each span must be "
                                        "non-empty, after the first token, and start where",
                                        msg=value):
                flags.requested_spans(params(set_spans=value))

    def test_a_long_malformed_value_is_cut_in_the_message(self):
        with self.assertRaises(ValueError) as caught:
            flags.requested_spans(params(set_spans="x" * 500))
        self.assertIn(repr("x" * 80), str(caught.exception))
        self.assertNotIn("x" * 81, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
