"""Image links: fetch an image a client names by URL without letting the link reach anything
private.

Owns: the URL rules (https only unless http is switched on, a host, no credentials), resolving
the host and refusing it unless every address is public (no loopback, private, link-local,
multicast, reserved, unspecified or shared ranges, IPv4 or IPv6, IPv4-mapped and other embedded
IPv4 forms unwrapped), connecting to the address that was checked (pinned: no second lookup),
at most MAX_REDIRECTS redirects each checked the same way, timeouts (each step, and a whole-fetch
deadline of TOTAL_STEPS steps so a trickling server cannot hold a request), a byte cap while reading,
an image/* content type; counting each fetch by outcome (telemetry: ok, refused, failed).
Never: logs or echoes a URL (error messages name the image and the rule, not the link); follows
a redirect to another scheme than allowed; retries.
"""
from __future__ import annotations

import http.client
import io
import ipaddress
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass

from .. import telemetry

MAX_REDIRECTS = 3
TOTAL_STEPS = 4  # a whole fetch, redirects included, gets this many times the step timeout
CHUNK = 64 * 1024
REDIRECTS = {301, 302, 303, 307, 308}


class FetchRefused(Exception):
    """The link breaks a rule or the fetch failed; the message never contains the URL."""


class FetchFailed(FetchRefused):
    """The network or the far server failed the fetch (no rule was broken)."""


def is_public(address: str) -> bool:
    """True only for a globally routable unicast address (IPv4-in-IPv6 forms judged as IPv4)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        return is_public(str(ip.ipv4_mapped))  # ::ffff:a.b.c.d is a.b.c.d on the wire
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in ipaddress.IPv6Network("64:ff9b::/96"):  # NAT64
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None and not is_public(str(embedded)):
            return False
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_loopback
                                 or ip.is_link_local or ip.is_private or ip.is_unspecified)


def is_unicast(address: str) -> bool:
    """The `all` setting: any unicast address, private and loopback included (trusted networks
    and tests only)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return not (ip.is_multicast or ip.is_unspecified)


@dataclass(frozen=True)
class Rules:
    allow_http: bool = False
    timeout_s: float = 10.0
    max_bytes: int = 20 * 1024 * 1024
    is_allowed: object = is_public  # address -> bool; tests swap it to reach a local server
    resolve: object = socket.getaddrinfo  # host, port -> addrinfo list; tests swap it too


def fetch(url: str, rules: Rules = Rules()) -> tuple[bytes, str]:
    """(body, content type) of an image link, or FetchRefused saying which rule stopped it."""
    try:
        found = _fetch(url, rules)
    except FetchRefused as e:
        telemetry.image_fetch("failed" if isinstance(e, FetchFailed) else "refused")
        raise
    telemetry.image_fetch("ok")
    return found


def _fetch(url: str, rules: Rules) -> tuple[bytes, str]:
    deadline = time.monotonic() + TOTAL_STEPS * rules.timeout_s
    for _ in range(MAX_REDIRECTS + 1):
        scheme, host, port, target = _parts(url, rules)
        address = _checked_address(host, port, rules)
        conn = _connection(scheme, host, port, address, rules.timeout_s, deadline)
        try:
            conn.request("GET", target, headers={"Host": _host_header(host, port, scheme),
                                                 "Accept": "image/*", "User-Agent": "onepass"})
            response = conn.getresponse()
            if response.status in REDIRECTS:
                location = response.getheader("Location")
                if not location:
                    raise FetchRefused("a redirect without a Location")
                url = urllib.parse.urljoin(url, location)
                continue
            if response.status != 200:
                raise FetchFailed(f"the image link answered HTTP {response.status}")
            kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if not kind.startswith("image/"):
                raise FetchRefused(f"the link's content type is {kind or 'missing'}, not image/*")
            if _declared_over(response.getheader("Content-Length") or "", rules.max_bytes):
                raise FetchRefused(f"the image is larger than {rules.max_bytes} bytes")
            return _read(response, rules.max_bytes, deadline), kind
        except _Late:
            raise FetchFailed(f"fetching the image took too long (over {TOTAL_STEPS} x "
                              f"{rules.timeout_s} s)") from None
        except (OSError, http.client.HTTPException) as e:
            raise FetchFailed(f"fetching the image failed ({type(e).__name__})") from None
        finally:
            conn.close()
    raise FetchRefused(f"more than {MAX_REDIRECTS} redirects")


