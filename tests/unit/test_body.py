"""Stdlib-only tests of a request body decoded and parsed (onepass/body.py), beyond what
test_shim.py's TestTransport covers (gzip, its cap, zstd, NaN, bad UTF-8, deep nesting): `read`
from the headers, deflate and stacked codings, compressed streams cut or padded, numbers and
surrogates JSON cannot carry, and multipart's boundary and parts.
Run: python3 -S -m unittest tests.unit.test_body
"""
import gzip
import json
import unittest
import zlib

from onepass import body
from onepass.errors import InvalidRequest, PayloadTooLarge, UnsupportedMediaType
from tests.support.image_requests import multipart

DOC = {"state": "ticket", "n": 1.5}
RAW = json.dumps(DOC).encode()


class TestRead(unittest.TestCase):
    def test_read_decodes_then_parses_by_the_headers(self):
        """read: Content-Encoding undone, then Content-Type parsed; no headers reads plain JSON."""
        self.assertEqual(body.read(RAW, {}, 1 << 20), (DOC, {}))
        got = body.read(zlib.compress(RAW), {"Content-Encoding": "deflate",
                                              "Content-Type": "application/json"}, 1 << 20)
        self.assertEqual(got, (DOC, {}))
        raw, ctype = multipart(DOC, {"asset-0": b"\x89PNG"})
        got = body.read(gzip.compress(raw), {"Content-Encoding": "gzip", "Content-Type": ctype},
                        1 << 20)
        self.assertEqual(got, (DOC, {"asset-0": b"\x89PNG"}))

    def test_read_caps_the_decoded_size(self):
        """read: a deflate body decoding past max_decoded_bytes is 413, at one byte over."""
        headers = {"Content-Encoding": "deflate"}
        self.assertEqual(body.read(zlib.compress(RAW), headers, len(RAW))[0], DOC)
        with self.assertRaises(PayloadTooLarge):
            body.read(zlib.compress(RAW), headers, len(RAW) - 1)


class TestCodings(unittest.TestCase):
    def test_stacked_codings_are_undone_in_reverse(self):
        """decode: "deflate, gzip" was deflated first, so it is gunzipped first; three is 415."""
        data = gzip.compress(zlib.compress(RAW))
        self.assertEqual(body.decode(data, "deflate, gzip", 1 << 20), RAW)
        with self.assertRaises(InvalidRequest):
            body.decode(data, "gzip, deflate", 1 << 20)  # the wrong order: not a zlib stream
        self.assertEqual(body.decode(gzip.compress(RAW), " X-GZIP , identity", 1 << 20), RAW)
        with self.assertRaises(UnsupportedMediaType):
            body.decode(RAW, "identity, identity, identity", 1 << 20)

    def test_a_stream_cut_or_padded_is_422(self):
        """decode: a gzip stream missing its trailer, or with bytes after its end, is a 422."""
        whole = gzip.compress(RAW)
        for bad in (whole[:-4], whole + b"x", b"not gzip at all"):
            with self.assertRaises(InvalidRequest) as ctx:
                body.decode(bad, "gzip", 1 << 20)
            self.assertEqual(ctx.exception.problems[0].type, "value_error")


class TestJson(unittest.TestCase):
    def test_numbers_past_a_float_and_lone_surrogates_are_422(self):
        """parse_json: 1e400 and a lone \\ud800 escape are refused; a surrogate pair parses."""
        for bad in (b'{"n": 1e400}', b'{"n": -1e400}', b'{"s": "\\ud800"}', b'["\\udfff x"]'):
            with self.assertRaises(InvalidRequest, msg=bad) as ctx:
                body.parse_json(bad, "application/json")
            self.assertEqual(ctx.exception.problems[0].type, "json_invalid")
        self.assertEqual(body.parse_json(b'{"s": "\\ud83c\\udfaf"}', ""), {"s": "\U0001f3af"})

    def test_json_media_types(self):
        """parse_json: application/json with parameters and any +json type pass; others are 415."""
        for ctype in ("application/json; charset=utf-8", "application/problem+json",
                      "APPLICATION/JSON", ""):
            self.assertEqual(body.parse_json(RAW, ctype), DOC, ctype)
        for ctype in ("application/xml", "application/jsonx"):
            with self.assertRaises(UnsupportedMediaType):
                body.parse_json(RAW, ctype)

    def test_exactly_the_depth_limit_parses(self):
        """parse_json: MAX_JSON_DEPTH nested arrays parse; one more is a 422."""
        depth = body.MAX_JSON_DEPTH
        self.assertIsInstance(body.parse_json(b"[" * depth + b"]" * depth, ""), list)
        with self.assertRaises(InvalidRequest):
            body.parse_json(b"[" * (depth + 1) + b"]" * (depth + 1), "")


class TestMultipart(unittest.TestCase):
    def test_boundary_rules(self):
        """parse: a quoted boundary works; a missing or 71-character one is 422."""
        raw, _ = multipart(DOC, {}, boundary="b0")
        self.assertEqual(body.parse(raw, 'multipart/form-data; boundary="b0"'), (DOC, {}))
        long = "b" * 71
        raw, ctype = multipart(DOC, {}, boundary=long)
        for bad in (ctype, "multipart/form-data; charset=x"):
            with self.assertRaises(InvalidRequest):
                body.parse(raw, bad)
        self.assertEqual(body.parse(*multipart(DOC, {}, boundary="b" * 70)), (DOC, {}))

    def test_duplicate_part_names_are_422(self):
        """parse: two parts with one name are refused, the request part included."""
        raw, ctype = multipart(DOC, {"asset": b"1"})
        twice = raw.replace(b'name="asset"', b'name="request"')
        with self.assertRaises(InvalidRequest) as ctx:
            body.parse(twice, ctype)
        self.assertIn("two parts are named 'request'", ctx.exception.problems[0].msg)

    def test_the_request_part_is_held_to_its_own_content_type(self):
        """parse: a request part sent as text/plain is 415; one without a type is JSON."""
        raw, ctype = multipart(DOC, {})
        with self.assertRaises(UnsupportedMediaType):
            body.parse(raw.replace(b"application/json", b"text/plain"), ctype)
        bare = raw.replace(b"Content-Type: application/json\r\n", b"")
        self.assertEqual(body.parse(bare, ctype), (DOC, {}))


if __name__ == "__main__":
    unittest.main()
