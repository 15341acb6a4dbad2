"""Stdlib-only tests of a request body decoded and parsed (onepass/body.py): `read` from the
headers; gzip and its cap, zstd when installed, deflate, one layer at most, unknown codings,
compressed streams cut or padded; strict JSON (NaN, bad UTF-8, truncated, deep nesting, numbers
and surrogates JSON cannot carry) and its media types; and multipart's boundary and parts. And
what a body may cost: the JSON's values and depth counted before it is parsed (a structure bomb
never reaches json.loads), images counted beside the JSON's own bytes, and the bytes it holds
once decoded and parsed (tracemalloc's peak against them).
Run: python3 -S -m unittest tests.unit.body.test_decode
"""
import gzip
import json
import unittest
import zlib
from unittest import mock

from onepass.body import decode as body, limits as body_limits
from onepass.decision_model import MAX_STATE_BYTES
from onepass.errors import InvalidRequest, Overloaded, PayloadTooLarge, UnsupportedMediaType
from tests.support.image_requests import multipart
from tests.support.memory_peak import peak_of

DOC = {"state": "ticket", "n": 1.5}
RAW = json.dumps(DOC).encode()


def limits(**changes):
    return body_limits.Limits(**{"decoded_bytes": 1 << 20, **changes})


def items(n: int, item: bytes = b"{}") -> bytes:
    """A JSON array of n copies of `item`."""
    return b"[" + b",".join([item] * n) + b"]"


class TestRead(unittest.TestCase):
    def test_read_decodes_then_parses_by_the_headers(self):
        """read: Content-Encoding undone, then Content-Type parsed; no headers reads plain JSON."""
        self.assertEqual(body.read(RAW, {}, limits()), (DOC, {}))
        got = body.read(zlib.compress(RAW), {"Content-Encoding": "deflate",
                                              "Content-Type": "application/json"}, limits())
        self.assertEqual(got, (DOC, {}))
        raw, ctype = multipart(DOC, {"asset-0": b"\x89PNG"})
        got = body.read(gzip.compress(raw), {"Content-Encoding": "gzip", "Content-Type": ctype},
                        limits())
        self.assertEqual(got, (DOC, {"asset-0": b"\x89PNG"}))

    def test_read_caps_the_decoded_size(self):
        """read: a deflate body decoding past max_decoded_bytes is 413, at one byte over."""
        headers = {"Content-Encoding": "deflate"}
        self.assertEqual(body.read(zlib.compress(RAW), headers,
                                   body_limits.Limits(decoded_bytes=len(RAW)))[0], DOC)
        with self.assertRaises(PayloadTooLarge):
            body.read(zlib.compress(RAW), headers, body_limits.Limits(decoded_bytes=len(RAW) - 1))


class TestCodings(unittest.TestCase):
    def test_gzip_under_its_cap_and_unknown_codings(self):
        """decode: gzip bodies decode; a decoded body over the limit is 413; an unknown coding
        (br) is 415."""
        data = json.dumps({"a": "x" * 5000}).encode()
        self.assertEqual(body.decode(gzip.compress(data), "gzip", 1 << 20), data)
        with self.assertRaises(PayloadTooLarge):
            body.decode(gzip.compress(b"0" * 100000), "gzip", 1000)
        with self.assertRaises(UnsupportedMediaType):
            body.decode(data, "br", 1 << 20)

    def test_zstd_when_available(self):
        """decode: zstd decodes with compression.zstd/backports.zstd, else 415 saying how."""
        if body.body_limits.ZSTD is None:
            with self.assertRaises(UnsupportedMediaType) as ctx:
                body.decode(b"\x28\xb5\x2f\xfd", "zstd", 1000)
            self.assertIn("backports.zstd", ctx.exception.message)
        else:
            data = b'{"a": 1}' * 300
            self.assertEqual(body.decode(body.body_limits.ZSTD.compress(data), "zstd", 1 << 20), data)

    def test_one_layer_at_most(self):
        """decode: identity aside, one coding; two layers (each would multiply what a few
        bytes decode to) are a 415 before anything is decoded."""
        self.assertEqual(body.decode(gzip.compress(RAW), " X-GZIP , identity", 1 << 20), RAW)
        self.assertEqual(body.decode(RAW, "identity, identity", 1 << 20), RAW)
        for stacked in ("deflate, gzip", "gzip, gzip", "gzip,deflate"):
            with self.assertRaises(UnsupportedMediaType, msg=stacked) as ctx:
                body.decode(gzip.compress(zlib.compress(RAW)), stacked, 1 << 20)
            self.assertIn("one content coding at most", ctx.exception.message)

    def test_a_stream_cut_or_padded_is_422(self):
        """decode: a gzip stream missing its trailer, or with bytes after its end, is a 422."""
        whole = gzip.compress(RAW)
        for bad in (whole[:-4], whole + b"x", b"not gzip at all"):
            with self.assertRaises(InvalidRequest) as ctx:
                body.decode(bad, "gzip", 1 << 20)
            self.assertEqual(ctx.exception.problems[0].type, "value_error")


