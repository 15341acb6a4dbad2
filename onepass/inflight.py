"""The request being answered, as the engine sees it: its id, sent to vLLM with each call, and
whether its client is still there; when it has gone, no new call starts and the calls in
flight are cut (their connections shut, so vLLM aborts them and frees their KV and slots).

Owns: the per-request Call (a context variable the engine's threads inherit, as wire.REQUEST),
its id (the client's X-Request-Id when safe) and traceparent, its deadline, its vLLM request
ids (`<request id>-<n>`), its running total of body bytes sent (the priority its generation
calls carry: each its own bytes included), the sockets of its calls in flight, the tokens vLLM computed for it,
and stopping it (its client left: ClientClosed; its deadline passed: DeadlineExceeded).
Never: watches the client's socket (edge/watch.py does) or decides the response (the edge
logs ClientClosed as 499 and sends nothing). Below every stage: the edge, the pipeline and the
engine share it.
"""
from __future__ import annotations

import contextlib
import contextvars
import itertools
import re
import socket
import threading
import time

from .errors import ClientClosed, DeadlineExceeded

# An id a client may give (X-Request-Id): short, and characters that no log or header can
# misread; anything else is replaced by the shim's own.
SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")
STOPPED = (ClientClosed, DeadlineExceeded)  # what a stopped Call's work raises
CURRENT: contextvars.ContextVar[Call | None] = contextvars.ContextVar("onepass_call",
                                                                      default=None)


class Call:
    def __init__(self, request_id: str, deadline: float | None = None):
        self.request_id = request_id
        self.deadline = deadline  # time.monotonic() by which it must finish (None: no limit)
        self.why = ClientClosed  # what stopped it, once `gone` is set
        self.gone = threading.Event()
        self.tokens = 0  # tokens vLLM computed for it (prompt less prefix-cache hits, generated)
        self.sent = 0  # bytes of the bodies it sent to vLLM: its generations' priority
        self._socks: set = set()
        self._lock = threading.Lock()
        self._n = itertools.count(1)
        self.traceparent = None
        self.source = ""  # the client's address: the door keeps addresses apart

    def adopt(self, request_id: str | None, traceparent: str | None) -> str:
        """The client's X-Request-Id, when it is a safe one (else the id this Call was given),
        and its W3C traceparent, passed to vLLM as it came; returns the id."""
        if isinstance(request_id, str) and SAFE_ID.fullmatch(request_id):
            self.request_id = request_id
        if isinstance(traceparent, str) and TRACEPARENT.fullmatch(traceparent):
            self.traceparent = traceparent
        return self.request_id

    def next_id(self) -> str:
        return f"{self.request_id}-{next(self._n)}"

    def turn(self, size: int) -> int:
        """The priority of its next generation call of `size` bytes: the bytes it will have
        sent with it (vLLM serves the lowest first: fair queuing's finish tag). A request of
        800 reads queues each read behind every other request's calls of a smaller total, and
        a one-read request goes before another request's first read if that one is larger."""
        with self._lock:
            self.sent += size
            return self.sent

    def limit(self, seconds: float | None) -> None:
        """A deadline `seconds` from now, when sooner than the one it has."""
        if seconds is not None and seconds > 0:
            at = time.monotonic() + seconds
            self.deadline = at if self.deadline is None else min(self.deadline, at)

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def ensure_live(self) -> None:
        """Raise what stopped it, if anything has (a deadline just passed stops it here)."""
        if self.expired():
            self.abandon(DeadlineExceeded)
        if self.gone.is_set():
            raise self.why()

    def abandon(self, why=ClientClosed) -> None:
        """Stop it (the client left, or its deadline passed): shut every call in flight (its
        blocked read returns at once); `why` is the error the stopped work raises."""
        with self._lock:
            if not self.gone.is_set():
                self.why = why
            self.gone.set()
            socks = list(self._socks)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def count(self, computed: int) -> None:
        with self._lock:
            self.tokens += max(computed, 0)

    @contextlib.contextmanager
    def flying(self, conn):
        """A vLLM call on `conn` (an http.client connection) in flight: cut on abandon."""
        self.ensure_live()
        if conn.sock is None:
            conn.connect()
        with self._lock:
            if self.gone.is_set():  # stopped while connecting
                raise self.why()
            self._socks.add(conn.sock)
        try:
            yield
        finally:
            with self._lock:
                self._socks.discard(conn.sock)


def check() -> Call | None:
    """The current request's Call; ClientClosed when its client has gone, DeadlineExceeded
    past its deadline (no new work)."""
    call = CURRENT.get()
    if call is not None:
        call.ensure_live()
    return call


def spent(doc) -> None:
    """vLLM's usage of one answered call, counted to the current request: the prompt tokens it
    computed (less its prefix-cache hits) and the tokens it generated."""
    call, usage = CURRENT.get(), doc.get("usage") if isinstance(doc, dict) else None
    if call is None or not isinstance(usage, dict):
        return
    try:
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        call.count(int(usage.get("prompt_tokens") or 0) - int(cached)
                   + int(usage.get("completion_tokens") or 0))
    except (TypeError, ValueError, AttributeError):
        pass  # a usage we cannot read counts nothing; the answer is checked elsewhere


def headers(call: Call | None) -> dict:
    """The headers a vLLM call carries for its request: an id of its own, `<request id>-<n>`
    (vLLM takes it as its request's id, so its log lines name the client's request), and the
    client's traceparent, unchanged."""
    if call is None:
        return {}
    out = {"X-Request-Id": call.next_id()}
    if call.traceparent:
        out["traceparent"] = call.traceparent
    return out


def flying(call: Call | None, conn):
    return call.flying(conn) if call is not None else contextlib.nullcontext()


@contextlib.contextmanager
def request(request_id: str, deadline: float | None = None):
    """The block answers one request: the engine's calls within it belong to a new Call."""
    call = Call(request_id, deadline)
    token = CURRENT.set(call)
    try:
        yield call
    finally:
        CURRENT.reset(token)
