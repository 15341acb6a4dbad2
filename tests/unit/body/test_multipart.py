"""Stdlib-only tests of a multipart/form-data body split into its parts (onepass/multipart.py),
called directly: the request part, its Content-Type and the other parts by name; a preamble and
header names in any case; each way a body is malformed (no boundary in it, no closing one, a
part without its blank line or its form-data name, no request part, too many parts, a part's
headers past 8 KiB or 32 lines), each a 422 naming it, the capped headers refused with memory
bounded by the body's own size; and a Content-Type parameter read. The boundary's length, two
parts of one name and the request part's own type through body.parse:
tests/unit/body/test_decode.py.
Run: python3 -S -m unittest tests.unit.body.test_multipart
"""
import gzip
import tracemalloc
import unittest

from onepass.body import decode, multipart
from onepass.body.limits import Limits
from onepass.errors import InvalidRequest

PARAMS = "boundary=xyz"


def part(name: str, data: bytes, ctype: str = "") -> bytes:
    head = f'--xyz\r\nContent-Disposition: form-data; name="{name}"\r\n'
    return (head + (f"Content-Type: {ctype}\r\n" if ctype else "") + "\r\n").encode() + data


def body(*parts: bytes) -> bytes:
    return b"\r\n".join(parts) + b"\r\n--xyz--\r\n"


class TestSplit(unittest.TestCase):
    def refused(self, data: bytes, words: str) -> None:
        with self.assertRaises(InvalidRequest) as ctx:
            multipart.split(data, PARAMS)
        self.assertIn(words, ctx.exception.problems[0].msg)

    def test_the_request_its_type_and_the_other_parts(self):
        """split: the request part's bytes and Content-Type; every other part by its name."""
        data = body(part("request", b'{"a": 1}', "application/json"),
                    part("logo", b"\x89PNG\r\n", "image/png"), part("photo", b""))
        self.assertEqual(multipart.split(data, PARAMS),
                         (b'{"a": 1}', "application/json", {"logo": b"\x89PNG\r\n",
                                                            "photo": b""}))

    def test_a_preamble_and_header_names_in_any_case(self):
        """split: text before the first boundary is ignored; CONTENT-TYPE is Content-Type."""
        data = b"preamble\r\n" + body(b"--xyz\r\ncontent-disposition: form-data; name=request"
                                      b"\r\nCONTENT-TYPE: application/json\r\n\r\n{}")
        self.assertEqual(multipart.split(data, PARAMS), (b"{}", "application/json", {}))

    def test_each_malformed_body_is_a_422_saying_how(self):
        request = part("request", b"{}")
        cases = {b"no boundary here": "the boundary never occurs",
                 request: "no closing boundary",
                 body(b"--xyz\r\nContent-Disposition: form-data; name=request"):
                     "without a blank line",
                 body(b'--xyz\r\nContent-Disposition: attachment; name="request"\r\n\r\n{}'):
                     "form-data with a name",
                 body(b"--xyz\r\nContent-Disposition: form-data\r\n\r\n{}"):
                     "form-data with a name",
                 body(part("image", b"1")): 'a part named "request"'}
        for data, words in cases.items():
            with self.subTest(words=words):
                self.refused(data, words)

    def test_at_most_max_parts(self):
        """split: MAX_PARTS parts (the request among them) pass; one more is refused."""
        files = [part(f"f{i}", b"x") for i in range(multipart.MAX_PARTS - 1)]
        request = part("request", b"{}")
        self.assertEqual(len(multipart.split(body(request, *files), PARAMS)[2]),
                         multipart.MAX_PARTS - 1)
        self.refused(body(request, *files, part("one-more", b"x")),
                     f"more than {multipart.MAX_PARTS} parts")

    def test_a_parts_headers_have_a_byte_and_a_line_cap(self):
        """split: a part's headers up to MAX_PART_HEAD_BYTES and MAX_PART_HEAD_LINES lines
        pass; a byte or a line more is a 422 naming the cap, found before they are split."""
        disposition = b'\r\nContent-Disposition: form-data; name="request"'
        lines = multipart.MAX_PART_HEAD_LINES
        most = b"--xyz" + disposition + b"\r\nX-a: b" * (lines - 1) + b"\r\n\r\n{}"
        self.assertEqual(multipart.split(body(most), PARAMS)[0], b"{}")
        self.refused(body(most.replace(b"\r\n\r\n{}", b"\r\nX-a: b\r\n\r\n{}")),
                     f"more than {lines} header lines")
        room = multipart.MAX_PART_HEAD_BYTES - len(disposition) - len(b"\r\nX-a: ")
        longest = b"--xyz" + disposition + b"\r\nX-a: " + b"v" * room + b"\r\n\r\n{}"
        self.assertEqual(multipart.split(body(longest), PARAMS)[0], b"{}")
        self.refused(body(longest.replace(b"v\r\n\r\n", b"vv\r\n\r\n")),
                     f"longer than {multipart.MAX_PART_HEAD_BYTES} bytes")

    def test_millions_of_header_lines_are_refused_within_the_bodys_own_memory(self):
        """The issue's body: `--B` and `a:b` lines up to the decoded cap, gzip'd (a few KB on
        the wire), then a blank line and a closing boundary: a 422 through body.read, and
        splitting takes no more memory than the decoded body itself (splitting it into lines
        took 15 times that)."""
        raw = b"--B\r\n" + b"a:b\r\n" * 400_000 + b"\r\n{}\r\n--B--\r\n"
        headers = {"Content-Encoding": "gzip", "Content-Type": "multipart/form-data; boundary=B"}
        with self.assertRaises(InvalidRequest) as ctx:
            decode.read(gzip.compress(raw), headers, Limits(decoded_bytes=4 << 20))
        self.assertIn("longer than", ctx.exception.problems[0].msg)
        tracemalloc.start()
        try:
            with self.assertRaises(InvalidRequest):
                multipart.split(raw, "boundary=B")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.assertLess(peak, len(raw))


class TestParam(unittest.TestCase):
    def test_a_parameter_by_name_in_any_case_unquoted(self):
        """param: the value of the named parameter, quotes and spaces stripped; None when
        absent."""
        params = ' charset=utf-8 ; Boundary="a b" '
        self.assertEqual(multipart.param(params, "boundary"), "a b")
        self.assertEqual(multipart.param(params, "charset"), "utf-8")
        self.assertIsNone(multipart.param(params, "name"))


if __name__ == "__main__":
    unittest.main()
