"""Stdlib-only tests of HTTP/1.1 framing (onepass/edge/framing.py) over in-memory bytes, for
what the socket-level corpus in test_security.py (fuzz_cases.CORPUS, test_strict_framing_is_served)
does not reach: the target's absolute form, HTTP/1.0 rules, keep-alive, empty lines before a
request, a clean close against a client gone mid-request, a body claimed a piece at a time as
it arrives, chunk extensions counted toward the wire limit, and the whole-request deadline.
Run: python3 -S -m unittest tests.unit.edge.test_framing
"""
import io
import time
import unittest

from onepass.edge import framing
from onepass.edge.framing import ClientGone, DeadlineReader, Head
from onepass.errors import HeaderTooLarge, MalformedHttp, Overloaded, PayloadTooLarge


def head(raw: bytes) -> Head | None:
    return framing.read_head(io.BytesIO(raw))


class TestHead(unittest.TestCase):
    def test_an_absolute_target_is_reduced_to_its_path(self):
        """read_head: http(s)://host/path?q becomes /path?q; a bare host becomes /."""
        self.assertEqual(head(b"GET http://x.test/v1/models?a=1 HTTP/1.1\r\nHost: x\r\n\r\n")
                         .target, "/v1/models?a=1")
        self.assertEqual(head(b"GET HTTPS://x.test HTTP/1.1\r\nHost: x\r\n\r\n").target, "/")
        with self.assertRaises(MalformedHttp):
            head(b"GET ftp://x.test/a HTTP/1.1\r\nHost: x\r\n\r\n")

    def test_http10_needs_no_host_and_closes_by_default(self):
        """Head: HTTP/1.0 needs no Host and keeps alive only when asked; 1.1 until close."""
        old = head(b"GET /health HTTP/1.0\r\n\r\n")
        self.assertEqual((old.http10, old.keep_alive), (True, False))
        self.assertTrue(head(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive)
        new = head(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: x, Close\r\n\r\n")
        self.assertEqual((new.http10, new.keep_alive), (False, False))
        self.assertTrue(head(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").keep_alive)

    def test_a_few_empty_lines_before_the_request_are_ignored(self):
        """read_head: up to MAX_EMPTY_LINES CRLFs before the request line; one more is a 400."""
        line = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        self.assertEqual(head(b"\r\n" * framing.MAX_EMPTY_LINES + line).method, "GET")
        with self.assertRaises(MalformedHttp):
            head(b"\r\n" * (framing.MAX_EMPTY_LINES + 1) + line)

    def test_a_clean_close_is_none_and_a_cut_head_is_client_gone(self):
        """read_head: no bytes at all is None; a head cut off inside is ClientGone."""
        self.assertIsNone(head(b""))
        for cut in (b"GET / HTTP/1.1\r\nHost: x\r\n", b"GET / HTTP/1.1\r\nHo"):
            with self.assertRaises(ClientGone, msg=cut):
                head(cut)

    def test_repeated_fields_join_and_the_head_is_bounded(self):
        """Fields: a repeated list field reads comma-joined; past MAX_HEAD_BYTES is a 431."""
        h = head(b"GET / HTTP/1.1\r\nHost: x\r\nAccept: a\r\naccept: b\r\n\r\n")
        self.assertEqual((h.fields.get("ACCEPT"), h.fields.all("accept")), ("a, b", ["a", "b"]))
        self.assertEqual(h.fields.get("missing", "none"), "none")
        lines = b"".join(b"X-%d: %s\r\n" % (i, b"v" * 8000) for i in range(9))  # over 64 KiB
        with self.assertRaises(HeaderTooLarge):
            head(b"GET / HTTP/1.1\r\nHost: x\r\n" + lines + b"\r\n")


class TestBody(unittest.TestCase):
    def test_a_body_cut_short_is_client_gone(self):
        """read_body: fewer bytes than Content-Length, or a chunk cut off, is ClientGone."""
        with self.assertRaises(ClientGone):
            framing.read_body(io.BytesIO(b"abc"), 5, 100)
        with self.assertRaises(ClientGone):
            framing.read_body(io.BytesIO(b"5\r\nab"), framing.CHUNKED, 100)

    def test_a_chunked_body_reads_exactly_its_chunks(self):
        """read_body: chunks joined, the trailer read, nothing past it consumed (the limit:
        13 bytes of data and the 4 of `;x=1`)."""
        rfile = io.BytesIO(b"3\r\nabc\r\nA;x=1\r\n0123456789\r\n0\r\nT: 1\r\n\r\nNEXT")
        self.assertEqual(framing.read_body(rfile, framing.CHUNKED, 17), b"abc0123456789")
        self.assertEqual(rfile.read(), b"NEXT")

    def test_chunk_extensions_count_toward_the_wire_limit(self):
        """read_body: a chunk's extensions are read, so their bytes count: 9 chunks of 100
        bytes with 8,001 bytes of extensions each are a 413 under a 64 KiB limit (the data
        alone is 900 bytes); at a limit of exactly data and extensions they are read."""
        ext, data = b";" + b"e" * 8000, b"x" * 100
        chunks = (b"64" + ext + b"\r\n" + data + b"\r\n") * 9 + b"0\r\n\r\n"
        with self.assertRaises(PayloadTooLarge):
            framing.read_body(io.BytesIO(chunks), framing.CHUNKED, 65536)
        exact = 9 * (len(ext) + len(data))
        self.assertEqual(framing.read_body(io.BytesIO(chunks), framing.CHUNKED, exact),
                         data * 9)
        with self.assertRaises(PayloadTooLarge):
            framing.read_body(io.BytesIO(chunks), framing.CHUNKED, exact - 1)
        last = b"0;" + b"e" * 100 + b"\r\n\r\n"  # the last chunk's count too
        with self.assertRaises(PayloadTooLarge):
            framing.read_body(io.BytesIO(b"1\r\nx\r\n" + last), framing.CHUNKED, 100)

    def test_a_body_is_claimed_a_piece_at_a_time_before_each_is_read(self):
        """read_body: claim(n) before n more bytes are read, PIECE at most and never ahead of
        them, so a body holds what it sent (plus one piece): a Content-Length body of 2.5
        pieces claims 3 times; a chunked one its chunks' data; a client that sent its head and
        nothing more has claimed one piece (chunked: nothing); a refused claim reads no more."""
        piece, claims = framing.PIECE, []

        def read(raw: bytes, length: int):
            rfile = io.BytesIO(raw)
            claims.clear()
            body = framing.read_body(rfile, length, 100 * piece,
                                     lambda n: claims.append((n, rfile.tell())))
            return body, rfile.tell()
        size = piece * 5 // 2
        self.assertEqual(read(b"x" * size, size), (b"x" * size, size))
        self.assertEqual(claims, [(piece, 0), (piece, piece), (piece // 2, 2 * piece)])
        chunked = b"3\r\nabc\r\n%x\r\n" % (2 * piece) + b"y" * 2 * piece + b"\r\n0\r\n\r\n"
        start = len(b"3\r\nabc\r\n%x\r\n" % (2 * piece))
        self.assertEqual(read(chunked, framing.CHUNKED)[0], b"abc" + b"y" * 2 * piece)
        self.assertEqual(claims, [(3, 3), (piece, start), (piece, start + piece)])
        for length, claimed in ((50 * piece, [(piece, 0)]), (framing.CHUNKED, [])):
            with self.assertRaises(ClientGone):
                read(b"", length)
            self.assertEqual(claims, claimed)
        rfile = io.BytesIO(b"x" * size)

        def refuse(n):
            raise Overloaded("no room", retry_after_ms=1000)
        with self.assertRaises(Overloaded):
            framing.read_body(rfile, size, 100 * piece, refuse)
        self.assertEqual(rfile.tell(), 0)

    def test_tiny_chunks_are_refused_past_the_free_ones(self):
        """read_body: up to FREE_CHUNKS chunks of any size; past them the chunks must average
        MIN_CHUNK_BYTES, so 2-byte chunks are refused (400) after ~1,000, not read to 2 MiB."""
        free, floor = framing.FREE_CHUNKS, framing.MIN_CHUNK_BYTES
        tiny = b"2\r\nab\r\n" * (1 << 20)
        rfile = io.BytesIO(tiny + b"0\r\n\r\n")
        with self.assertRaises(MalformedHttp) as ctx:
            framing.read_body(rfile, framing.CHUNKED, 12 << 20)
        self.assertIn("chunks are too small", ctx.exception.message)
        self.assertLess(rfile.tell(), 8 * (free + 2 * free * 2 // floor + 1))  # stopped early
        exact = b"2\r\nab\r\n" * free + b"0\r\n\r\n"  # the free ones: read
        self.assertEqual(framing.read_body(io.BytesIO(exact), framing.CHUNKED, 1 << 20),
                         b"ab" * free)
        even = (b"100\r\n" + b"x" * floor + b"\r\n") * (3 * free) + b"0\r\n\r\n"
        self.assertEqual(len(framing.read_body(io.BytesIO(even), framing.CHUNKED, 1 << 20)),
                         3 * free * floor)  # at the floor, any number


class TestDeadline(unittest.TestCase):
    def test_once_begun_every_wait_shares_one_deadline(self):
        """DeadlineReader: after begin(), a read past the deadline raises TimeoutError."""
        class Sock:
            def settimeout(self, s):
                self.timeout = s

            def recv_into(self, buffer):
                return 0
        sock = Sock()
        reader = DeadlineReader(sock, idle_s=75.0, request_s=0.05)
        reader.readinto(bytearray(1))
        self.assertEqual(sock.timeout, 75.0)  # between requests: the idle timeout
        reader.begin()
        reader.readinto(bytearray(1))
        self.assertLessEqual(sock.timeout, 0.05)
        time.sleep(0.06)
        with self.assertRaises(TimeoutError):
            reader.readinto(bytearray(1))
        reader.end()
        reader.readinto(bytearray(1))
        self.assertEqual(sock.timeout, 75.0)


if __name__ == "__main__":
    unittest.main()
