"""What one request body may hold, and what it claims of the body budget before it is read.

Owns: the limits (Limits: the JSON's own bytes once decoded, a vision profile's images beside
them, the wire, the JSON's values and nesting, the longest string), the limits of the settings
and their profile, the claim a body of a given length and coding makes before it is read, and
how a Content-Encoding header lists its codings.
Never: reads, decodes or parses a body (body.py does).
In: the settings, a body's length and headers. Out: Limits, a claim.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from .decision import MAX_STATE_BYTES
from .edge.framing import CHUNKED
from .errors import PayloadTooLarge

# 400 questions of 255 options (~110,000 values) beside a JSON state of as many values as a
# 128k-token context can read whole (a cut state has at most 20,000 parts): a decision never
# needs more. At 200 bytes a value at most, the objects of one body stay under 50 MB.
MAX_VALUES = 250_000
MAX_DEPTH = 100  # objects and arrays inside one another: the stages walk them recursively
DEFLATE_RATIO = 1032  # DEFLATE's largest expansion: a 258-byte match coded in 2 bits
DEFLATES = ({"gzip"}, {"x-gzip"}, {"deflate"})  # one layer of these: bounded by the ratio


@dataclass(frozen=True)
class Limits:
    """What one request body may hold."""
    decoded_bytes: int = sys.maxsize  # the JSON's own bytes once decoded (--max-decoded-bytes)
    image_bytes: int = 0  # images' bytes beside them (a vision profile's, as base64)
    wire_bytes: int | None = None  # on the wire, images aside (--max-body-bytes; None: as
    # decoded)
    values: int = MAX_VALUES
    depth: int = MAX_DEPTH
    string_bytes: int = sys.maxsize  # the longest string any field takes (a state, an image)

    @property
    def longest_field(self) -> str:
        """The field `string_bytes` is set for, as a refusal names it."""
        return ("an image, as base64 in a data URL" if self.string_bytes > MAX_STATE_BYTES
                else "a state")

    @property
    def decoded(self) -> int:
        return self.decoded_bytes + self.image_bytes

    @property
    def wire(self) -> int:
        wire = self.decoded_bytes if self.wire_bytes is None else self.wire_bytes
        return wire + self.image_bytes


def limits(settings) -> Limits:
    """The limits of the settings and their profile: a vision profile's images are allowed
    beside the JSON, as many as it reads of the largest it takes, as base64 in a data URL."""
    vision, images, image = settings.model.vision, 0, 0
    if vision:
        image = 4 * -(-vision.max_bytes // 3) + len("data:image/;base64,") + 16
        images = vision.max_images * image
    return Limits(settings.max_decoded_bytes, images, settings.max_body_bytes,
                  settings.max_json_values, string_bytes=max(MAX_STATE_BYTES, image))


def claim(headers, length: int, lim: Limits) -> tuple[int, int]:
    """(bytes, wire limit) of a body of `length` wire bytes (framing.CHUNKED: not known): what
    reading, decoding and counting it may hold (body.scan: a copy or two of it), claimed of the
    body budget before it is read; what parsing holds is taken once it is counted (read), so
    a slow sender holds no more than its body's copies. A compressed body claims what it may
    decode to: one DEFLATE layer at most 1,032 times its length, within the decoded cap. Past
    the wire limit a 413, before anything is claimed."""
    wire = lim.wire
    if length > wire:
        raise PayloadTooLarge(f"the body is {length} bytes; this server accepts at most {wire} "
                              "bytes per request")
    most = wire if length == CHUNKED else length
    raw = 2 * most if length == CHUNKED else most  # chunks, then joined
    layers = set(codings(headers.get("Content-Encoding", ""))) - {"identity"}
    decoded = most if not layers else min(lim.decoded, most * DEFLATE_RATIO) \
        if layers in DEFLATES else lim.decoded
    work = 2 * decoded  # counting: a copy or two of it
    if layers:
        work += 2 * decoded  # the decompressor's pieces, then joined
    if headers.get("Content-Type", "").lower().startswith("multipart/"):
        work += 2 * decoded  # split into parts
    return raw + work, wire


def codings(content_encoding: str) -> list[str]:
    """A Content-Encoding header's codings, in the order they were applied."""
    return [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
