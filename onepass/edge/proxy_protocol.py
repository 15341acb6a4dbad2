"""The PROXY protocol (HAProxy's, versions 1 and 2): the header a proxy sends at the start of a
connection, before any HTTP, naming the client it accepted the connection from.

Owns: telling whether a connection starts with such a header (from bytes that arrived, never by
guessing) and reading one: its client's address, or None when it names none (v1 `UNKNOWN`, a
v2 `LOCAL` command such as a health check's, an address family other than TCP over IPv4/IPv6).
Never: decides whether the peer may send one (real_client.py and connections.py do: only a
trusted proxy may); a header that is not exactly the protocol's is MalformedHttp (400, closed).
In: the connection's buffered reader and socket. Out: V1, V2 or None; then an address or None.
"""
from __future__ import annotations

import ipaddress
import socket
import struct
import time

from .framing import ClientGone
from ..errors import MalformedHttp

V1, V2 = b"PROXY ", b"\r\n\r\n\x00\r\nQUIT\n"  # each version's first bytes
V1_MAX = 107  # the longest v1 line, CRLF included (the protocol's own bound)
V2_MAX = 1024  # v2 addresses and TLVs read at most (TCP over IPv6 needs 36; HAProxy sends TLVs)
PEEK_PAUSE_S = 0.01  # between looks at a header that arrives a few bytes at a time


def announced(rfile, sock, deadline: float) -> bytes | None:
    """V1 or V2 when the connection's first bytes are that header's, else None. Bytes that could
    still begin one (`P`, `\\r\\n`) are waited for, looked at and left unread, until `deadline`."""
    seen = buffered = rfile.peek(1)[:len(V2)]
    while _undecided(seen):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request was not complete within the client timeout")
        sock.settimeout(left)
        more = sock.recv(len(V2) - len(buffered), socket.MSG_PEEK)
        if not more:
            break  # closed: what came is all there is
        if len(buffered + more) == len(seen):
            time.sleep(PEEK_PAUSE_S)  # part of it is there, the rest is on its way
        seen = buffered + more
    return V1 if seen.startswith(V1) else V2 if seen.startswith(V2) else None


def _undecided(seen: bytes) -> bool:
    return any(len(seen) < len(sig) and sig.startswith(seen) for sig in (V1, V2))


def read(rfile, version: bytes) -> str | None:
    """Read the header `announced` found: its client's address, or None when it names none."""
    if version == V1:
        line = rfile.readline(V1_MAX + 1)
        if not line.endswith(b"\r\n"):
            if len(line) > V1_MAX:
                raise malformed(f"a v1 line is at most {V1_MAX} bytes")
            raise ClientGone("the client closed the connection inside its PROXY header")
        return parse_v1(line[:-2])
    fixed = _exactly(rfile, 16)
    length = struct.unpack("!H", fixed[14:16])[0]
    if length > V2_MAX:
        raise malformed(f"a v2 header's addresses and TLVs are at most {V2_MAX} bytes here")
    return parse_v2(fixed, _exactly(rfile, length))


def parse_v1(line: bytes) -> str | None:
    """`PROXY TCP4|TCP6 <source> <destination> <source port> <destination port>` (without its
    CRLF): the source; `PROXY UNKNOWN ...`: None."""
    parts = line.split(b" ")
    if parts[:2] == [b"PROXY", b"UNKNOWN"]:
        return None
    if len(parts) != 6 or parts[0] != b"PROXY" or parts[1] not in (b"TCP4", b"TCP6"):
        raise malformed("a v1 header is PROXY TCP4|TCP6 <source> <destination> <ports>, "
                        "single spaces, or PROXY UNKNOWN")
    version = 4 if parts[1] == b"TCP4" else 6
    try:
        source, destination = (ipaddress.ip_address(p.decode("ascii")) for p in parts[2:4])
    except (ValueError, UnicodeDecodeError):
        raise malformed("its addresses are not IP addresses") from None
    if source.version != version or destination.version != version:
        raise malformed(f"its addresses are not IPv{version} addresses")
    for port in parts[4:]:
        if not (port.isdigit() and len(port) <= 5 and int(port) < 65536
                and (port == b"0" or not port.startswith(b"0"))):
            raise malformed("its ports are not numbers from 0 to 65535")
    return str(source)


def parse_v2(fixed: bytes, rest: bytes) -> str | None:
    """The 16 bytes of a v2 header (signature, version and command, family, length) and what
    its length covers: the source address of a PROXY command over TCP/IPv4 or IPv6; None for a
    LOCAL command (the proxy's own connection, such as a health check) or another family."""
    if not fixed.startswith(V2) or len(fixed) != 16:
        raise malformed("a v2 header starts with its 12-byte signature")
    version, command = fixed[12] >> 4, fixed[12] & 0x0F
    if version != 2 or command not in (0, 1):
        raise malformed("a v2 header's version is 2 and its command LOCAL or PROXY")
    if command == 0:
        return None
    family = fixed[13]
    sizes = {0x11: 4, 0x21: 16}  # TCP over IPv4, over IPv6: the addresses' size
    if family not in sizes:
        return None  # UNSPEC, UDP or a UNIX socket: no client address to key on
    size = sizes[family]
    if len(rest) < 2 * size + 4:
        raise malformed(f"a v2 header of family {family:#04x} needs {2 * size + 4} bytes of "
                        "addresses")
    return str(ipaddress.ip_address(rest[:size]))


def _exactly(rfile, n: int) -> bytes:
    data = rfile.read(n) if n else b""
    if len(data) < n:
        raise ClientGone("the client closed the connection inside its PROXY header")
    return data


def malformed(why: str) -> MalformedHttp:
    return MalformedHttp(f"malformed PROXY protocol header: {why}")
