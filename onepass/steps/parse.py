"""Parse: the body as received made a checked Request.

Owns: nothing of its own: the body's decoding (body/decode.py: content coding, multipart, JSON,
each under body/limits.py's caps, the hold resized as it grows) and then the route's API
adapter's checks (api/systemone.py or api/decisions.py), in that order.
Never: resolves the model or the overrides (resolve.py) or reads images (images.py).
In: the record as given (adapter, raw body, headers, hold). Out: the record with its Request.
"""
from __future__ import annotations

from dataclasses import replace

from ..body import decode
from .record import Record


def parse(r: Record) -> Record:
    """The parse step."""
    serving = r.serving
    body, assets = decode.read(r.raw, r.headers, serving.body_limits, r.hold)
    return replace(r, request=r.adapter.parse(body, assets, serving.limits))
