"""The open-connection table: at most max_connections client connections, and who makes room.

Owns: each connection's state (idle between requests, reading one, being answered), closing one
when a newcomer arrives past the cap (the longest idle, else the one sending its request the
longest), and fitting the cap under the process's file-descriptor limit.
Never: reads or writes requests (connections.py does); a connection being answered is never
closed from here.
"""
from __future__ import annotations

import logging
import socket
import threading
import time

log = logging.getLogger("onepass")
IDLE, READING, WORKING = "idle", "reading", "working"
FD_RESERVE = 64  # descriptors beside client connections: listening socket, logs, image fetches


class Conn:
    def __init__(self, sock):
        self.sock, self.state, self.since, self.evicted = sock, IDLE, time.monotonic(), False

    def set(self, state: str) -> None:
        self.state, self.since = state, time.monotonic()


class Table:
    """The open client connections, at most `limit`. A newcomer past the limit closes the
    connection idle the longest, else the one that has been sending its request the longest
    (a trickle); connections being answered are never closed, and when all are, the newcomer
    is refused (529). Closing is shutdown(SHUT_RD): the connection's own thread wakes up,
    answers 529 if a request was under way, and leaves."""

    def __init__(self, limit: int):
        self.limit, self.lock, self.open = limit, threading.Lock(), {}

    def add(self, sock) -> Conn | None:
        with self.lock:
            if len(self.open) >= self.limit and not self._evict():
                return None
            conn = self.open[sock] = Conn(sock)
            return conn

    def _evict(self) -> bool:
        for state in (IDLE, READING):
            waiting = [c for c in self.open.values() if c.state == state]
            if waiting:
                victim = min(waiting, key=lambda c: c.since)
                victim.evicted = True
                del self.open[victim.sock]
                try:
                    victim.sock.shutdown(socket.SHUT_RD)
                except OSError:
                    pass  # already gone
                return True
        return False

    def wait_quiet(self, quiet_s: float, timeout_s: float) -> None:
        """Until no connection is reading or answering a request, nor opened or answered less
        than quiet_s ago (its request may be on the way), at most timeout_s."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                now = time.monotonic()
                if all(c.state == IDLE and now - c.since >= quiet_s
                       for c in self.open.values()):
                    return
            time.sleep(0.02)

    def remove(self, sock) -> None:
        with self.lock:
            self.open.pop(sock, None)


def fit_descriptors(limit: int, engine_connections: int) -> int:
    """Raise the soft descriptor limit to what `limit` connections need (up to the hard
    limit); if it cannot go that high, serve fewer connections than asked and say so."""
    import resource
    need = limit + engine_connections + FD_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        soft = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    fits = limit if soft == resource.RLIM_INFINITY else max(1, soft - engine_connections
                                                            - FD_RESERVE)
    if fits < limit:
        log.warning("max_connections lowered from %d to %d: the descriptor limit is %d", limit,
                    fits, soft)
    return min(limit, fits)
