"""Stdlib-only tests of a JSON text's shape counted from its bytes (onepass/body.py, scan), called
directly: the cheap count (every bracket and comma, in strings or not, an upper bound) when it is
within the limits, the width of the characters and escapes, the bytes a parse of a shape is
charged, a long string's least length, too many strings holding structure, and image data.
Through body.parse_json (the limits at their edges, the scan against json.loads and
tracemalloc): tests/unit/body/test_decode.py.
Run: python3 -S -m unittest tests.unit.body.test_decode_shape
"""
import unittest
from types import SimpleNamespace

from onepass.body import decode as body
from onepass.errors import InvalidRequest, PayloadTooLarge
from onepass.body.decode import PARSE_BYTES, PER_TEXT_BYTE, PER_VALUE_BYTES, Shape, scan


def limits(values=1000, depth=10, string_bytes=0):
    return SimpleNamespace(values=values, depth=depth, string_bytes=string_bytes)


class TestScan(unittest.TestCase):
    def test_within_the_limits_the_count_is_an_upper_bound(self):
        """scan: under both limits, brackets and commas inside strings count too (no walk over
        the strings); the depth is the opening brackets."""
        shape = scan(b'["[,{", 1]', limits())
        self.assertEqual((shape.values, shape.depth), (6, 3))  # 3 opens + 2 commas + 1

    def test_past_the_count_the_strings_are_left_out(self):
        """scan: over the cheap count, what lies in strings no longer counts: the exact
        values and depth, and a depth past the limit is a 422 at the body."""
        shape = scan(b'["[[[[", 1]', limits(values=4, depth=2))
        self.assertEqual((shape.values, shape.depth), (3, 1))
        with self.assertRaises(InvalidRequest) as ctx:
            scan(b"[[[1]]]", limits(depth=2))
        self.assertEqual(ctx.exception.problems[0].loc, ())

    def test_the_width_of_the_characters_and_escapes(self):
        """scan: ASCII 1 byte a character, any non-ASCII 2, a 4-byte sequence 4; a \\u escape
        is noted (a parsed string may be wider than its text)."""
        cases = {b'"a"': (1, False), '"é"'.encode(): (2, False), '"é😀"'.encode(): (4, False),
                 b'"\\u00e9"': (1, True)}
        for text, want in cases.items():
            shape = scan(text, limits())
            self.assertEqual((shape.width, shape.escapes), want, text)

    def test_many_strings_holding_structure_are_refused_unsplit(self):
        """scan: more than twice the values limit of strings holding brackets is a 413 before
        the strings are cut out."""
        text = b"[" + b",".join([b'"[x]"'] * 30) + b"]"
        with self.assertRaises(PayloadTooLarge) as ctx:
            scan(text, limits(values=10))
        self.assertIn("more than 10 values", ctx.exception.message)


class TestCost(unittest.TestCase):
    def test_what_a_shape_keeps_and_takes(self):
        """kept_bytes: the text at its width (4 with escapes) and the lesser of PER_VALUE_BYTES
        a value and PER_TEXT_BYTE a byte; parse_bytes adds the text and the decoder's own."""
        few, dense = Shape(2, 1, 2, False), Shape(10 ** 6, 1, 1, True)
        self.assertEqual(few.kept_bytes(1000), 2000 + 2 * PER_VALUE_BYTES)
        self.assertEqual(dense.kept_bytes(1000), 4000 + 1000 * PER_TEXT_BYTE)
        self.assertEqual(few.parse_bytes(1000), 2000 + few.kept_bytes(1000) + PARSE_BYTES)


class TestLongString(unittest.TestCase):
    def test_the_least_length_of_a_string_past_the_limit(self):
        """long_string: the bytes between a string's quotes and where it opens; (0, -1) when no
        limit, a short text or only short strings; escapes count as at least one byte in six."""
        self.assertEqual(body.long_string(b'["' + b"x" * 2500 + b'"]', 1000), (2500, 1))
        self.assertEqual(body.long_string(b'["' + b"x" * 2500 + b'"]', 0), (0, -1))
        self.assertEqual(body.long_string(b'"' + b"x" * 999 + b'"', 1000), (0, -1))
        short = b"[" + b",".join([b'"' + b"x" * 500 + b'"'] * 10) + b"]"
        self.assertEqual(body.long_string(short, 1000), (0, -1))
        escaped = b'"' + b"\\u00e9" * 300 + b"x" * 900 + b'"'  # 2,700 bytes, 1,200 meant
        self.assertEqual(body.long_string(escaped, 1000), (2700 - 5 * 300, 0))

    def test_a_refused_string_is_named_for_what_it_is(self):
        """string_named: a data URL or the value of an image key is an image, the state's value
        a state, anything else a string."""
        cases = {b'{"state": "xx"}': "a state",
                 b'{"a": {"type": "image", "data_base64" :\n "iVBOR"}}': "an image",
                 b'[{"type": "input_image", "image_url": "https://x"}]': "an image",
                 b'{"state": {"photo": "data:image/png;base64,iVBOR"}}': "an image",
                 b'{"state": {"notes": "xx"}}': "a string",
                 b'["xx"]': "a string"}
        for text, named in cases.items():
            quote = text.rindex(b'"', 0, text.rindex(b'"'))
            self.assertEqual(body.string_named(text, quote), named, text)


class TestImages(unittest.TestCase):
    def test_only_long_base64_runs_count(self):
        """image_bytes: runs of 1024 base64 characters or more, padding included; shorter
        runs and other text are not images."""
        data = b'{"a": "' + b"QUJD" * 300 + b'==", "b": "' + b"QUJD" * 200 + b'"}'
        self.assertEqual(body.image_bytes(data), 1202)
        self.assertEqual(body.image_bytes(b"word " * 1000), 0)


if __name__ == "__main__":
    unittest.main()
