"""HTTP/1.1 framing (RFC 9112), strictly: request heads, body lengths and a whole-request deadline.

Owns: the request line, header field syntax and limits, which framing a body uses (Content-Length
as 1*DIGIT, or Transfer-Encoding exactly `chunked` with plain-hex sizes), reading a body without
ever reading past the size limit (into one buffer a piece at a time, each piece claimed before
it is read; a chunked body's chunks averaging a floor size, its extensions counted), and a
socket reader whose every wait counts against one deadline.
Never: routes, authenticates or decodes Content-Encoding. Anything ambiguous is MalformedHttp: the
server answers it once and closes, so a body can never be read as a second request.
In: a socket. Out: a Head, then the body bytes; or a typed error.
"""
from __future__ import annotations

import io
import re
import time
from dataclasses import dataclass

from ..errors import HeaderTooLarge, MalformedHttp, PayloadTooLarge, TargetTooLong

MAX_LINE_BYTES = 8192  # the request line, and each header line
MAX_HEAD_BYTES = 65536  # every header line together (the trailer section too)
MAX_FIELDS = 100
MAX_EMPTY_LINES = 4  # CRLFs before a request line are ignored (RFC 9112 2.2), a few of them
CHUNKED = -1  # body_length's answer for a chunked body
# Each chunk costs a line, a match and a read in Python: tiny chunks would make a body cost ~40
# times the time of the same bytes in one piece. Past the first FREE_CHUNKS, chunks must
# average MIN_CHUNK_BYTES (clients send 4 KiB and up; a 12 MiB body: at most ~50,000 chunks).
FREE_CHUNKS, MIN_CHUNK_BYTES = 1024, 256
PIECE = 64 * 1024  # a body is read, and claimed of the body budget, this much at a time
TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # control characters other than HTAB
DIGITS = re.compile(rb"[0-9]{1,18}")  # a Content-Length: no sign, no space, no underscore
CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})(?:;[\x20-\x7e\t]*)?")  # size [; extensions]
VERSION = re.compile(rb"HTTP/1\.[0-9]")
SINGLE = ("host", "content-length", "content-type", "authorization", "expect")


class ClientGone(ConnectionError):
    """The client closed the connection before its request was complete."""


class Fields:
    """Header fields by lower-case name; repeated list-valued fields read as one, comma-joined."""

    def __init__(self):
        self.values: dict[str, list[str]] = {}

    def add(self, name: str, value: str) -> None:
        self.values.setdefault(name.lower(), []).append(value)

    def get(self, name: str, default=None):
        found = self.values.get(name.lower())
        return ", ".join(found) if found else default

    def all(self, name: str) -> list[str]:
        return self.values.get(name.lower(), [])

    def tokens(self, name: str) -> set[str]:
        return {t.strip().lower() for t in (self.get(name) or "").split(",") if t.strip()}


@dataclass(frozen=True)
class Head:
    method: str
    target: str  # origin form: path and query
    http10: bool
    fields: Fields

    @property
    def keep_alive(self) -> bool:
        connection = self.fields.tokens("connection")
        return "keep-alive" in connection if self.http10 else "close" not in connection


def read_head(rfile) -> Head | None:
    """The next request's head; None when the client closed between requests."""
    for _ in range(MAX_EMPTY_LINES + 1):
        line = _line(rfile, MAX_LINE_BYTES, TargetTooLong, first=True)
        if line is None:
            return None
        if line:
            break
    else:
        raise MalformedHttp("expected a request line, got only empty lines")
    parts = line.split(b" ")
    if len(parts) != 3 or not TOKEN.fullmatch(parts[0]) or not VERSION.fullmatch(parts[2]):
        raise MalformedHttp("the request line must be METHOD SP target SP HTTP/1.x "
                            "(HTTP/1.0 and 1.1 are served)")
    method, target = parts[0].decode("ascii"), _target(parts[1])
    fields = read_fields(rfile)
    http10 = parts[2] == b"HTTP/1.0"
    for name in SINGLE:
        if len(fields.all(name)) > 1:
            raise MalformedHttp(f"more than one {name} header")
    if not http10 and not fields.all("host"):
        raise MalformedHttp("an HTTP/1.1 request needs a Host header")
    return Head(method, target, http10, fields)


def _target(raw: bytes) -> str:
    """The origin-form target; an absolute-form one (`http://host/path`) is reduced to it."""
    if raw.startswith(b"/"):
        target = raw
    elif re.fullmatch(rb"https?://[^/?#\s]+([/?].*)?", raw, re.IGNORECASE):
        target = b"/" + raw.split(b"/", 3)[3] if raw.count(b"/") >= 3 else b"/"
    else:
        raise MalformedHttp("the request target must be a path (origin form)")
    if re.search(rb"[\x00-\x20\x7f-\xff#]", target):
        raise MalformedHttp("the request target has characters that must be percent-encoded")
    return target.decode("ascii")


def read_fields(rfile) -> Fields:
    """Header (or trailer) lines up to the empty line: `name: value`, name a token, no space
    before the colon, no line folding, no control characters; bounded in count and size."""
    fields, total, count = Fields(), 0, 0
    while True:
        line = _line(rfile, MAX_LINE_BYTES, HeaderTooLarge)
        if line is None:
            raise ClientGone("the client closed the connection inside the request head")
        if not line:
            return fields
        total, count = total + len(line) + 2, count + 1
        if total > MAX_HEAD_BYTES or count > MAX_FIELDS:
            raise HeaderTooLarge(f"the request head exceeds {MAX_FIELDS} fields or "
                                 f"{MAX_HEAD_BYTES} bytes")
        name, colon, value = line.partition(b":")
        if line[:1] in (b" ", b"\t"):
            raise MalformedHttp("folded header lines (obs-fold) are not accepted")
        if not colon or not TOKEN.fullmatch(name):
            raise MalformedHttp("a header line must be a token name, a colon and a value")
        value = value.strip(b" \t")
        if BAD_VALUE.search(value):
            raise MalformedHttp(f"the {name.decode()} header has control characters")
        fields.add(name.decode("ascii"), value.decode("latin-1"))


