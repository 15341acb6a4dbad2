"""The expected time to answer a new decision now, from how the last ones went: admission
refuses a request at once when that is past its deadline (a 529 now, not a late answer whose
client has gone).

Owns: the decisions being answered (a count, and its integral over time), one decision's share
of the engine (its latency over the mean number answered beside it, an exponentially weighted
average over answered decisions), how far latencies run past that mean (the 95th percentile of
latency over the estimate made when the decision started) and the estimate: share x (in flight
+ 1) x that factor, so that most decisions admitted finish by it rather than half; and, per
cost, the engine's seconds per token of work (a decision's service over its price in tokens,
work.Budget.price, once its fit step priced it), so a decision priced before its first read is
expected at its own cost when that is less than the recent average one's: one client's long
decisions make another's cheap one expected cheap (`expected_s(cost)`); a decision not priced
yet is judged at MIN_COST (`least_s`).
Never: queues, reads bodies or knows what a decision asks beyond its price.
"""
from __future__ import annotations

import contextlib
import math
import threading
import time

from .. import telemetry
from ..errors import DeadlineExceeded, Overloaded

WEIGHT = 0.1  # of each new sample in the average: about the last 10 decisions
QUANTILE = 0.95  # of latency over the mean estimate, tracked as the margin
STEP = 0.05  # the margin moves by this fraction of itself per sample (up when one runs over)
MIN_COST = 64  # tokens of work a decision costs at least: a read's system turn and question


class Timing:
    """One decision being answered: its price, once its fit step knows it. Called with the
    price (before the first read): a 529 when a decision of that cost is expected to end past
    the request's deadline."""
    __slots__ = ("cost", "pace", "call")

    def __init__(self, pace, call):
        self.cost, self.pace, self.call = None, pace, call

    def __call__(self, cost: int) -> None:
        self.cost = cost
        self.pace.check(self.call, cost)


class Pace:
    def __init__(self, weight: float = WEIGHT, clock=time.monotonic):
        self.weight, self.clock = weight, clock
        self.busy = 0  # decisions being answered
        self.share: float | None = None  # seconds of service per decision (None: none answered)
        self.rate: float | None = None  # seconds of service per token of work (None: none priced)
        self.margin = 1.0  # the QUANTILE of latency / (share x (in flight + 1)) at its start
        self._area, self._at = 0.0, clock()  # integral of busy over time, and when it was taken
        self._lock = threading.Lock()

    def _advance(self, now: float) -> float:
        self._area += self.busy * (now - self._at)
        self._at = now
        return self._area

    @contextlib.contextmanager
    def timed(self, call=None):
        """One decision being answered; an answered one (no exception) updates the share and
        the margin, and one stopped at its deadline the margin (it ran over its estimate)."""
        with self._lock:
            start = self.clock()
            area0 = self._advance(start)
            guess = None if self.share is None else self.share * (self.busy + 1)
            busy = self.busy = self.busy + 1
        answered, late, timing = False, False, Timing(self, call)
        try:
            yield timing
            answered = True
        except DeadlineExceeded:
            late = True
            raise
        finally:
            with self._lock:
                now = self.clock()
                shared = self._advance(now) - area0
                self.busy -= 1
                if timing.cost and self.rate is not None:  # its own cost's guess
                    guess = self.rate * timing.cost * busy
                if answered and shared > 0:
                    self._learn(now - start, shared, guess, timing.cost)
                elif late and guess:
                    self._over(True)

    def _learn(self, latency: float, shared: float, guess: float | None,
               cost: int | None = None) -> None:
        # in processor sharing a decision's latency is its work times the mean number served
        # beside it (itself included): work = latency / mean = latency² / area
        sample = latency ** 2 / shared
        self.share = sample if self.share is None else (
            self.share + self.weight * (sample - self.share))
        if cost:
            per = sample / cost
            self.rate = per if self.rate is None else self.rate + self.weight * (per - self.rate)
        if guess:
            self._over(latency > guess * self.margin)

    def _over(self, over: bool) -> None:
        # a stochastic quantile: up by q of the step when over, down by 1 - q when not, so it
        # settles where a fraction 1 - q of decisions run over
        self.margin = max(0.5, self.margin * (1 + STEP * (QUANTILE if over else QUANTILE - 1)))

    def slot_s(self) -> float | None:
        """Seconds of the engine one decision takes on average (its share; 1 / throughput at
        the number running; None before any was answered)."""
        with self._lock:
            return self.share

    def expected_s(self, cost: int | None = None, running: bool = False) -> float:
        """Seconds a decision admitted now is expected to take (0 before any was answered): the
        recent average decision's, or, given its `cost` in tokens once any decision was priced,
        its own cost's when that is less (a price is not extrapolated upward: a decision's
        time has a fixed part the price does not show, so a small decision's rate would make a
        large one look longer than it is); `running`: it is already among those answered."""
        with self._lock:
            beside = self.busy + (not running)
            if self.share is None:
                return 0.0
            average = self.share * beside * self.margin
            if cost is not None and self.rate is not None:
                return min(average, self.rate * cost * beside * self.margin)
            return average

    def least_s(self) -> float:
        """Seconds a decision not priced yet takes at least: at MIN_COST once any decision was
        priced (else the recent average decision's)."""
        return self.expected_s(MIN_COST)

    def check(self, call, cost: int | None = None) -> None:
        """Overloaded (529, reason deadline) for a request whose deadline comes before the
        time its decision is expected to take (none without a deadline): before it is priced,
        the least a decision takes; once priced (`cost`, before its first read, itself among
        those running), its own cost's time. Refused before any read, it can be retried at
        once elsewhere or a little later here."""
        if call is None or call.deadline is None:
            return
        expected = self.least_s() if cost is None else self.expected_s(cost, running=True)
        left = call.deadline - time.monotonic()
        if expected <= left:
            return
        telemetry.OVERLOADED.inc("deadline")
        raise Overloaded(f"a decision is expected to take {expected:.2f} s now ({self.busy} in "
                         f"flight), past this request's deadline ({max(left, 0):.2f} s left); "
                         "retry later or with a longer deadline",
                         retry_after_ms=max(200, math.ceil((expected - left) * 1000)))
