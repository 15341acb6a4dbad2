"""The expected time to answer a new decision now, from how the last ones went: admission
refuses a request at once when that is past its deadline (a 529 now, not a late answer whose
client has gone).

Owns: the decisions being answered (a count, and its integral over time), one decision's share
of the engine (its latency over the mean number answered beside it, an exponentially weighted
average over answered decisions), how far latencies run past that mean (the 95th percentile of
latency over the estimate made when the decision started) and the estimate: share x (in flight
+ 1) x that factor, so that most decisions admitted finish by it rather than half.
Never: queues, reads bodies or knows what a decision asks: every decision counts as the recent
average one, so a mix of very different sizes is estimated less well.
"""
from __future__ import annotations

import contextlib
import threading
import time

from ..errors import DeadlineExceeded

WEIGHT = 0.1  # of each new sample in the average: about the last 10 decisions
QUANTILE = 0.95  # of latency over the mean estimate, tracked as the margin
STEP = 0.05  # the margin moves by this fraction of itself per sample (up when one runs over)


class Pace:
    def __init__(self, weight: float = WEIGHT, clock=time.monotonic):
        self.weight, self.clock = weight, clock
        self.busy = 0  # decisions being answered
        self.share: float | None = None  # seconds of service per decision (None: none answered)
        self.margin = 1.0  # the QUANTILE of latency / (share x (in flight + 1)) at its start
        self._area, self._at = 0.0, clock()  # integral of busy over time, and when it was taken
        self._lock = threading.Lock()

    def _advance(self, now: float) -> float:
        self._area += self.busy * (now - self._at)
        self._at = now
        return self._area

    @contextlib.contextmanager
    def timed(self):
        """One decision being answered; an answered one (no exception) updates the share and
        the margin, and one stopped at its deadline the margin (it ran over its estimate)."""
        with self._lock:
            start = self.clock()
            area0 = self._advance(start)
            guess = None if self.share is None else self.share * (self.busy + 1)
            self.busy += 1
        answered, late = False, False
        try:
            yield
            answered = True
        except DeadlineExceeded:
            late = True
            raise
        finally:
            with self._lock:
                now = self.clock()
                shared = self._advance(now) - area0
                self.busy -= 1
                if answered and shared > 0:
                    self._learn(now - start, shared, guess)
                elif late and guess:
                    self._over(True)

    def _learn(self, latency: float, shared: float, guess: float | None) -> None:
        # in processor sharing a decision's latency is its work times the mean number served
        # beside it (itself included): work = latency / mean = latency² / area
        sample = latency ** 2 / shared
        self.share = sample if self.share is None else (
            self.share + self.weight * (sample - self.share))
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

    def expected_s(self) -> float:
        """Seconds a decision admitted now is expected to take (0 before any was answered)."""
        with self._lock:
            return 0.0 if self.share is None else self.share * (self.busy + 1) * self.margin
