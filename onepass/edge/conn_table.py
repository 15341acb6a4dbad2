"""The open-connection table: at most max_connections client connections, at most a cap of
them from one source address, and who makes room.

Owns: each connection's state (idle between requests, reading one, being answered) and source,
refusing a source past its cap (and answering a refused newcomer), moving a connection to the
client a trusted proxy names (client_key.py; the proxy's own key has no cap, the client's has),
closing one connection when a newcomer arrives past the table's cap (the longest idle, else the
one sending its request the longest, only ever of the newcomer's own source or of a source
holding more), and fitting the cap under the process's file-descriptor limit.
Never: reads or writes requests (connections.py does); a connection being answered is never
closed from here.
"""
from __future__ import annotations

import collections
import logging
import socket
import threading
import time

from .. import telemetry
from ..errors import OnepassError, Overloaded, SourceOverCap
from .slots import share

log = logging.getLogger("onepass")
IDLE, READING, WORKING = "idle", "reading", "working"
FD_RESERVE = 64  # descriptors beside client connections: listening socket, logs, image fetches
# one source's default share: a quarter of the table (slots.share), but never below what one
# client's pool of keep-alive connections takes (a browser's 6, an HTTP library's 10 to 20)
SOURCE_FLOOR = 16
WARN_EVERY_S = 10.0  # a refusal past a source's cap is logged at most this often


def source_cap(limit: int, asked: int) -> int:
    """Connections one source may hold: `asked`, or 0 for a quarter of the table (at least
    SOURCE_FLOOR), never more than the table."""
    return share(limit, asked, SOURCE_FLOOR)


class Conn:
    def __init__(self, sock, source: str = ""):
        self.sock, self.state, self.since, self.evicted = sock, IDLE, time.monotonic(), False
        self.source = source

    def set(self, state: str) -> None:
        self.state, self.since = state, time.monotonic()


class Table:
    """The open client connections, at most `limit`, and at most `per_source` from one source
    (0: source_cap's default); a source at a cap smaller than the table is refused. A newcomer
    past the limit closes the connection idle the longest, else the one that has been sending
    its request the longest (a trickle), taken from its own source or from one holding more
    connections than its own, the one holding the most first: a flood from one address churns
    its own connections, never a smaller client's keep-alive. Connections being answered are
    never closed; when none may be, the newcomer is refused. Closing is shutdown(SHUT_RD): the
    connection's own thread wakes up, answers 529 if a request was under way, and leaves."""

    def __init__(self, limit: int, per_source: int = 0):
        self.limit, self.lock, self.open = limit, threading.Lock(), {}
        self.per_source = source_cap(limit, per_source)
        self.held = collections.Counter()  # open connections per source
        self.warned = -WARN_EVERY_S  # when a refusal past a source's cap was last logged

    def add(self, sock, source: str = "", capped: bool = True) -> Conn | None:
        """The newcomer's record, or None: its source is at its cap (at_cap says so), or no
        connection it may close is waiting. Not `capped`: a trusted proxy, whose connections
        carry many clients (each counted as its own once named: move)."""
        with self.lock:
            mine = self.held[source]
            if capped and self._capped(mine):
                return None
            if len(self.open) >= self.limit and not self._evict(source, mine):
                return None
            conn = self.open[sock] = Conn(sock, source)
            self.held[source] += 1
            return conn

    def move(self, sock, source: str, capped: bool = True) -> bool:
        """The connection counts as `source`'s from now on (a trusted proxy named its client, or
        its request ended); False, and it stays where it was, when `capped` and `source` is at
        its cap."""
        with self.lock:
            conn = self.open.get(sock)
            if conn is None or conn.source == source:
                return True  # already its, or closed for a newcomer: nothing to count
            if capped and self._capped(self.held[source]):
                return False
            self._drop(sock)
            self.open[sock], conn.source = conn, source
            self.held[source] += 1
            return True

    def at_cap(self, source: str) -> bool:
        with self.lock:
            return self._capped(self.held[source])

    def refusal(self, source: str, capped: bool = True) -> OnepassError:
        """What a newcomer add() refused is answered: 503 past its source's cap (no one else's
        connection was closed for it), else 529 (every connection it may close is busy)."""
        if capped and self.at_cap(source):
            return self.over_cap(source)
        telemetry.OVERLOADED.inc("connections")
        return Overloaded(f"this server has its {self.limit} connections open, all being "
                          "answered; retry shortly", retry_after_ms=1000)

    def over_cap(self, source: str) -> SourceOverCap:
        """The refusal of a connection past its source's cap (counted, and logged now and then)."""
        telemetry.SOURCE_CAPPED.inc()
        now = time.monotonic()
        if now - self.warned >= WARN_EVERY_S:  # a flood logs a line, not a line a refusal
            self.warned = now
            log.warning("refused a connection from %s: %d connections open from it, its "
                        "cap (--max-connections-per-source)", source, self.per_source)
        return SourceOverCap(f"{self.per_source} connections are open from your address, "
                             "its most; close idle ones or retry shortly", retry_after_ms=1000)

    def _capped(self, held: int) -> bool:
        # a cap as large as the table is none: the source's own connections make room
        return self.per_source < self.limit and held >= self.per_source

    def _evict(self, source: str, mine: int) -> bool:
        for state in (IDLE, READING):
            waiting = [c for c in self.open.values() if c.state == state and (
                c.source == source or self.held[c.source] > mine)]
            if waiting:
                victim = min(waiting, key=lambda c: (-self.held[c.source], c.since))
                victim.evicted = True
                self._drop(victim.sock)
                try:
                    victim.sock.shutdown(socket.SHUT_RD)
                except OSError:
                    pass  # already gone
                return True
        return False

    def _drop(self, sock) -> None:
        conn = self.open.pop(sock, None)
        if conn is not None:
            self.held[conn.source] -= 1
            if not self.held[conn.source]:
                del self.held[conn.source]

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
            self._drop(sock)


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
