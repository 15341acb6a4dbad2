"""Hostile clients whose costs a body's size does not show, each as raw requests from a source
address of its own (a second loopback address: 127.0.0.2), and a decision from another
(127.0.0.1) beside them: slow bodies that hold their connections, tiny chunks, stacked and
unknown encodings, multipart split into tiny parts, a huge asset placeholder, image links to
large images. Used by bench/measure/hostile_clients.py and tests/live/test_hostile_clients_live.py.
"""
import base64
import gzip
import json
import socket
import threading
import time
from dataclasses import dataclass

from onepass.backend.warmup import png
from tests.support.edge_client import read_response, request
from tests.support.hostile_bodies import NORMAL, QUESTIONS

HOSTILE_SOURCE, OTHER_SOURCE = "127.0.0.2", "127.0.0.1"
STATE_BYTES = 2 << 20  # the tiny-chunks body's state


def body(state: str = "x", **fields) -> bytes:
    return json.dumps({"model": "jev-latest", "state": state, "questions": QUESTIONS,
                       **fields}).encode()


def chunked(data: bytes, size: int) -> bytes:
    pieces = [data[i:i + size] for i in range(0, len(data), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def post(data: bytes, headers: dict, path: str = "/v1/systemone") -> bytes:
    return request("POST", path, data, {"Content-Type": "application/json",
                                        "Connection": "close", **headers})


def chunked_post(data: bytes, size: int, headers: dict) -> bytes:
    head = request("POST", "/v1/systemone", b"", {
        "Content-Type": "application/json", "Connection": "close",
        "Transfer-Encoding": "chunked", **headers})
    head = head.replace(b"Content-Length: 0\r\n", b"")
    return head + chunked(data, size)


def head_only(chunked: bool, headers: dict | None = None) -> bytes:
    """A decision's head and nothing more: chunked, or announcing 8 MiB."""
    framing = {"Transfer-Encoding": "chunked"} if chunked else {"Content-Length": "8388608"}
    raw = request("POST", "/v1/systemone", b"", {"Content-Type": "application/json",
                                                 **(headers or {}), **framing})
    return raw.replace(b"Content-Length: 0\r\n", b"") if chunked else raw


def multipart_post(headers: dict, size: int = 4 << 20) -> bytes:
    """`xy\\r\\n--a` repeated: a part per 8 bytes, none of them well formed."""
    return post(b"xy\r\n--a" * (size // 7), {
        **headers, "Content-Type": "multipart/form-data; boundary=a"})


def placeholder_post(headers: dict, length: int = 1_000_000) -> bytes:
    """An asset whose placeholder is `length` characters, with a tiny PNG."""
    key = "p" * length
    asset = {"type": "image", "format": "png",
             "data_base64": base64.b64encode(png(2, 2, (255, 0, 0))).decode()}
    return post(body(state=f"see {key[:10]}", assets={key: asset}), headers)


def links_post(headers: dict, url: str, links: int = 4) -> bytes:
    return post(body(images=[url] * links), headers)


@dataclass(frozen=True)
class Shape:
    name: str
    raw: bytes  # one request as sent
    plain: bytes | None = None  # the same request sent plainly (Content-Length), when there is one


def shapes(headers: dict, image_url: str = "") -> list:
    """Every shape but the slow bodies (slow_bodies holds those open)."""
    state = "x" * STATE_BYTES
    out = [Shape("10-byte body, Content-Encoding: br", post(b"\x0b\x02\x80{}" + b"\x03" * 5,
                                                              {**headers,
                                                               "Content-Encoding": "br"})),
           Shape("2 MiB state in 2-byte chunks", chunked_post(body(state), 2, headers),
                 post(body(state), headers)),
           Shape("Content-Encoding: gzip, gzip (137 bytes)", post(
               gzip.compress(gzip.compress(body("x" * ((12 << 20) - 200)), 9), 9),
               {**headers, "Content-Encoding": "gzip, gzip"})),
           Shape("4 MiB multipart of `xy\\r\\n--a`", multipart_post(headers)),
           Shape("asset placeholder of 1,000,000 characters", placeholder_post(headers))]
    if image_url:
        out.append(Shape("4 links to 20 MiB images", links_post(headers, image_url)))
    return out


def connect(addr, source: str, timeout: float = 60.0) -> socket.socket:
    return socket.create_connection(addr, timeout, source_address=(source, 0))


def send(addr, data: bytes, source: str = HOSTILE_SOURCE, timeout: float = 120.0) -> tuple:
    """(status, seconds, whether it carried Retry-After) of one request on its own connection
    from `source` (status 0: no complete answer). What the server does not read is dropped:
    it may answer before the body ends."""
    started, status, retry = time.monotonic(), 0, False
    try:
        with connect(addr, source, timeout) as sock:
            try:
                sock.sendall(data)
            except OSError:
                pass  # refused mid-body: its answer is waiting
            status, headers, _ = read_response(sock.makefile("rb"))
            retry = "retry-after" in headers
    except (OSError, AssertionError):
        pass
    return status, time.monotonic() - started, retry


def decision(addr, headers: dict, source: str = OTHER_SOURCE) -> tuple:
    """(status, seconds) of the normal decision from `source`."""
    return send(addr, post(json.dumps(NORMAL).encode(), headers), source, 600)[:2]


class SlowBodies:
    """`count` connections from HOSTILE_SOURCE, each a head of Content-Length: 100000 and five
    bytes of body, held open until closed."""

    def __init__(self, addr, headers: dict, count: int = 64):
        self.socks = []
        head = request("POST", "/v1/systemone", b"", {"Content-Type": "application/json",
                                                      **headers})
        head = head.replace(b"Content-Length: 0", b"Content-Length: 100000")
        for _ in range(count):
            sock = connect(addr, HOSTILE_SOURCE)
            sock.sendall(head + b'{"sta')
            self.socks.append(sock)

    def close(self) -> None:
        for sock in self.socks:
            sock.close()


def flood(addr, data: bytes, count: int) -> list:
    """`count` copies of one request at once from HOSTILE_SOURCE: [send's answers]."""
    results = [None] * count
    gate = threading.Barrier(count)

    def one(i):
        gate.wait()
        results[i] = send(addr, data)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return results
