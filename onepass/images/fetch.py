"""Image links: fetch an image a client names by URL without letting the link reach anything
private.

Owns: the URL rules (https only unless http is switched on, a host, no credentials, an allowed
port: 80 and 443 by default), resolving the host and refusing it unless every address is allowed
(public by default: addresses.py), connecting to the address that was checked (pinned: no
second lookup), at most MAX_REDIRECTS redirects each checked the same way, timeouts (each step,
and a whole-fetch deadline of TOTAL_STEPS steps so a trickling server cannot hold a request), a
byte cap while reading, an image/* content type; counting each fetch by outcome (telemetry: ok,
refused, failed). A client is told which rule its own link breaks; past that, whatever stopped
the fetch (an address, a redirect, the network, the far server) it reads NOT_FETCHED, so a link
cannot map hosts and ports from the server's place, and the cause goes to the log with the
link's origin only.
Never: logs or echoes a URL's path, query or credentials; follows a redirect to another scheme
than allowed; retries.
"""
from __future__ import annotations

import http.client
import io
import logging
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass

from .. import telemetry
from .addresses import is_public, is_unicast  # noqa: F401 (server.py picks one per setting)

MAX_REDIRECTS = 3
TOTAL_STEPS = 4  # a whole fetch, redirects included, gets this many times the step timeout
CHUNK = 64 * 1024
REDIRECTS = {301, 302, 303, 307, 308}
NOT_FETCHED = "the image link could not be fetched"
log = logging.getLogger("onepass")


class FetchRefused(Exception):
    """What the client is told: the rule its link breaks, or NOT_FETCHED; never the URL."""


class _NotFetched(Exception):
    """Why a link gave no image, past its own rules: for the log only."""
    outcome = "refused"  # a rule: an address, a redirect's target, the type, the size


class _Failed(_NotFetched):
    outcome = "failed"  # the network or the far server


@dataclass(frozen=True)
class Rules:
    allow_http: bool = False
    timeout_s: float = 10.0
    max_bytes: int = 20 * 1024 * 1024
    ports: tuple = (80, 443)  # a link's and every redirect's port, judged before any lookup
    is_allowed: object = is_public  # address -> bool; tests swap it to reach a local server
    resolve: object = socket.getaddrinfo  # host, port -> addrinfo list; tests swap it too


def fetch(url: str, rules: Rules = Rules(), claim=None) -> tuple[bytes, str]:
    """(body, content type) of an image link; FetchRefused naming the rule the link itself
    breaks, or NOT_FETCHED for anything after (the cause logged with the link's origin).
    `claim(n)` is called before each read of up to n bytes of the image (its refusal, a 529,
    ends the fetch), so what a fetch holds grows with what arrives."""
    try:
        parts = _parts(url, rules)
    except FetchRefused:
        telemetry.image_fetch("refused")
        raise
    try:
        found = _fetch(url, parts, rules, claim)
    except _NotFetched as e:
        telemetry.image_fetch(e.outcome)
        scheme, host, port, _ = parts
        log.info("an image link to %r was not fetched: %s",
                 f"{scheme}://{_host_header(host, port, scheme)}", e)
        raise FetchRefused(NOT_FETCHED) from None
    telemetry.image_fetch("ok")
    return found


def _fetch(url: str, parts: tuple, rules: Rules, claim) -> tuple[bytes, str]:
    deadline = time.monotonic() + TOTAL_STEPS * rules.timeout_s
    for _ in range(MAX_REDIRECTS + 1):
        scheme, host, port, target = parts
        address = _checked_address(host, port, rules)
        conn = _connection(scheme, host, port, address, rules.timeout_s, deadline)
        response = None
        try:
            conn.request("GET", target, headers={"Host": _host_header(host, port, scheme),
                                                 "Accept": "image/*", "User-Agent": "onepass"})
            response = conn.getresponse()
            if response.status in REDIRECTS:
                location = response.getheader("Location")
                if not location:
                    raise _NotFetched("a redirect without a Location")
                url = urllib.parse.urljoin(url, location)
                parts = _redirect_parts(url, rules)
                continue
            if response.status != 200:
                raise _Failed(f"the far server answered HTTP {response.status}")
            kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if not kind.startswith("image/"):
                raise _NotFetched(f"the content type is {kind[:64]!r}, not image/*")
            if _declared_over(response.getheader("Content-Length") or "", rules.max_bytes):
                raise _NotFetched(f"the image is larger than {rules.max_bytes} bytes")
            return _read_capped(response, rules.max_bytes, deadline, claim), kind
        except _Late:
            raise _Failed(f"the fetch took too long (over {TOTAL_STEPS} x {rules.timeout_s} s)"
                          ) from None
        except (OSError, http.client.HTTPException) as e:
            raise _Failed(f"the connection failed ({_cause(e)})") from None
        finally:
            if response is not None:  # it holds the socket when the server said close
                response.close()
            conn.close()
    raise _NotFetched(f"more than {MAX_REDIRECTS} redirects")


def _cause(error: Exception) -> str:
    """The error's type and its reason (an errno's words, a TLS reason), for the log."""
    reason = getattr(error, "reason", None) or getattr(error, "strerror", None)
    return f"{type(error).__name__}: {reason}" if isinstance(reason, str) else type(error).__name__


def _redirect_parts(url: str, rules: Rules) -> tuple:
    try:
        return _parts(url, rules)
    except FetchRefused as e:
        raise _NotFetched(f"a redirect's target breaks a rule: {e}") from None


def _declared_over(declared: str, max_bytes: int) -> bool:
    """A Content-Length over the cap; only ASCII digits are read (str.isdigit takes "²", which
    int() refuses), and never more than 18 of them (int() refuses 4,301)."""
    digits = declared.strip().lstrip("0")
    return (declared.strip().isascii() and declared.strip().isdigit()
            and (len(digits) > 18 or int(digits or "0") > max_bytes))


def base64_size(n: int) -> int:
    """Bytes of n bytes as a data URL (its base64 and a prefix)."""
    return 4 * -(-n // 3) + 64


def _read_capped(response, max_bytes: int, deadline: float, claim=None) -> bytes:
    """The body in chunks, each claimed (with its buffer's slack) before it is read, refused
    once it passes max_bytes or the deadline; gathered in one growing buffer whose bytes are
    handed on without a copy (not a list of chunks, joined)."""
    body = io.BytesIO()
    while True:
        if claim is not None:
            claim(CHUNK + CHUNK // 8)
        chunk = response.read1(CHUNK)  # each read ends by the deadline (_Deadline)
        if not chunk:
            return body.getvalue()
        if body.tell() + len(chunk) > max_bytes:
            raise FetchRefused(f"the image is larger than {max_bytes} bytes")
        body.write(chunk)


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
    port = port or (443 if parts.scheme == "https" else 80)
    if port not in rules.ports:
        raise FetchRefused(f"image links may use only ports {', '.join(map(str, rules.ports))}")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port, target


def _checked_address(host: str, port: int, rules: Rules) -> str:
    """Every address the name resolves to must be allowed; the first one is used (pinned)."""
    try:
        infos = rules.resolve(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise _Failed("the host does not resolve") from None
    addresses = [info[4][0] for info in infos]
    if not addresses:
        raise _NotFetched("the host does not resolve")
    for address in addresses:
        try:
            allowed = rules.is_allowed(address)
        except ValueError:
            allowed = False
        if not allowed:
            raise _NotFetched(f"the host resolves to {address}, an address that is not public")
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
