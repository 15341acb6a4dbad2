"""The body budget: the bytes request bodies hold while they are read, decoded and parsed, every
request together, held under one server-wide cap so that many hostile bodies at once cannot
take the process's memory (and the vLLM beside it) with them.

Owns: the bytes held and who waits for room. A request claims what it may hold before its body
is read (body_limits.claim), waiting while it does not fit (a small claim, such as a normal
decision's, goes past a large one that waits), then resizes its hold to what it holds once that is known:
smaller at once, larger after a wait in which it goes before every request that holds nothing
(the room it lacks is kept from them: finishing, it frees its bytes), and when every request
that holds bytes waits so, the one waiting longest goes ahead, past the budget, alone until it
is answered (nothing else would ever give room back; one request's bytes over it at most). Its
waits together last at most `wait_s`; then it is refused with a 529 and retry-after-ms (or, when
the request's own deadline comes first, a 504 at that deadline). A claim
larger than the whole budget goes alone. The hold is released when the request is answered.
Never: reads or measures a body (body.py says what it holds).
"""
from __future__ import annotations

import threading
import time
from collections import deque

from .. import inflight, telemetry
from ..errors import DeadlineExceeded, Overloaded

RETRY_AFTER_MS = 1000


class Budget:
    """The server's budget: `limit` bytes, a wait of at most `wait_s` for room."""

    def __init__(self, limit: int, wait_s: float):
        self.limit, self.wait_s = limit, wait_s
        self.used, self.holders = 0, 0  # bytes held, and by how many holds
        self.newcomers = 0  # holds holding nothing, waiting
        self.growers: deque = deque()  # holds holding bytes, waiting for more, in order
        self.shortfall = 0  # what the growers wait for, together
        self.ahead = None  # the hold let past the budget when every holder waited
        self.changed = threading.Condition()

    @property
    def waiting(self) -> int:
        return self.newcomers + len(self.growers)

    def hold(self) -> Hold:
        return Hold(self)


class Hold:
    """One request's bytes in the budget."""

    def __init__(self, budget: Budget):
        self.budget, self.held, self.deadline = budget, 0, None

    def take(self, n: int) -> None:
        """n bytes more, once there is room (Overloaded past the request's wait)."""
        if n <= 0:
            return
        budget, newcomer = self.budget, self.held == 0
        with budget.changed:
            if self.deadline is None:
                self.deadline = time.monotonic() + budget.wait_s
            call = inflight.CURRENT.get()
            late = call is not None and call.deadline is not None and \
                call.deadline < self.deadline
            until = call.deadline if late else self.deadline
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
                raise DeadlineExceeded("the request's deadline passed while its body waited "
                                       "for room in the body budget; no work was started")
            if not room:
                telemetry.OVERLOADED.inc("body_bytes")
                raise Overloaded(f"this server's request bodies hold all of its budget of "
                                 f"{budget.limit} bytes; none was given back within "
                                 f"{budget.wait_s:g} s; retry shortly",
                                 retry_after_ms=RETRY_AFTER_MS)
            budget.used += n
            budget.holders += newcomer
            self.held += n

    def _waits(self, n: int, newcomer: bool, sign: int) -> None:
        budget = self.budget
        if newcomer:
            budget.newcomers += sign
            return
        budget.shortfall += sign * n
        if sign > 0:
            budget.growers.append(self)
        else:
            budget.growers.remove(self)

    def _fits(self, n: int, newcomer: bool) -> bool:
        budget = self.budget
        if newcomer:  # the room growers wait for is not a newcomer's
            return (budget.used + budget.shortfall + n <= budget.limit
                    or budget.used == 0 and not budget.growers)  # or alone
        if budget.ahead is self:
            return True  # it goes on alone past the budget until it is answered
        if (budget.ahead is None and budget.growers[0] is self
                and len(budget.growers) == budget.holders):
            budget.ahead = self  # every holder waits for more: none would give room back
            return True
        return budget.used + n <= budget.limit or budget.used == self.held  # or alone

    def give(self, n: int) -> None:
        n = min(n, self.held)
        if n <= 0:
            return
        with self.budget.changed:
            self.budget.used -= n
            self.held -= n
            self.budget.holders -= self.held == 0
            if self.held == 0 and self.budget.ahead is self:
                self.budget.ahead = None
            self.budget.changed.notify_all()

    def resize(self, n: int) -> None:
        """Hold n bytes: the excess given back at once, a shortfall taken (may wait)."""
        if n < self.held:
            self.give(self.held - n)
        else:
            self.take(n - self.held)

    def release(self) -> None:
        self.give(self.held)
