"""Warm-up requests: every question type once through each API's full request path, before ready.

Owns: the fixed warm-up bodies, each with its route. Never: runs them (server.Service.warm_up does).
"""
from __future__ import annotations

import base64
import struct
import zlib

STATE = "Order 4471: the customer was charged twice and asks for one charge to be refunded."

WARMUP_BODIES = (
    {"model": "jev-latest", "state": STATE,
     "questions": {"refund": {"type": "noul", "instructions": "Is the customer asking for money back?"}}},
    {"model": "jev-latest", "state": STATE,
     "questions": {"team": {"type": "choice", "instructions": "Which team should handle it?",
                            "criteria": {"billing": "Payments and refunds", "tech": None,
                                         "sales": "Pricing and upgrades"}}}},
    {"model": "jev-latest", "state": {"ticket": STATE, "plan": "pro"},
     "questions": {"anger": {"type": "score", "instructions": "How angry is the customer?",
                             "criteria": ["Calm", "Annoyed", "Furious"]}}},
    {"model": "jev-latest", "state": [STATE, "Second message: still waiting."],
     "questions": {"refund": {"type": "noul", "criteria": {"true": "asks for a refund"}},
                   "team": {"type": "choice", "criteria": {"billing": None, "tech": None}},
                   "anger": {"type": "score", "criteria": ["Calm", "Annoyed", "Furious"]}}},
)


# /v1/decisions: message input with parts, and a typed (boolean) choice.
DECISIONS_BODY = {
    "model": "jev-latest",
    "input": [{"role": "user", "content": [{"type": "input_text", "text": STATE},
                                           {"type": "input_json", "data": {"order": 4471}}]}],
    "questions": [{"type": "predicate", "name": "refund", "instructions": "A refund is asked for."},
                  {"type": "choice", "instructions": "Refund approved?",
                   "choices": [{"value": True}, {"value": False}]},
                  {"type": "score", "instructions": "How angry?",
                   "levels": [{"label": "calm"}, {"label": "furious"}]}]}


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A one-colour RGB PNG, written with the standard library."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\0" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def image_bodies() -> tuple[tuple[str, dict], ...]:
    """The image path on both APIs: vLLM's processor and vision tower run once before ready."""
    url = "data:image/png;base64," + base64.b64encode(png(48, 32, (200, 40, 40))).decode()
    return (("/v1/systemone", {"model": "jev-latest", "state": {"photo": url, "note": STATE},
                               "questions": {"red": {"type": "noul",
                                                     "instructions": "Is [image 1] red?"}}}),
            ("/v1/decisions", {"model": "jev-latest", "input": [{"role": "user", "content": [
                {"type": "input_image", "image_url": url},
                {"type": "input_text", "text": "A product photo."}]}],
                "questions": [{"type": "choice", "instructions": "Its colour?",
                               "choices": [{"value": "red"}, {"value": "blue"}]}]}))


def warmup_bodies(two_way: bool, vision: bool = False) -> tuple[tuple[str, dict], ...]:
    """(route, body): every question type in the default mode on both APIs (and images, on a
    vision model); with two-way live, both modes explicitly too (on a GPU the two-way kernel
    variant compiles on first use: not on a client's clock)."""
    bodies = tuple(("/v1/systemone", b) for b in WARMUP_BODIES) + (("/v1/decisions",
                                                                    DECISIONS_BODY),)
    if vision:
        bodies += image_bodies()
    if not two_way:
        return bodies
    last = WARMUP_BODIES[-1]
    return bodies + tuple(("/v1/systemone", {**last, "attention_mode": mode})
                          for mode in ("bidirectional", "causal"))