class TestJson(unittest.TestCase):
    def test_strict_json(self):
        """parse_json: NaN, bad UTF-8, truncated JSON and deep nesting left open are 422."""
        for bad in (b'{"a": NaN}', b"\xff", b'{"model": "jev-latest", "state": "x", "questions": {',
                    b"[" * 100000):
            with self.assertRaises(InvalidRequest, msg=bad):
                body.parse_json(bad, "application/json")

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
        for ctype in ("application/xml", "application/jsonx", "text/plain"):
            with self.assertRaises(UnsupportedMediaType):
                body.parse_json(RAW, ctype)

    def test_exactly_the_depth_limit_parses_brackets_in_strings_do_not_count(self):
        """parse_json: MAX_JSON_DEPTH nested arrays parse; one more is a 422; brackets inside a
        string (among escaped quotes and backslashes) are text, not nesting."""
        depth = body_limits.MAX_DEPTH
        self.assertIsInstance(body.parse_json(b"[" * depth + b"]" * depth, ""), list)
        with self.assertRaises(InvalidRequest):
            body.parse_json(b"[" * (depth + 1) + b"]" * (depth + 1), "")
        text = json.dumps({"s": "[{" * 5000 + '\\"[' + "\\" * 7})
        self.assertEqual(body.parse_json(text.encode(), ""), json.loads(text))


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


class FakeHold:
    """What body.read asks of its hold on the body budget, recorded; `room` bytes at most."""

    def __init__(self, held: int, room: int = 1 << 40):
        self.held, self.room, self.sizes = held, room, []

    def take(self, n: int) -> None:
        self.resize(self.held + n)

    def give(self, n: int) -> None:
        self.resize(self.held - n)

    def resize(self, n: int) -> None:
        if n > self.room:
            raise Overloaded("no room", retry_after_ms=1000)
        self.held = n
        self.sizes.append(n)


