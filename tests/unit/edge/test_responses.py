"""Stdlib-only tests of the response bytes and log-safe text (onepass/edge/responses.py): the head
(status line and phrase, the request id under both names, the length of the body, extra headers,
Connection: close only when closing), a JSON body in UTF-8 that refuses NaN, a HEAD answer
without its body, a Raw body sent as it is with its own headers, and client text escaped for
log lines.
Run: python3 -S -m unittest tests.unit.edge.test_responses
"""
import unittest

from onepass.edge.responses import Raw, printable, response


def split(data: bytes) -> tuple[str, dict, bytes]:
    """(status line, {header: value}, body) of response bytes."""
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    return status, dict(line.split(": ", 1) for line in lines), body


class TestResponse(unittest.TestCase):
    def test_a_json_document_and_its_head(self):
        """response: the status and its phrase, JSON in UTF-8 (non-ASCII as is), its length
        in bytes, the request id under both names, and the extra headers."""
        status, headers, body = split(response(200, {"t": "é"}, "req_1",
                                               {"retry-after-ms": "5"}, close=False))
        self.assertEqual(status, "HTTP/1.1 200 OK")
        self.assertEqual(body, '{"t": "é"}'.encode())
        self.assertEqual((headers["Content-Length"], headers["Content-Type"]),
                         (str(len(body)), "application/json"))
        self.assertEqual((headers["x-typesafe-request-id"], headers["x-request-id"]),
                         ("req_1", "req_1"))
        self.assertEqual((headers["retry-after-ms"], headers["Server"]), ("5", "onepass"))
        self.assertNotIn("Connection", headers)

    def test_closing_head_only_and_the_529_phrase(self):
        """response: Connection: close when closing; HEAD keeps the length and drops the body;
        529, outside http.HTTPStatus, is Overloaded."""
        full = response(529, {"detail": {}}, "r", {}, close=True)
        head = response(529, {"detail": {}}, "r", {}, close=True, head_only=True)
        status, headers, body = split(head)
        self.assertEqual((status, headers["Connection"], body), ("HTTP/1.1 529 Overloaded",
                                                                 "close", b""))
        self.assertEqual(headers["Content-Length"], str(len(split(full)[2])))
        self.assertEqual(full[:len(head)], head)

    def test_nan_is_refused(self):
        """response: a document JSON cannot carry is a ValueError (connections answers 500)."""
        with self.assertRaises(ValueError):
            response(200, {"p": float("nan")}, "r", {}, close=False)

    def test_a_raw_body_goes_as_it_is_with_its_headers(self):
        """response: a Raw body's bytes and type, its own headers, the call's extra over them."""
        raw = Raw(b"# HELP x\n", "text/plain; version=0.0.4",
                  (("Content-Security-Policy", "default-src 'self'"), ("X-Page", "raw")))
        _, headers, body = split(response(200, raw, "r", {"X-Page": "extra"}, close=False))
        self.assertEqual((body, headers["Content-Type"]), (b"# HELP x\n",
                                                           "text/plain; version=0.0.4"))
        self.assertEqual(headers["Content-Security-Policy"], "default-src 'self'")
        self.assertEqual(headers["X-Page"], "extra")


class TestPrintable(unittest.TestCase):
    def test_control_characters_and_non_ascii_are_escaped(self):
        """printable: a forged log line's newline, escape and DEL are \\xNN; é is \\xe9."""
        self.assertEqual(printable('/v1\r\n{"forged": 1}\x1b\x7fé'),
                         '/v1\\x0d\\x0a{"forged": 1}\\x1b\\x7f\\xe9')
        self.assertEqual(printable("/v1/systemone"), "/v1/systemone")

    def test_long_text_is_cut_before_escaping(self):
        """printable: at most `limit` characters of the text are shown, then escaped."""
        self.assertEqual(printable("a" * 500), "a" * 200)
        self.assertEqual(printable("\n" * 10, limit=3), "\\x0a" * 3)


if __name__ == "__main__":
    unittest.main()
