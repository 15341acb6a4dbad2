"""In-flight slots: how many decisions are answered at once, each source address's share of
them, and closing that door on SIGTERM.

Owns: the count of requests in flight, by source; whether one more may start (the server's
cap, then its source's share); the drain's wait for the busy ones. A slot is taken once a
request's body has been read, so a client trickling bodies holds connections and body budget
(each with its own per-source cap), never the slots every other client needs.
Never: reads requests, routes or answers them (server.py turns a refusal into a 529).
"""
from __future__ import annotations

import collections
import threading

SHARE = 4  # one source's default share: a quarter of the server's


def share(limit: int, asked: int, floor: int = 1) -> int:
    """What one source may hold of `limit`: `asked`, or 0 for a quarter of it (at least
    `floor`), never more than `limit`."""
    return min(limit, asked or max(floor, limit // SHARE))


CLOSED, FULL, SOURCE = "closed", "full", "source"  # why a slot was not taken


class Slots:
    """At most `limit` requests in flight, at most `per_source` (0: a quarter) from one source
    address; closed on SIGTERM, after which none is taken and the drain waits for the busy."""

    def __init__(self, limit: int, per_source: int = 0):
        self.limit, self.per_source = limit, share(limit, per_source)
        self.busy, self.held = 0, collections.Counter()
        self.closed = False
        self.changed = threading.Condition()

    def refusal(self, source: str = "") -> str | None:
        """Why a slot would not be taken now (CLOSED, FULL, SOURCE), or None: judged from a
        request's head, so a request that cannot start is refused before its body is read."""
        if self.closed:
            return CLOSED
        if self.busy >= self.limit:
            return FULL
        return SOURCE if self.held[source] >= self.per_source else None

    def take(self, source: str = "") -> str | None:
        """A slot for `source`: None when taken, else why not."""
        with self.changed:
            why = self.refusal(source)
            if why is None:
                self.busy += 1
                self.held[source] += 1
            return why

    def give(self, source: str = "") -> None:
        with self.changed:
            self.busy -= 1
            self.held[source] -= 1
            if not self.held[source]:
                del self.held[source]
            self.changed.notify_all()

    def close_and_wait(self, timeout_s: float) -> int:
        """Take nothing new; wait until no request is in flight, at most timeout_s. Returns how
        many are still in flight."""
        with self.changed:
            self.closed = True
            self.changed.wait_for(lambda: self.busy == 0, timeout_s)
            return self.busy
