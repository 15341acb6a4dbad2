"""Clients whose decisions are running, watched for leaving: one thread polls their sockets, and
a socket whose peer has closed, half-closed or reset its connection abandons its request's Call
(onepass/inflight.py), which stops its engine work; a Call past its deadline is stopped the
same way (DeadlineExceeded, a 504), whether or not its socket is still polled.

Owns: the watched sockets and the poll loop (every POLL_S at the most, so a client that leaves
or a deadline that passes is noticed within that).
Never: reads a byte the handler would read, or answers anything.
Where the platform has POLLRDHUP (Linux), the poll asks for the peer's end of input itself, so
bytes the client sent after its request (a pipelined request, or one stray byte) neither hide
its leaving nor are read here. Elsewhere a readable socket is peeked once: end of input or an
error is leaving, data stops the poll of that socket (the deadline still cuts its Call).
A client that half-closes its side after sending its request (shutdown of its writes) reads as
gone, as it does to nginx; HTTP clients and balancers keep their side open while they wait.
"""
from __future__ import annotations

import contextlib
import select
import socket
import threading

from ..errors import DeadlineExceeded

POLL_S = 0.25
RDHUP = getattr(select, "POLLRDHUP", 0)  # the peer shut its sending side (Linux)
GONE = RDHUP | select.POLLERR | select.POLLHUP  # reported whatever is left unread
EVENTS = GONE | (0 if RDHUP else select.POLLIN | select.POLLPRI)


def left(sock) -> bool:
    """Whether the peer has closed or reset: a peek that reads nothing, or fails."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True


class Watcher:
    def __init__(self, poll_s: float = POLL_S):
        self.poll_s = poll_s
        self._watched: dict[int, tuple] = {}  # fd -> (socket, Call): deadlines, every one
        self._polled: set[int] = set()  # those whose socket is polled too
        self._cond = threading.Condition()
        self._thread = None

    @contextlib.contextmanager
    def watching(self, sock, call):
        """While the block runs, `call` is abandoned if the client behind `sock` leaves or its
        deadline passes."""
        fd = sock.fileno()
        with self._cond:
            self._watched[fd] = (sock, call)
            self._polled.add(fd)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="client-watch",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()
        try:
            yield
        finally:
            with self._cond:
                self._watched.pop(fd, None)
                self._polled.discard(fd)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._watched:
                    self._cond.wait()
                watched, polled = dict(self._watched), set(self._polled)
            poller = select.poll()
            for fd in polled:
                poller.register(fd, EVENTS)
            for fd, events in poller.poll(self.poll_s * 1000):
                sock, call = watched[fd]
                with self._cond:
                    if self._watched.get(fd, (None,))[0] is not sock:
                        continue  # its request ended meanwhile
                    # Polled no more either way: a gone client's socket would report it on
                    # every poll, and (without POLLRDHUP) one with bytes waiting stays readable.
                    self._polled.discard(fd)
                if events & GONE or not RDHUP and left(sock):
                    call.abandon()
            for sock, call in watched.values():  # the deadline cuts calls in flight too
                if call.expired():
                    call.abandon(DeadlineExceeded)
