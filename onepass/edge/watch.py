"""Clients whose decisions are running, watched for leaving: one thread polls their sockets, and
a socket that reads end-of-file or an error (the client closed or reset its connection)
abandons its request's Call (onepass/inflight.py), which stops its engine work; a Call past its
deadline is stopped the same way (DeadlineExceeded, a 504).

Owns: the watched sockets and the poll loop (every POLL_S at the most, so a client that leaves
is noticed within that).
Never: reads a byte the handler would read (it only peeks), or answers anything.
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
EVENTS = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP


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
        self._watched: dict[int, tuple] = {}  # fd -> (socket, Call)
        self._cond = threading.Condition()
        self._thread = None

    @contextlib.contextmanager
    def watching(self, sock, call):
        """While the block runs, `call` is abandoned if the client behind `sock` leaves."""
        fd = sock.fileno()
        with self._cond:
            self._watched[fd] = (sock, call)
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

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._watched:
                    self._cond.wait()
                watched = dict(self._watched)
            poller = select.poll()
            for fd in watched:
                poller.register(fd, EVENTS)
            for fd, _ in poller.poll(self.poll_s * 1000):
                sock, call = watched[fd]
                with self._cond:
                    if self._watched.get(fd, (None,))[0] is not sock:
                        continue  # its request ended meanwhile
                    # Stop watching either way: a socket with bytes waiting (the client's next
                    # request, pipelined) stays readable, and the handler reads them later.
                    self._watched.pop(fd)
                if left(sock):
                    call.abandon()
            for sock, call in watched.values():  # the deadline cuts calls in flight too
                if call.expired():
                    call.abandon(DeadlineExceeded)