def _line(rfile, limit: int, too_long, first: bool = False) -> bytes | None:
    """One CRLF-terminated line without its CRLF; None at a clean end of input (before any byte
    of a request). A bare LF or CR is malformed: senders and recipients must agree on lines."""
    line = rfile.readline(limit + 2)
    if not line:
        if first:
            return None
        raise ClientGone("the client closed the connection mid-request")
    if not line.endswith(b"\n"):
        if len(line) > limit:
            raise too_long(f"a request line or header line is longer than {limit} bytes")
        raise ClientGone("the client closed the connection mid-line")
    if not line.endswith(b"\r\n") or b"\r" in line[:-2]:
        raise MalformedHttp("lines must end with CRLF (no bare CR or LF)")
    return line[:-2]


def body_length(head: Head) -> int:
    """The body's length, 0 for none, or CHUNKED. Transfer-Encoding must be exactly `chunked`
    and never beside Content-Length; Content-Length is one field of digits."""
    codings, lengths = head.fields.all("transfer-encoding"), head.fields.all("content-length")
    if codings:
        if lengths:
            raise MalformedHttp("a request may not carry both Transfer-Encoding and "
                                "Content-Length")
        if head.http10:
            raise MalformedHttp("Transfer-Encoding is not defined for HTTP/1.0 requests")
        if len(codings) != 1 or codings[0].lower() != "chunked":
            raise MalformedHttp("Transfer-Encoding must be exactly chunked")
        return CHUNKED
    if not lengths:
        return 0
    if not DIGITS.fullmatch(lengths[0].encode("latin-1")):
        raise MalformedHttp("Content-Length must be a decimal number of at most 18 digits")
    return int(lengths[0])


def check_length(length: int, limit: int) -> None:
    if length > limit:
        raise PayloadTooLarge(f"the body is {length} bytes; this server accepts at most "
                              f"{limit} bytes per request")


def read_body(rfile, length: int, limit: int, claim=None) -> bytes:
    """The body, never reading past `limit` bytes of it (a chunked body's extensions count).
    It is read a piece at a time, and `claim(n)` is called before n more bytes are read: what
    a body holds grows with the bytes that arrive, never with what its head promises (a head
    and nothing more holds nothing)."""
    reader = _Pieces(rfile, claim)
    if length != CHUNKED:
        check_length(length, limit)
        return reader.read(length)
    wire, chunks = 0, 0  # the data and its extensions
    while True:
        line = _line(rfile, MAX_LINE_BYTES, MalformedHttp)
        match = CHUNK_SIZE.fullmatch(line)
        if not match:
            raise MalformedHttp("a chunk size must be 1 to 16 hex digits, optionally followed by "
                                "extensions (no sign, spaces or underscores)")
        size = int(match.group(1), 16)
        wire += len(line) - len(match.group(1))  # extensions are read, so they count
        if wire + size > limit:
            raise PayloadTooLarge(f"the body exceeds this server's limit of {limit} bytes "
                                  "per request (chunk extensions count)")
        if size == 0:
            read_fields(rfile)  # the trailer section: bounded like the head, then ignored
            return reader.body()
        chunks += 1
        wire += size
        if chunks > FREE_CHUNKS + (reader.size + size) // MIN_CHUNK_BYTES:
            raise MalformedHttp(f"the body's chunks are too small: past {FREE_CHUNKS} chunks "
                                f"they must average at least {MIN_CHUNK_BYTES} bytes (send "
                                "larger chunks, or a Content-Length)")
        reader.add(size)
        if _exactly(rfile, 2) != b"\r\n":
            raise MalformedHttp("chunk data must be followed by CRLF")


class _Pieces:
    """A body gathered in one growing buffer (handed on without a copy), PIECE bytes at a
    time, each piece claimed before it is read."""

    def __init__(self, rfile, claim):
        self.rfile, self.claim, self.buffer = rfile, claim, io.BytesIO()

    @property
    def size(self) -> int:
        return self.buffer.tell()

    def add(self, n: int) -> None:
        while n:
            piece = min(n, PIECE)
            if self.claim is not None:
                self.claim(piece)
            self.buffer.write(_exactly(self.rfile, piece))
            n -= piece

    def read(self, n: int) -> bytes:
        self.add(n)
        return self.body()

    def body(self) -> bytes:
        return self.buffer.getvalue()


def _exactly(rfile, n: int) -> bytes:
    data = rfile.read(n) if n else b""
    if len(data) < n:
        raise ClientGone("the client closed the connection mid-body")
    return data


class DeadlineReader(io.RawIOBase):
    """The socket's receiving side for a BufferedReader. Between requests each wait is the idle
    timeout; once a request has begun (`begin`), all its waits share one deadline, so a client
    trickling a byte at a time cannot keep a connection past the client timeout."""

    def __init__(self, sock, idle_s: float, request_s: float):
        self.sock, self.idle_s, self.request_s = sock, idle_s, request_s
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def begin(self) -> None:
        self.deadline = time.monotonic() + self.request_s

    def end(self) -> None:
        self.deadline = None

    def readinto(self, buffer) -> int:
        wait = self.idle_s if self.deadline is None else self.deadline - time.monotonic()
        if wait <= 0:
            raise TimeoutError("the request was not complete within the client timeout")
        self.sock.settimeout(wait)
        return self.sock.recv_into(buffer)
