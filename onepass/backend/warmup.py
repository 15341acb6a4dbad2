"""Warm-up requests: every question type once through each API's full request path, before ready.

Owns: the warm-up bodies (each kind's questions from its adapters in kinds/), each with its
route, and a small PNG writer for the image ones.
Never: runs them (server.Service.warm_up does) or names a kind (the registry gives them).
"""
from __future__ import annotations

import base64
import struct
import zlib

from .. import kinds

STATE = "Order 4471: the customer was charged twice and asks for one charge to be refunded."

MODEL = "jev-latest"


def reading_bodies() -> tuple[tuple[str, dict], ...]:
    """(route, body) for the kinds answered by label reads, as registered when asked:
    /v1/systemone each kind's own body, then each kind's short question in one body over a list
    state; /v1/decisions message input with parts and each kind's question there."""
    reading = kinds.reading()
    systemone = tuple({"model": MODEL, **k.systemone.warmup_body(STATE)} for k in reading) + (
        {"model": MODEL, "state": [STATE, "Second message: still waiting."],
         "questions": dict(k.systemone.warmup_short for k in reading if k.systemone.warmup_short)},)
    decisions = {"model": MODEL, "input": [{"role": "user", "content": [
        {"type": "input_text", "text": STATE}, {"type": "input_json", "data": {"order": 4471}}]}],
        "questions": [k.decisions.warmup for k in reading if k.decisions and k.decisions.warmup]}
    return tuple(("/v1/systemone", b) for b in systemone) + (("/v1/decisions", decisions),)


def png(width: int, height: int, rgb: tuple[int, int, int], square=None,
        level: int = -1) -> bytes:
    """A one-colour RGB PNG, written with the standard library; `square` = (left, top, side,
    rgb) paints one square of another colour on it; `level`: zlib's (bench/parity/ keeps 9, the
    level its recorded corpus was written with)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    def row(y: int) -> bytes:
        if square is None or not square[1] <= y < square[1] + square[2]:
            return bytes(rgb) * width
        left, _, side, colour = square
        inside = max(0, min(side, width - left))
        return bytes(rgb) * left + bytes(colour) * inside + bytes(rgb) * (width - left - inside)
    rows = b"".join(b"\0" + row(y) for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, level)) + chunk(b"IEND", b""))


def image_bodies() -> tuple[tuple[str, dict], ...]:
    """The image path on both APIs: vLLM's processor and vision tower run once before ready,
    for the first reading kind's image question on each API (warmup_image)."""
    url = "data:image/png;base64," + base64.b64encode(png(48, 32, (200, 40, 40))).decode()
    reading = kinds.reading()
    asked = next((k.systemone.warmup_image for k in reading if k.systemone.warmup_image), None)
    decided = next((k.decisions.warmup_image for k in reading
                    if k.decisions and k.decisions.warmup_image), None)
    systemone = {"model": MODEL, "state": {"photo": url, "note": STATE},
                 "questions": dict([asked])} if asked else None
    decisions = {"model": MODEL, "input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": url},
        {"type": "input_text", "text": "A product photo."}]}],
        "questions": [decided]} if decided else None
    return tuple((route, body) for route, body in (("/v1/systemone", systemone),
                                                   ("/v1/decisions", decisions)) if body)


def warmup_bodies(two_way: bool, vision: bool = False, served=()) -> tuple[tuple[str, dict], ...]:
    """(route, body): every question type in the default mode on both APIs (and images, on a
    vision model; each kind not answered by its own label reads alone where it is `served`:
    its refusal is None); with two-way live, both modes explicitly too (on a GPU
    the two-way kernel variant compiles on first use: not on a client's clock)."""
    bodies = reading_bodies()
    if vision:
        bodies += image_bodies()
    picture = "data:image/png;base64," + base64.b64encode(png(48, 32, (40, 40, 200))).decode()
    bodies += tuple(("/v1/systemone", {"model": MODEL, **k.systemone.warmup_body(STATE, picture)})
                    for k in kinds.KINDS.values() if not k.reads and k.name in served)
    if not two_way:
        return bodies
    last = bodies[len(kinds.reading())][1]  # the body with every kind
    return bodies + tuple(("/v1/systemone", {**last, "attention_mode": mode})
                          for mode in ("bidirectional", "causal"))
