"""The body budget: the bytes request bodies hold while they are read, decoded and parsed, every
request together, held under one server-wide cap so that many hostile bodies at once cannot
take the process's memory (and the vLLM beside it) with them.

Owns: the bytes held and who waits for room. A request claims its body's bytes as they arrive,
a piece before each piece is read (framing.read_body), never what its head promises, waiting
while a piece does not fit (a small claim, such as a normal decision's, goes past a large one
that waits), then resizes its hold as decoding, counting and parsing need (body.read): smaller
at once, larger after a wait in which it goes before every request that holds nothing (the
room it lacks is kept from them: finishing, it frees its bytes), and when every request that
holds bytes waits so, the one waiting longest goes ahead, past the budget, alone until it is
answered (nothing else would ever give room back). Each source address has a share of the
budget (a quarter by default): a request whose first claim would take its source's requests
past it is refused at once (529), and one that needs more once it holds bytes waits for that
source's own requests to give room back (the room it waits for is not kept from other
sources). A hold past a share goes to the lane beside the budget (its bytes out of it: the
largest requests, such as a vision request's images, cannot keep the budget from normal ones):
one hold per source there, and the lane's holds together within as much as the budget again,
past which only the oldest grows (so one slow upload or image host keeps no other address's
large request out); back at a share or less a hold returns to the budget. Its waits together
last at most `wait_s`; then it is refused with a 529 and retry-after-ms (or, when the request's
own deadline comes first, a 504 at that deadline). The hold is released when the request is
answered.
Never: reads or measures a body (body.py says what it holds).
"""
from __future__ import annotations

import collections
import threading
import time
from collections import deque

from .. import inflight, telemetry
from ..errors import DeadlineExceeded, Overloaded
from .slots import share

RETRY_AFTER_MS = 1000


def late_refusal() -> DeadlineExceeded:
    return DeadlineExceeded("the request's deadline passed while its body waited for room in "
                            "the body budget; no work was started")


class Budget:
    """The server's budget: `limit` bytes, a wait of at most `wait_s` for room, at most
    `per_source` bytes (0: a quarter) held by one source's requests together."""

    def __init__(self, limit: int, wait_s: float, per_source: int = 0):
        self.limit, self.wait_s, self.per_source = limit, wait_s, share(limit, per_source)
        self.used, self.holders = 0, 0  # bytes held, and by how many holds
        self.by_source = collections.Counter()  # bytes held, by source address
        self.holders_by = collections.Counter()  # holds holding bytes, by source address
        self.newcomers = 0  # holds holding nothing, waiting
        self.growers: deque = deque()  # holds holding bytes, waiting for more, in order
        self.ahead = None  # the hold let past the budget when every holder waited
        self.lane_holds: list = []  # holds larger than a source's share, beside the budget,
        # oldest first: one per source, within lane_limit together (the oldest grows alone)
        self.lane_used, self.lane_limit, self.lane_waiting = 0, limit, 0
        self.changed = threading.Condition()

    @property
    def large(self) -> int:
        """A hold past this many bytes is in the lane."""
        return min(self.per_source, self.limit)

    @property
    def lane(self):
        """The oldest hold in the lane (None: the lane is empty)."""
        return self.lane_holds[0] if self.lane_holds else None

    @property
    def waiting(self) -> int:
        return self.newcomers + len(self.growers) + self.lane_waiting

    def hold(self, source: str = "") -> Hold:
        return Hold(self, source)


