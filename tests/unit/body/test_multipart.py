"""Stdlib-only tests of a multipart/form-data body split into its parts (onepass/multipart.py),
called directly: the request part, its Content-Type and the other parts by name; a preamble and
header names in any case; each way a body is malformed (no boundary in it, no closing one, a
part without its blank line or its form-data name, no request part, too many parts), each a 422
naming it; and a Content-Type parameter read. The boundary's length, two parts of one name and
the request part's own type through body.parse: tests/unit/body/test_decode.py.
Run: python3 -S -m unittest tests.unit.body.test_multipart
"""
import unittest

from onepass.body import multipart
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
