"""The door to the engine: a few decisions are answered at once, the others wait at it, and a
wait grown too long is refused (529) before any work is done for it. The rule is CoDel with
adaptive LIFO, as in "Fail at Scale" (Maurer, ACM Queue 2015).

Owns: how many decisions may run at once (at most `limit`; with `sized`, e.g. paced(): as
many as take about a goal's seconds at the engine's measured pace, Little's law, so a slower
engine runs fewer rather than every one late); the count running and the queue of those
waiting (each with its Call); the order a waiter goes in: oldest first while the queue drains,
newest first once it stands (it has not been empty for `interval_s`), since the newest have
the most patience left, but a waiter whose address runs a quarter of the places already goes
after the others, so one client's many cannot keep another's waiting, and one address never
runs every place but `spare` (one: it may hold more in flight, slots.py, than the places, and
the door never pre-empts, so a place stays free for another address's first decision);
shedding: a waiter may wait `target_s` while the queue stands, else `interval_s`, and never so long
that its decision, expected to take `least()` seconds at least, would end past its deadline; a
waiter whose client left or whose deadline passed leaves the queue and never starts (its
decision judged at the least one takes, `least()`: its own cost is not known before it is
priced, pace.py); on drain
every waiter is refused (nothing was done for it: it can be retried elsewhere).
Never: reads requests or sockets (edge/watch.py abandons a gone client's Call), measures
service time (pace.py: time at the door is no service) or takes the in-flight slots (slots.py:
a waiter holds one, so the server's cap bounds running and waiting together).
"""
from __future__ import annotations

import collections
import contextlib
import math
import threading
import time

from .. import inflight, telemetry
from ..errors import Overloaded

SHARE = 4  # one address's share of the places running: a quarter (as of slots and bodies)
POLL_S = 0.25  # a waiter looks at its Call this often (as the watcher polls its client)
GO = "go"  # a waiter's outcome once it may start


def source_of(call) -> str:
    return getattr(call, "source", "")


class Waiter:
    __slots__ = ("call", "at", "woken", "outcome", "source")

    def __init__(self, call, at: float):
        self.call, self.at, self.source = call, at, source_of(call)
        self.woken = threading.Event()
        self.outcome = None  # GO, or the exception its request raises


def paced(pace, goal_s: float):
    """How many decisions may run so that each takes about `goal_s` on average (Little's law:
    the goal times the engine's throughput at the number running, 1 / pace.slot_s), so the
    limit follows the engine (None before any decision was answered, or with no goal).
    Rounded up: a batching engine's throughput grows with what runs, so one more than the
    measure says lets the limit climb to where the goal is met, never stick at one."""
    def limit() -> int | None:
        slot = pace.slot_s() if goal_s else None
        return None if not slot else math.ceil(goal_s / slot)
    return limit