class Hold:
    """One request's bytes in the budget."""

    def __init__(self, budget: Budget, source: str = ""):
        self.budget, self.source, self.held = budget, source, 0
        self.patience = budget.wait_s  # what is left of its waits' bound
        self.wanted = 0  # what it waits for, growing
        self.in_lane = False

    def take(self, n: int) -> None:
        """n bytes more, once there is room (Overloaded past the request's wait)."""
        if n <= 0:
            return
        budget, newcomer = self.budget, self.held == 0
        with budget.changed:
            started = time.monotonic()
            until = started + self.patience
            call = inflight.CURRENT.get()
            late = call is not None and call.deadline is not None and call.deadline < until
            until = call.deadline if late else until
            try:
                if self.in_lane or self.held + n > budget.large:
                    return self._take_lane(n, until, late)
                self._take(n, newcomer, until, late)
            finally:  # only the time it waited counts against its bound
                self.patience = max(0.0, self.patience - (time.monotonic() - started))

    def _take(self, n: int, newcomer: bool, until: float, late: bool) -> None:
        budget = self.budget
        if newcomer and not self._within_share(n):  # its first bytes: refused at once
            raise self._refusal(n)
        self._waits(n, newcomer, 1)
        if not newcomer:  # every holder may now be waiting
            budget.changed.notify_all()
        try:
            room = budget.changed.wait_for(lambda: self._fits(n, newcomer),
                                           max(0.0, until - time.monotonic()))
        finally:
            self._waits(n, newcomer, -1)
            if not newcomer:  # the room kept for it is no longer kept
                budget.changed.notify_all()
        if not room and late:
            raise late_refusal()
        if not room:
            raise self._refusal(n)
        self._count(n)

    def _count(self, n: int) -> None:
        budget = self.budget
        budget.used += n
        budget.by_source[self.source] += n
        budget.holders += self.held == 0 and n > 0
        budget.holders_by[self.source] += self.held == 0 and n > 0
        self.held += n

    def _take_lane(self, n: int, until: float, late: bool) -> None:
        """n bytes more for a hold past a source's share, beside the budget (its bytes leave
        it), so the largest requests cannot keep the budget from normal ones: one such hold
        per source, within the lane's limit together (the oldest grows alone past it); else a
        wait within the same bound."""
        budget = self.budget
        budget.lane_waiting += 1
        try:
            room = budget.changed.wait_for(lambda: self._lane_fits(n),
                                           max(0.0, until - time.monotonic()))
        finally:
            budget.lane_waiting -= 1
        if not room and late:
            raise late_refusal()
        if not room:
            mine = not self.in_lane and any(h.source == self.source for h in budget.lane_holds)
            telemetry.OVERLOADED.inc("source_body_bytes" if mine else "body_bytes")
            raise Overloaded(f"request bodies larger than an address's share of the body budget "
                             f"({budget.large} bytes) are read one at a time per address, "
                             f"{budget.lane_limit} bytes together; "
                             f"{'another from your address' if mine else 'others'} held that "
                             f"room for {budget.wait_s:g} s; retry shortly",
                             retry_after_ms=RETRY_AFTER_MS)
        if not self.in_lane:  # its bytes leave the budget for the lane
            held = self.held
            self._uncount(held)
            self.held, self.in_lane = held, True
            budget.lane_holds.append(self)
            budget.lane_used += held
            budget.changed.notify_all()
        self.held += n
        budget.lane_used += n

    def _lane_fits(self, n: int) -> bool:
        budget, lane = self.budget, self.budget.lane_holds
        if self.in_lane:
            return lane[0] is self or budget.lane_used + n <= budget.lane_limit
        if any(h.source == self.source for h in lane):
            return False
        return not lane or budget.lane_used + self.held + n <= budget.lane_limit

    def _within_share(self, n: int) -> bool:
        budget, mine = self.budget, self.budget.by_source[self.source]
        # a share as large as the budget is none; a source's single request is never held back
        if budget.per_source >= budget.limit or mine == self.held or \
                mine + n <= budget.per_source:
            return True
        # every request of its source waits to grow: none would give room back, so the one
        # waiting longest goes on past the share (by at most a share: larger is the lane's)
        mine_growing = [g for g in budget.growers if g.source == self.source]
        return bool(mine_growing) and mine_growing[0] is self and \
            len(mine_growing) == budget.holders_by[self.source]

    def _refusal(self, n: int) -> Overloaded:
        budget = self.budget
        if not self._within_share(n):
            telemetry.OVERLOADED.inc("source_body_bytes")
            return Overloaded(f"request bodies from your address hold "
                              f"{budget.by_source[self.source]} bytes; this one would take them "
                              f"past the address's share of {budget.per_source} bytes "
                              f"(--body-budget-per-source); retry when one is answered",
                              retry_after_ms=RETRY_AFTER_MS)
        telemetry.OVERLOADED.inc("body_bytes")
        return Overloaded(f"this server's request bodies hold all of its budget of "
                          f"{budget.limit} bytes; none was given back within "
                          f"{budget.wait_s:g} s; retry shortly", retry_after_ms=RETRY_AFTER_MS)

    def _waits(self, n: int, newcomer: bool, sign: int) -> None:
        budget = self.budget
        if newcomer:
            budget.newcomers += sign
            return
        self.wanted = n if sign > 0 else 0
        if sign > 0:
            budget.growers.append(self)
        else:
            budget.growers.remove(self)

    def _fits(self, n: int, newcomer: bool) -> bool:
        budget = self.budget
        if not self._within_share(n):
            return False
        if newcomer:  # the room growers wait for is not a newcomer's, unless their own
            # source's share holds them back (one source cannot keep room from the others)
            shortfall = sum(g.wanted for g in budget.growers if g._within_share(g.wanted))
            return (budget.used + shortfall + n <= budget.limit
                    or budget.used == 0 and not budget.growers)  # or alone
        if budget.ahead is self or budget.used + n <= budget.limit or budget.used == self.held:
            return True  # ahead, it goes on alone past the budget until it is answered
        if (budget.ahead is None and budget.growers[0] is self
                and len(budget.growers) == budget.holders):
            budget.ahead = self  # no room, and every holder waits for more: none would
            return True  # give room back
        return False

    def give(self, n: int) -> None:
        n = min(n, self.held)
        if n <= 0:
            return
        with self.budget.changed:
            if self.in_lane:
                self.held -= n
                self.budget.lane_used -= n
                if self.held <= self.budget.large:  # back in the budget (at most a share
                    held, self.held = self.held, 0  # over it), out of the lane
                    self.budget.lane_used -= held
                    self.budget.lane_holds.remove(self)
                    self.in_lane = False
                    self._count(held)
            else:
                self._uncount(n)
            self.budget.changed.notify_all()

    def _uncount(self, n: int) -> None:
        budget = self.budget
        budget.used -= n
        budget.by_source[self.source] -= n
        if not budget.by_source[self.source]:
            del budget.by_source[self.source]
        self.held -= n
        budget.holders -= self.held == 0 and n > 0
        budget.holders_by[self.source] -= self.held == 0 and n > 0
        if not budget.holders_by[self.source]:
            del budget.holders_by[self.source]
        if self.held == 0 and budget.ahead is self:
            budget.ahead = None

    def resize(self, n: int) -> None:
        """Hold n bytes: the excess given back at once, a shortfall taken (may wait)."""
        if n < self.held:
            self.give(self.held - n)
        else:
            self.take(n - self.held)

    def release(self) -> None:
        self.give(self.held)

    def shared(self) -> Shared:
        """Its claims for threads that run side by side (Shared)."""
        return Shared(self)


class Shared:
    """One hold's claims from threads that run side by side (a request's image fetches): one
    take at a time, and once one is refused every later one is refused the same way, so the
    others stop instead of fetching for a request that is refused."""

    def __init__(self, hold: Hold):
        self.hold, self.lock, self.refused = hold, threading.Lock(), None

    def __call__(self, n: int) -> None:
        with self.lock:
            if self.refused is not None:
                raise self.refused
            try:
                self.hold.take(n)
            except (Overloaded, DeadlineExceeded) as e:
                self.refused = e
                raise
