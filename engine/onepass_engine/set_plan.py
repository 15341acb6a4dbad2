"""A set read's plan: which rows sets.py recomputes, in what order, which keys each row sees,
and how many rows it attends at once.

Owns: the canonical order of a set request's tokens (the spans sorted by their token ids), where
each part (the prefix, each span, the tail) lies in it, the bias of a block of rows built from
those, and the block size.
Never: reads the cache or attends (sets.py), or sees anything but one request's geometry.

Why per block: a plan keeps only vectors as long as the prompt, and each block of rows gets its
[rows, keys] bias when it is attended; a whole one would be a GiB at 16k rows and keys, on top
of vLLM's memory profile, which never sees it.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

# A block's fp32 scores ([query heads, rows, keys]) stay under this. Its softmax weights are as
# large and its bias smaller (a softcap or sinks add a copy), so a block holds two to three
# times this at its peak at any context length (bench/measure/set_read_memory.py).
CHUNK_BYTES = 64 << 20


def chunk_rows(heads: int, keys: int) -> int:
    """Rows attended at once: as many as keep [heads, rows, keys] fp32 scores within
    CHUNK_BYTES, at least one. It depends on the key count and heads only, the same for every
    listing of the same spans, so every listing cuts its rows (in canonical order) at the same
    places and computes the same bits."""
    return max(1, CHUNK_BYTES // (4 * heads * keys))


@dataclass(frozen=True)
class Plan:
    """A set request's recomputed rows in one step, in canonical coordinates: the keys with the
    spans in their canonical order (each span's keys then one range), and the rows (the keys
    from the first span on; all, two-way). Every listing of the same spans has the same plan up
    to `at`, so it computes the same bits (the rows' queries, keys and values are the same
    vectors in the same order)."""
    at: torch.Tensor  # each row's place in the flattened batch
    keys: torch.Tensor  # token index of each key
    spans: tuple  # each span's keys, (start, end), in canonical order
    two_way: bool

    @property
    def first(self) -> int:
        """The first row's index among the keys."""
        return 0 if self.two_way else self.spans[0][0]

    def to(self, device) -> Plan:
        return Plan(self.at.to(device), self.keys.to(device), self.spans, self.two_way)

    def bias(self, lo: int, hi: int) -> torch.Tensor:
        """Rows lo:hi's [rows, keys] fp32 bias: 0 where the row sees the key, else -inf. A span
        sees the prefix and itself, the prefix (two-way) itself, the tail everything; causal
        within a span and within the tail unless two-way. Each part's keys are one range, so
        the bias is a few filled rectangles and triangles (no [rows, keys] bool masks)."""
        x0 = self.first + lo
        x1 = self.first + min(hi, len(self.at))
        prefix, keys = self.spans[0][0], len(self.keys)
        bias = torch.full((x1 - x0, keys), float("-inf"), dtype=torch.float32,
                          device=self.keys.device)
        bias[:, :prefix] = 0
        tail = (self.spans[-1][1], keys)
        # past the prefix, a span's rows see from the span's start, the tail's from the first span
        for (s, e), seen in [(span, span[0]) for span in self.spans] + [(tail, prefix)]:
            xs, xe = max(s, x0), min(e, x1)
            if xs >= xe:
                continue
            if self.two_way:
                bias[xs - x0:xe - x0, seen:e] = 0
            else:  # row x sees keys seen..x
                bias[xs - x0:xe - x0, seen:xe].triu_(xs - seen + 1)
        return bias


def plan(geo) -> Plan:
    """Rows from the first span on (all rows when two-way) of a sets.Geometry, keys and rows
    with the spans in the order of their token ids."""
    spans, length = geo.spans, geo.length
    first, end = spans[0][0], spans[-1][1]
    ids = geo.token_ids
    canonical = sorted(spans, key=lambda s: (tuple(ids[s[0]:s[1]]), s))
    order = (list(range(first)) + [t for s, e in canonical for t in range(s, e)]
             + list(range(end, length)))
    starts = [first]
    for s, e in canonical:
        starts.append(starts[-1] + e - s)
    keys = torch.tensor(order)
    row0 = 0 if geo.two_way else first
    return Plan(keys[row0:] - geo.computed + geo.start, keys, tuple(zip(starts, starts[1:])),
                geo.two_way)