class TestStructure(unittest.TestCase):
    """The JSON's values and nesting are counted from its bytes before json.loads builds any
    object; what is left to parse is bounded by them."""

    def test_a_structure_bomb_never_reaches_json_loads(self):
        """parse_json: 600,000 empty objects in 1.8 MB (json.loads would build 600,000 dicts,
        about 25x the bytes) are a 413 counted from their commas and brackets: json.loads is
        never called."""
        with mock.patch.object(json, "loads", wraps=json.loads) as loads:
            with self.assertRaises(PayloadTooLarge) as ctx:
                body.parse_json(items(600_000), "application/json")
        loads.assert_not_called()
        self.assertIn(f"{body_limits.MAX_VALUES} values", ctx.exception.message)

    def test_a_gzip_bomb_costs_a_few_times_its_decoded_size(self):
        """decode + parse_json: 4 MiB of `[{},{},...]` from 4 KiB of gzip is refused with a
        peak under 3x the decoded bytes (the old parse peaked near 50x: 200 MiB)."""
        bomb = gzip.compress(items(1_400_000), 9)
        self.assertLess(len(bomb), 8192)

        def parse():
            with self.assertRaises(PayloadTooLarge):
                body.parse_json(body.decode(bomb, "gzip", 8 << 20), "application/json")
        self.assertLess(peak_of(parse), 3 * 4_200_000)

    def test_values_are_counted_outside_strings_exactly_at_the_limit(self):
        """parse_json: a body of exactly `values` values parses, one more is a 413; commas and
        brackets inside strings are not values."""
        doc = json.dumps({"a": ["x,[{", 2, {"b": None}], "c": "\\\",]"}).encode()
        shape = body.scan(doc, limits(values=7))  # 3 brackets, 3 commas, plus one
        self.assertEqual((shape.values, shape.depth), (7, 3))
        self.assertEqual(body.parse_json(doc, "", limits(values=7)), json.loads(doc))
        with self.assertRaises(PayloadTooLarge):
            body.parse_json(doc, "", limits(values=6))

    def test_the_scan_agrees_with_the_parsed_value(self):
        """parse_json: over tricky texts (escapes, quotes and brackets in strings, keys, empty
        containers, non-ASCII) the depth limit holds at exactly the parsed value's depth, and
        the count of values covers every value json.loads builds."""
        docs = [[], {}, [[]], {"a": {}}, {"\"[": ["]\\", "\\\"{", [1, [2, [3]]]]},
                ["é", "😀", "\u2028", "[[[["], [{"k": [{"k": []}]}] * 3, {"": ""}]
        for doc in docs:
            for text in (json.dumps(doc, ensure_ascii=False).encode(), json.dumps(doc).encode()):
                self.assertEqual(body.parse_json(text, "", limits(depth=depth(doc))), doc)
                with self.assertRaises(InvalidRequest, msg=text):
                    body.parse_json(text, "", limits(depth=depth(doc) - 1))
                self.assertGreaterEqual(body.scan(text, limits()).values,
                                        count(doc), text)

    def test_the_estimate_covers_what_json_loads_takes(self):
        """Shape.parse_bytes: for the costliest shapes per byte (empty and one-key objects,
        distinct keys, objects and arrays nested 98 deep, tiny strings, floats, one string
        wider than ASCII, escapes that widen strings) tracemalloc's peak of the parse stays
        under the estimate the body budget is charged."""
        wide = "😀" + "x" * 300_000
        shapes = {"empty objects": items(200_000), "one-key objects": items(100_000, b'{"a":0}'),
                  "distinct keys": b"{" + b",".join(b'"k%d":0' % i for i in range(150_000))
                  + b"}", "objects of distinct keys": b"[" + b",".join(
                      b'{"k%d":0}' % i for i in range(100_000)) + b"]",
                  "nested objects": items(2000, b'{"":' * 98 + b"0" + b"}" * 98),
                  "nested arrays": items(2000, b"[" * 98 + b"]" * 98),
                  "tiny strings": items(200_000, b'"ab"'),
                  "floats": items(200_000, b"1.5"), "wide text": json.dumps(
                      [wide], ensure_ascii=False).encode(),
                  "escapes": items(1000, json.dumps(wide[:1000]).encode())}
        for name, text in shapes.items():
            shape = body.scan(text, limits(values=10 ** 6))
            got = peak_of(lambda: json.loads(text.decode()))
            self.assertLess(got, shape.parse_bytes(len(text)), name)

    def test_a_string_no_field_takes_never_reaches_json_loads(self):
        """parse_json: a string longer than `string_bytes` (the state limit) is a 413 found from
        its quotes, json.loads never called: the 12 MiB string with one emoji cost the shim
        48 MiB of characters twice and ~85 ms of its interpreter lock before the state limit
        refused it. Exactly the limit parses; escapes, runs between strings and escaped quotes
        before the string are not mistaken."""
        lim = limits(string_bytes=1000)
        refused = [b'{"state": "\xf0\x9f\x98\x80' + b"x" * 997 + b'"}',
                   b'{"a": "q\\"q\\\\", "state": "' + b"x" * 1001 + b'"}',
                   b'["' + b"x" * 3000 + b'"]']
        for text in refused:
            with mock.patch.object(json, "loads", wraps=json.loads) as loads:
                with self.assertRaises(PayloadTooLarge, msg=text) as ctx:
                    body.parse_json(text, "", lim)
            loads.assert_not_called()
            self.assertIn("at most 1000 bytes", ctx.exception.message)
            named = "a state" if b'"state"' in text else "a string"
            self.assertTrue(ctx.exception.message.startswith(f"the JSON holds {named} of"),
                            ctx.exception.message)
        image = b'{"state": "<p>", "assets": {"<p>": {"type": "image", "data_base64": "'
        with self.assertRaises(PayloadTooLarge) as ctx:  # a vision profile's longest field
            body.parse_json(image + b"A" * (MAX_STATE_BYTES + 9) + b'"}}}', "",
                            limits(string_bytes=MAX_STATE_BYTES + 8))
        self.assertTrue(ctx.exception.message.startswith("the JSON holds an image of at least"))
        self.assertIn("(an image, as base64 in a data URL, the longest", ctx.exception.message)
        parsed = [b'{"state": "' + b"x" * 1000 + b'"}',
                  b'{"state": "' + b"\\n" * 501 + b'"}',  # 1002 bytes sent, 501 meant
                  b'{"a": "b",' + b" " * 1500 + b'"c": "d"}',
                  b'{"a": "x\\"' + b"y" * 1200 + b'"}']  # past an escaped quote: json.loads
        for text in parsed:  # (the state limit, later, refuses that one if it is the state)
            self.assertEqual(body.parse_json(text, "", lim), json.loads(text), text)

    def test_images_are_counted_beside_the_json(self):
        """parse_json: on a vision profile the JSON may carry `image_bytes` of base64 beyond its
        own `decoded_bytes`; text in their place is a 413."""
        vision = limits(decoded_bytes=4096, image_bytes=40_000)
        image = json.dumps({"state": "x", "images": ["QUJD" * 8000]}).encode()
        self.assertEqual(len(body.parse_json(image, "", vision)["images"][0]), 32_000)
        text = json.dumps({"state": "word " * 6400}).encode()
        with self.assertRaises(PayloadTooLarge) as ctx:
            body.parse_json(text, "", vision)
        self.assertIn("4096 bytes besides images", ctx.exception.message)


def depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


def count(value) -> int:
    inner = value.values() if isinstance(value, dict) else value if isinstance(value, list) \
        else ()
    return 1 + sum(map(count, inner))


class TestBudget(unittest.TestCase):
    """What a body claims of the body budget before it is read, and holds once it is."""

    def test_read_holds_what_the_body_takes(self):
        """read: once counted, the hold is resized to the body's bytes, its decoded text and
        the parse's estimate (text wider than ASCII at its width), and the text is given back
        once parsed."""
        ascii_doc = json.dumps({"state": "x" * 100_000}).encode()
        wide_doc = json.dumps({"state": "😀" + "x" * 100_000}, ensure_ascii=False).encode()
        held = {}
        for name, doc in (("ascii", ascii_doc), ("wide", wide_doc)):
            hold = FakeHold(body_limits.reading(len(doc)))  # as read off the wire
            body.read(doc, {}, limits(), hold)
            held[name] = max(hold.sizes)
            self.assertGreaterEqual(held[name], 3 * len(doc))
            self.assertLess(hold.sizes[-1], held[name] - len(doc))  # the text given back
        self.assertGreater(held["wide"], 2.5 * held["ascii"])

    def test_no_room_is_a_retryable_refusal_before_parsing(self):
        """read: a hold the budget cannot grow ends the read with its 529 before json.loads."""
        doc = json.dumps({"state": "😀" * 10_000}).encode()
        with mock.patch.object(json, "loads", wraps=json.loads) as loads:
            with self.assertRaises(Overloaded):
                body.read(doc, {}, limits(), FakeHold(len(doc), room=2 * len(doc)))
        loads.assert_not_called()


if __name__ == "__main__":
    unittest.main()