class Door:
    """At most `limit` decisions running (0: no door, every one starts at once; `sized()`, when
    given, lowers it: None or a number from 1 up); the rest wait, shed by how long they have
    waited. `expected()`: seconds a decision started now should take; `closed()`: the error a
    waiter gets once the server drains, else None."""

    def __init__(self, limit: int, target_s: float, interval_s: float,
                 expected=lambda: 0.0, closed=lambda: None, clock=time.monotonic,
                 poll_s: float = POLL_S, sized=lambda: None, least=None,
                 spare: int = 0):
        self.limit, self.target_s, self.interval_s = limit, target_s, interval_s
        self.spare = spare  # places one address leaves to the others (0: it may take all)
        self.sized = sized
        self.least = least or expected  # the least a waiter's decision takes: its deadline
        self.expected, self.closed, self.clock, self.poll_s = expected, closed, clock, poll_s
        self.running = 0
        self.by_source = collections.Counter()  # running, by the client's address
        self.queue: list[Waiter] = []  # oldest first
        self.last_empty = clock()  # when the queue was last seen empty
        self._lock = threading.Lock()

    def allowed(self) -> int:
        """How many may run now: the limit, or fewer as `sized` says, never below a quarter of
        the limit (one slow decision in the pace's average must not close the door on a
        burst)."""
        sized = self.sized()
        return self.limit if sized is None else max(1, self.limit // SHARE,
                                                    min(self.limit, sized))

    def waits(self) -> tuple[float, float]:
        """(target, interval): the settings', or, when a decision is expected to take longer,
        that time and twice it: waiting one decision's time is a queue's normal, not overload."""
        expected = self.expected()
        return max(self.target_s, expected), max(self.interval_s, 2 * expected)

    def standing(self, now: float, interval: float | None = None) -> bool:
        """Whether the queue has not been empty for the last interval (CoDel's standing queue:
        more work than the engine drains, not a burst)."""
        interval = self.waits()[1] if interval is None else interval
        return bool(self.queue) and now - self.last_empty >= interval

    @contextlib.contextmanager
    def entered(self, call=None):
        """The block runs once this decision may start; its end lets the next one in."""
        self.enter(call)
        try:
            yield
        finally:
            self.leave(call)

    def enter(self, call=None) -> None:
        """Wait until this decision may start. Raises Overloaded when shed, the Call's stop
        when its client left or its deadline passed (ClientClosed, DeadlineExceeded), or the
        drain's error; none of them has started anything."""
        with self._lock:
            if not self.limit:
                self._start(source_of(call))
                return
            now = self.clock()
            waiter = Waiter(call, now)
            if not self.queue:
                self.last_empty = now
            self.queue.append(waiter)
            self._sweep(now)
        while waiter.outcome is None:
            waiter.woken.wait(self._pause(waiter))
            with self._lock:
                if waiter.outcome is None:
                    self._sweep(self.clock())
        if waiter.outcome is not GO:
            raise waiter.outcome

    def leave(self, call=None) -> None:
        with self._lock:
            self.running -= 1
            source = source_of(call)
            self.by_source[source] -= 1
            if not self.by_source[source]:
                del self.by_source[source]
            if self.limit:
                self._sweep(self.clock())

    def _pause(self, waiter: Waiter) -> float:
        # until its wait could end (the target's or the interval's), a poll at most
        target, interval = self.waits()
        allowed = target if self.standing(self.clock(), interval) else interval
        return max(0.001, min(self.poll_s, waiter.at + allowed - self.clock()))

    def _sweep(self, now: float) -> None:
        """Refuse the waiters that may wait no longer, then let the next ones in."""
        target, interval = self.waits()
        stop, standing, running = self.closed(), self.standing(now, interval), self.allowed()
        allowed = target if standing else interval
        expected, kept = None, []
        for w in self.queue:
            why = stop or self._stopped(w)
            if why is None and w.call is not None and w.call.deadline is not None:
                expected = self.least() if expected is None else expected
                if w.call.deadline - now < expected:
                    telemetry.OVERLOADED.inc("deadline")
                    why = Overloaded(
                        f"waited {now - w.at:.2f} s for one of the {running} decisions "
                        f"answered at once; one is expected to take {expected:.2f} s, past this "
                        "request's deadline; retry later or with a longer deadline",
                        retry_after_ms=self._retry_ms())
            if why is None and now - w.at > allowed:
                telemetry.OVERLOADED.inc("queue")
                why = Overloaded(
                    f"waited {now - w.at:.2f} s for one of the {running} decisions answered at "
                    f"once, past the queue's {allowed:.2f} s (the queue "
                    f"{'standing' if standing else 'not standing'}: --queue-"
                    f"{'target' if standing else 'interval'}-s, or more for slower decisions); "
                    "retry later",
                    retry_after_ms=self._retry_ms())
            if why is None:
                kept.append(w)
            else:
                w.outcome = why
                w.woken.set()
        self.queue = kept
        while self.queue and self.running < running:
            w = self._next(standing, running)
            if w is None:
                break
            self._start(w.source)
            w.outcome = GO
            w.woken.set()
        if not self.queue:
            self.last_empty = now

    def _next(self, standing: bool, running: int) -> Waiter | None:
        """The waiter to start: the newest once the queue stands, else the oldest, passing over
        those whose address already runs its share of the places (a quarter), so one client's
        many cannot keep another's waiting; none whose address runs every place but `spare`
        (a place stays for another address's first decision: the door never pre-empts)."""
        most = max(1, running - self.spare)
        order = [x for x in (reversed(self.queue) if standing else self.queue)
                 if self.by_source[x.source] < most]
        if not order:
            return None
        share = max(1, running // SHARE)
        w = min(order, key=lambda x: self.by_source[x.source] >= share)  # the first below it
        self.queue.remove(w)
        return w

    def _start(self, source: str) -> None:
        self.running += 1
        self.by_source[source] += 1

    @staticmethod
    def _stopped(w: Waiter):
        """What stopped a waiter's Call (its client left, its deadline passed), or None."""
        if w.call is None:
            return None
        try:
            w.call.ensure_live()
        except inflight.STOPPED as e:
            return e
        return None

    def _retry_ms(self) -> int:
        # a standing queue is judged over an interval: come back after one
        return max(200, math.ceil(self.interval_s * 1000))
