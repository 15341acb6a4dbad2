"""Metrics: counters, gauges and histograms in a registry, rendered in Prometheus' text format.

Owns: the metric types, their thread-safe updates, bounded label sets (each label names the
values it may take; anything else is counted under `other`, so no client input can grow a
series) and the text exposition format 0.0.4 (HELP/TYPE lines, escaping, cumulative buckets).
Never: knows what onepass counts (telemetry.py does) or serves HTTP.
"""
from __future__ import annotations

import math
import threading

OTHER = "other"  # the label value for anything outside a label's declared values
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
    """A named family; `labels` maps each label name to the values it may take."""
    kind = ""

    def __init__(self, registry: "Registry", name: str, help_text: str, labels: dict):
        self.registry, self.name, self.help = registry, name, help_text
        self.label_names = tuple(labels)
        self.allowed = tuple(frozenset(str(v) for v in values) for values in labels.values())
        self.series: dict[tuple, object] = {}

    def key(self, values: tuple) -> tuple:
        if len(values) != len(self.label_names):
            raise ValueError(f"{self.name} takes labels {self.label_names}, got {values}")
        return tuple(str(v) if str(v) in ok else OTHER for v, ok in zip(values, self.allowed))

    def label_text(self, key: tuple, extra: tuple = ()) -> str:
        pairs = [*zip(self.label_names, key), *extra]
        if not pairs:
            return ""
        return "{" + ",".join(f'{n}="{_escape(v, True)}"' for n, v in pairs) + "}"

    def head(self) -> list[str]:
        return [f"# HELP {self.name} {_escape(self.help, False)}",
                f"# TYPE {self.name} {self.kind}"]


class Counter(Metric):
    kind = "counter"

    def inc(self, *labels, by: float = 1) -> None:
        if by < 0:
            raise ValueError("a counter only goes up")
        key = self.key(labels)
        with self.registry.lock:
            self.series[key] = self.series.get(key, 0) + by

    def lines(self) -> list[str]:
        return [f"{self.name}{self.label_text(k)} {number(v)}" for k, v in self.series.items()]


class Gauge(Metric):
    """A value set by the code, or read at scrape time from `read` ({label values: value})."""
    kind = "gauge"

    def __init__(self, *args, read=None):
        super().__init__(*args)
        self.read = read

    def set(self, value: float, *labels) -> None:
        key = self.key(labels)
        with self.registry.lock:
            self.series[key] = value

    def lines(self) -> list[str]:
        series = self.series if self.read is None else {
            self.key(k if isinstance(k, tuple) else (k,)): v for k, v in self.read().items()}
        return [f"{self.name}{self.label_text(k)} {number(v)}" for k, v in series.items()]


class Histogram(Metric):
    kind = "histogram"

    def __init__(self, *args, buckets: tuple):
        super().__init__(*args)
        if list(buckets) != sorted(set(buckets)) or not buckets:
            raise ValueError("histogram buckets must be distinct and increasing")
        self.bounds = tuple(float(b) for b in buckets if not math.isinf(b))

    def observe(self, value: float, *labels) -> None:
        key = self.key(labels)
        with self.registry.lock:
            counts, total = self.series.get(key) or ([0] * (len(self.bounds) + 1), 0.0)
            # each observation lands in its first bucket; rendering makes them cumulative
            i = next((i for i, b in enumerate(self.bounds) if value <= b), len(self.bounds))
            counts[i] += 1
            self.series[key] = (counts, total + value)

    def lines(self) -> list[str]:
        out = []
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

    def counter(self, name: str, help_text: str, labels: dict | None = None) -> Counter:
        return self._add(Counter(self, name, help_text, labels or {}))

    def gauge(self, name: str, help_text: str, labels: dict | None = None, read=None) -> Gauge:
        return self._add(Gauge(self, name, help_text, labels or {}, read=read))

    def histogram(self, name: str, help_text: str, buckets: tuple,
                  labels: dict | None = None) -> Histogram:
        return self._add(Histogram(self, name, help_text, labels or {}, buckets=buckets))

    def render(self) -> str:
        """The text exposition format 0.0.4, one family after another, ending in a newline."""
        out = []
        with self.lock:
            for metric in self.metrics.values():
                out += metric.head() + metric.lines()
        return "\n".join(out) + "\n"
