"""Stdlib tests of the PROXY protocol (onepass/edge/proxy_protocol.py): v1 and v2 headers
parsed (TCP over IPv4 and IPv6; UNKNOWN, LOCAL and other families name no client), malformed
ones refused, and a header told apart from HTTP by the bytes that arrived, however few at a
time, without reading any of them.
Run: python3 -S -m unittest tests.unit.edge.test_proxy_protocol
"""
import io
import ipaddress
import socket
import struct
import threading
import time
import unittest

from onepass.edge import proxy_protocol as pp
from onepass.edge.framing import ClientGone
from onepass.errors import MalformedHttp
from tests.support.edge_client import socket_pair


def v2(source: str, destination: str = "", command: int = 1, family: int | None = None,
       extra: bytes = b"") -> bytes:
    """A v2 header: PROXY (1) or LOCAL (0) over TCP, the family by the source's version."""
    src = ipaddress.ip_address(source)
    dst = ipaddress.ip_address(destination or ("127.0.0.1" if src.version == 4 else "::1"))
    family = family if family is not None else (0x11 if src.version == 4 else 0x21)
    rest = src.packed + dst.packed + struct.pack("!HH", 40000, 8741) + extra
    return pp.V2 + bytes([0x20 | command, family]) + struct.pack("!H", len(rest)) + rest


def read(data: bytes) -> str | None:
    return pp.read(io.BufferedReader(io.BytesIO(data)), pp.V1 if data[:1] == b"P" else pp.V2)


class TestProxyV1(unittest.TestCase):
    def test_tcp4_tcp6_unknown(self):
        self.assertEqual(read(b"PROXY TCP4 203.0.113.7 10.0.0.1 40000 8741\r\nGET"),
                         "203.0.113.7")
        self.assertEqual(read(b"PROXY TCP6 2001:db8::7 2001:db8::1 40000 8741\r\n"),
                         "2001:db8::7")
        self.assertIsNone(read(b"PROXY UNKNOWN\r\n"))
        self.assertIsNone(read(b"PROXY UNKNOWN 1 2 3 4\r\n"))

    def test_malformed(self):
        for line in (b"PROXY TCP4 203.0.113.7 10.0.0.1 40000\r\n",  # a port missing
                     b"PROXY TCP4  203.0.113.7 10.0.0.1 40000 8741\r\n",  # two spaces
                     b"PROXY TCP4 2001:db8::7 10.0.0.1 40000 8741\r\n",  # the wrong family
                     b"PROXY TCP4 203.0.113.7 10.0.0.1 65536 8741\r\n",
                     b"PROXY TCP4 203.0.113.7 10.0.0.1 040000 8741\r\n",
                     b"PROXY UDP4 203.0.113.7 10.0.0.1 40000 8741\r\n",
                     b"PROXY TCP4 203.0.113.7 10.0.0.1 40000 8741\n",  # bare LF: cut
                     b"PROXY TCP4 " + b"1" * 120 + b"\r\n"):
            with self.assertRaises((MalformedHttp, ClientGone), msg=line):
                read(line)
        with self.assertRaisesRegex(MalformedHttp, "at most 107 bytes"):
            read(b"PROXY TCP4 " + b"1" * 120 + b"\r\n")


class TestProxyV2(unittest.TestCase):
    def test_proxy_local_and_families(self):
        self.assertEqual(read(v2("203.0.113.7") + b"GET"), "203.0.113.7")
        self.assertEqual(read(v2("2001:db8::7", extra=b"\x01\x00\x02h2")), "2001:db8::7")
        self.assertIsNone(read(v2("203.0.113.7", command=0)))  # LOCAL: a health check
        self.assertIsNone(read(v2("203.0.113.7", family=0x12)))  # UDP: nothing to key on

    def test_malformed(self):
        bad_version = bytearray(v2("203.0.113.7"))
        bad_version[12] = 0x11
        short = v2("203.0.113.7")
        short = short[:14] + struct.pack("!H", 8) + short[16:24]
        huge = pp.V2 + b"\x21\x11" + struct.pack("!H", pp.V2_MAX + 1)
        for data in (bytes(bad_version), short, huge):
            with self.assertRaises(MalformedHttp, msg=data):
                read(data)
        with self.assertRaises(ClientGone):
            read(v2("203.0.113.7")[:20])


class TestAnnounced(unittest.TestCase):
    def announced(self, *pieces) -> bytes | None:
        """What announced() makes of `pieces` sent 50 ms apart on a real connection."""
        server, client = socket_pair(self)

        def send():
            for piece in pieces:
                client.sendall(piece)
                time.sleep(0.05)
        threading.Thread(target=send, daemon=True).start()
        rfile = io.BufferedReader(socket.SocketIO(server, "rb"))
        server.settimeout(5)
        found = pp.announced(rfile, server, time.monotonic() + 5)
        return found, rfile.read(len(b"".join(pieces)))

    def test_told_apart_by_the_bytes_that_arrived(self):
        for pieces, want in (((b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n",), pp.V1),
                             ((b"P", b"RO", b"XY UNKNOWN\r\n"), pp.V1),
                             ((v2("1.2.3.4")[:3], v2("1.2.3.4")[3:]), pp.V2),
                             ((b"P", b"OST / HTTP/1.1\r\n"), None),
                             ((b"\r\n", b"GET / HTTP/1.1\r\n"), None)):
            found, left = self.announced(*pieces)
            self.assertEqual(found, want, pieces)
            self.assertEqual(left, b"".join(pieces), "announced reads nothing")

    def test_a_prefix_that_never_completes_times_out(self):
        server, client = socket_pair(self)
        client.sendall(b"PRO")
        rfile = io.BufferedReader(socket.SocketIO(server, "rb"))
        with self.assertRaises(TimeoutError):
            pp.announced(rfile, server, time.monotonic() + 0.2)

    def test_a_close_inside_a_prefix_is_no_header(self):
        server, client = socket_pair(self)
        client.sendall(b"PRO")
        client.shutdown(socket.SHUT_WR)
        rfile = io.BufferedReader(socket.SocketIO(server, "rb"))
        self.assertIsNone(pp.announced(rfile, server, time.monotonic() + 5))


if __name__ == "__main__":
    unittest.main()
