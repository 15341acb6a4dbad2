"""Metrics: counters, gauges and histograms in a registry, rendered in Prometheus' text format.

Owns: the metric types, their thread-safe updates, bounded label sets (each label names the
values it may take; anything else is counted under `other`, so no client input can grow a
series), every declared series present at 0 from the start (a series that appears only at its
first event hides that event from rate() and from alerts) and the text exposition format 0.0.4
(HELP/TYPE lines, escaping, cumulative buckets).
Never: knows what onepass counts (telemetry.py does) or serves HTTP.
"""
from __future__ import annotations

import itertools
import math
import threading

OTHER = "other"  # the label value for anything outside a label's declared values
FREE = None  # a label's values: whatever the process sets (its own configuration, one series)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape(text: str, quote: bool) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if quote else text


def number(value: float) -> str:
    """A sample value or bucket bound as the format writes it."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


class Metric:
    """A named family. `labels` maps each label name to the values it may take, or to FREE for
    a value the process sets from its own configuration (never from a request), or to a
    function giving those values when asked (a registry that may grow after this metric is
    made: its values are read at each count and scrape). `start` names, per label, the values
    whose series exist at 0 from the start (default: every declared one; a grown value's at the
    next scrape); `read` gives the series at scrape time instead ({label values: value})."""
    kind = ""

    def __init__(self, registry: "Registry", name: str, help_text: str, labels: dict,
                 start: dict | None = None, read=None):
        self.registry, self.name, self.help, self.read = registry, name, help_text, read
        self.label_names = tuple(labels)
        self.allowed = tuple(None if values is FREE else values if callable(values)
                             else frozenset(str(v) for v in values) for values in labels.values())
        self.series: dict[tuple, object] = {}
        self.start = None
        if read is None and FREE not in labels.values():
            self.start = {**labels, **(start or {})}
            self.fill()
        # a label whose values a function gives may gain some: only then is fill run again
        self.grows = self.start is not None and any(map(callable, self.start.values()))

    def fill(self) -> None:
        """Every start series that is not there yet, at 0 (the caller holds the lock, or the
        metric is not shared yet)."""
        if self.start is None:
            return
        for key in itertools.product(*(_values(self.start[n]) for n in self.label_names)):
            key = self.key(key)
            if key not in self.series:
                self.series[key] = self.empty()

    def empty(self):
        return 0

    def key(self, values: tuple) -> tuple:
        if len(values) != len(self.label_names):
            raise ValueError(f"{self.name} takes labels {self.label_names}, got {values}")
        return tuple(str(v) if ok is None or str(v) in _allowed(ok) else OTHER
                     for v, ok in zip(values, self.allowed))

    def current(self) -> dict:
        if self.read is None:
            if self.grows:
                self.fill()
            return self.series
        return {self.key(k if isinstance(k, tuple) else (k,)): v for k, v in self.read().items()}

    def label_text(self, key: tuple, extra: tuple = ()) -> str:
        pairs = [*zip(self.label_names, key), *extra]
        if not pairs:
            return ""
        return "{" + ",".join(f'{n}="{_escape(v, True)}"' for n, v in pairs) + "}"

    def head(self) -> list[str]:
        return [f"# HELP {self.name} {_escape(self.help, False)}",
                f"# TYPE {self.name} {self.kind}"]

    def lines(self) -> list[str]:
        return [f"{self.name}{self.label_text(k)} {number(v)}" for k, v in self.current().items()]


def _values(values):
    """A label's declared values now (a function's: as it gives them when asked)."""
    return values() if callable(values) else values


def _allowed(ok) -> frozenset:
    return frozenset(str(v) for v in ok()) if callable(ok) else ok


class Counter(Metric):
    """Counted by the code, or read at scrape time (a total the process keeps, like CPU time)."""
    kind = "counter"

    def inc(self, *labels, by: float = 1) -> None:
        if by < 0:
            raise ValueError("a counter only goes up")
        key = self.key(labels)
        with self.registry.lock:
            self.series[key] = self.series.get(key, 0) + by


class Gauge(Metric):
    """A value set by the code, or read at scrape time."""
    kind = "gauge"

    def set(self, value: float, *labels) -> None:
        key = self.key(labels)
        with self.registry.lock:
            self.series[key] = value


class Histogram(Metric):
    kind = "histogram"

    def __init__(self, *args, buckets: tuple, **kwargs):
        if list(buckets) != sorted(set(buckets)) or not buckets:
            raise ValueError("histogram buckets must be distinct and increasing")
        self.bounds = tuple(float(b) for b in buckets if not math.isinf(b))
        super().__init__(*args, **kwargs)  # after the bounds: the empty series need them

    def empty(self):
        return [0] * (len(self.bounds) + 1), 0.0

    def observe(self, value: float, *labels) -> None:
        key = self.key(labels)
        with self.registry.lock:
            counts, total = self.series.get(key) or self.empty()
            # each observation lands in its first bucket; rendering makes them cumulative
            i = next((i for i, b in enumerate(self.bounds) if value <= b), len(self.bounds))
            counts[i] += 1
            self.series[key] = (counts, total + value)

    def lines(self) -> list[str]:
        out = []
        if self.grows:
            self.fill()
        for key, (counts, total) in self.series.items():
            running = 0
            for bound, count in zip((*self.bounds, math.inf), counts):
                running += count
                le = (("le", number(bound) if math.isinf(bound) else repr(bound)),)
                out.append(f"{self.name}_bucket{self.label_text(key, le)} {running}")
            out.append(f"{self.name}_sum{self.label_text(key)} {number(total)}")
            out.append(f"{self.name}_count{self.label_text(key)} {running}")
        return out


class Registry:
    """Every metric of a process, rendered in registration order."""

    def __init__(self):
        self.lock = threading.Lock()
        self.metrics: dict[str, Metric] = {}

    def _add(self, metric: Metric) -> Metric:
        if metric.name in self.metrics:
            raise ValueError(f"metric {metric.name} is registered twice")
        self.metrics[metric.name] = metric
        return metric

    def counter(self, name: str, help_text: str, labels: dict | None = None, **kw) -> Counter:
        return self._add(Counter(self, name, help_text, labels or {}, **kw))

    def gauge(self, name: str, help_text: str, labels: dict | None = None, **kw) -> Gauge:
        return self._add(Gauge(self, name, help_text, labels or {}, **kw))

    def histogram(self, name: str, help_text: str, buckets: tuple,
                  labels: dict | None = None, **kw) -> Histogram:
        return self._add(Histogram(self, name, help_text, labels or {}, buckets=buckets, **kw))

    def render(self) -> str:
        """The text exposition format 0.0.4, one family after another, ending in a newline."""
        out = []
        with self.lock:
            for metric in self.metrics.values():
                out += metric.head() + metric.lines()
        return "\n".join(out) + "\n"