def _declared_over(declared: str, max_bytes: int) -> bool:
    """A Content-Length over the cap; only ASCII digits are read (str.isdigit takes "²", which
    int() refuses), and never more than 18 of them (int() refuses 4,301)."""
    digits = declared.strip().lstrip("0")
    return (declared.strip().isascii() and declared.strip().isdigit()
            and (len(digits) > 18 or int(digits or "0") > max_bytes))


def _read(response, max_bytes: int, deadline: float) -> bytes:
    """The body in chunks, refused once it passes max_bytes or the deadline."""
    chunks, size = [], 0
    while True:
        chunk = response.read1(CHUNK)  # each read ends by the deadline (_Deadline)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise FetchRefused(f"the image is larger than {max_bytes} bytes")
        chunks.append(chunk)


def _parts(url: str, rules: Rules) -> tuple[str, str, int, str]:
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        raise FetchRefused("the image link is not a valid URL") from None
    allowed = ("https", "http") if rules.allow_http else ("https",)
    if parts.scheme not in allowed:
        raise FetchRefused(f"image links must use {' or '.join(allowed)}")
    if parts.username is not None or parts.password is not None:
        raise FetchRefused("image links must not carry credentials")
    if not parts.hostname:
        raise FetchRefused("the image link has no host")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), target


def _checked_address(host: str, port: int, rules: Rules) -> str:
    """Every address the name resolves to must be allowed; the first one is used (pinned)."""
    try:
        infos = rules.resolve(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise FetchFailed("the image link's host does not resolve") from None
    addresses = [info[4][0] for info in infos]
    if not addresses:
        raise FetchRefused("the image link's host does not resolve")
    for address in addresses:
        try:
            allowed = rules.is_allowed(address)
        except ValueError:
            allowed = False
        if not allowed:
            raise FetchRefused("the image link resolves to an address that is not public")
    return addresses[0]


def _host_header(host: str, port: int, scheme: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    default = 443 if scheme == "https" else 80
    return shown if port == default else f"{shown}:{port}"


def _connection(scheme: str, host: str, port: int, address: str, timeout: float,
                deadline: float):
    """A connection to the checked address; TLS still verifies the certificate for the host."""
    if scheme == "https":
        return _PinnedHTTPS(host, port, address, timeout, deadline)
    return _PinnedHTTP(host, port, address, timeout, deadline)


class _Late(TimeoutError):
    """The whole-fetch deadline passed."""


class _Deadline:
    """A connected socket whose every wait ends by the step timeout and the whole-fetch
    deadline: a server trickling its status line or headers a byte at a time (each in time
    for the step timeout) is cut at the deadline, not when it stops."""

    def __init__(self, sock, step_s: float, deadline: float):
        self._sock, self._step_s, self._deadline = sock, step_s, deadline

    def _wait(self) -> None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise _Late("the whole-fetch deadline passed")
        self._sock.settimeout(min(self._step_s, left))

    def sendall(self, data, flags=0):
        self._wait()
        return self._sock.sendall(data, flags)

    def makefile(self, mode="rb", buffering=-1, **_):
        """What http.client reads the response through: the socket's own raw file (which
        keeps the socket open until it is closed), each read first bounded by _wait."""
        return io.BufferedReader(_Reads(self._sock.makefile("rb", buffering=0), self._wait))

    def __getattr__(self, name):  # close, settimeout, fileno, ...: the socket's own
        return getattr(self._sock, name)


class _Reads(io.RawIOBase):
    def __init__(self, raw, wait):
        self._raw, self._wait_first = raw, wait

    def readable(self) -> bool:
        return True

    def readinto(self, buffer):
        self._wait_first()
        try:
            return self._raw.readinto(buffer)
        except TimeoutError:
            self._wait_first()  # _Late when the deadline, not the step, ran out
            raise

    def close(self):
        self._raw.close()
        super().close()


def _connect(address: str, port: int, step_s: float, deadline: float):
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Late("the whole-fetch deadline passed")
    return socket.create_connection((address, port), min(step_s, left))


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, host, port, address, timeout, deadline):
        super().__init__(host, port, timeout=timeout)
        self.address, self.deadline = address, deadline

    def connect(self):
        self.sock = _Deadline(_connect(self.address, self.port, self.timeout, self.deadline),
                              self.timeout, self.deadline)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, host, port, address, timeout, deadline):
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self.address, self.deadline = address, deadline

    def connect(self):
        sock = _connect(self.address, self.port, self.timeout, self.deadline)
        sock.settimeout(min(self.timeout, max(0.001, self.deadline - time.monotonic())))
        self.sock = _Deadline(self._context.wrap_socket(sock, server_hostname=self.host),
                              self.timeout, self.deadline)
