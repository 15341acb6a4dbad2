"""What one request body may hold, and what it claims of the body budget as it is read.

Owns: the limits (Limits: the JSON's own bytes once decoded, a vision profile's images beside
them, the wire, the JSON's values and nesting, the longest string), the limits of the settings
and their profile, the wire limit judged from a body's head, what each piece of a body claims
as it is read and what its decoding claims once it is in, and which Content-Encoding this
server decodes (one layer of gzip, deflate or zstd), judged from the header before anything is
claimed.
Never: reads, decodes or parses a body (body.py does).
In: the settings, a body's length and headers. Out: Limits, a wire limit, claims.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from ..decision_model import MAX_STATE_BYTES
from ..errors import PayloadTooLarge, UnsupportedMediaType

try:  # Python 3.14+
    from compression import zstd as ZSTD
except ImportError:
    try:
        from backports import zstd as ZSTD  # optional; the shim runs without it
    except ImportError:
        ZSTD = None

# 400 questions of 255 options (~110,000 values) beside a JSON state of as many values as a
# 128k-token context can read whole (a cut state has at most 20,000 parts): a decision never
# needs more. At 200 bytes a value at most, the objects of one body stay under 50 MB.
MAX_VALUES = 250_000
MAX_DEPTH = 100  # objects and arrays inside one another: the stages walk them recursively
DEFLATE_RATIO = 1032  # DEFLATE's largest expansion: a 258-byte match coded in 2 bits
DEFLATES = ("gzip", "x-gzip", "deflate")  # bounded by the ratio
# Stacked layers are refused: each would multiply what a few bytes decode to, and no client
# sends them.
MAX_LAYERS = 1
ZSTD_HOWTO = ("this server cannot decode zstd request bodies: run it on Python 3.14+ or install "
              "backports.zstd beside it, or send the body uncompressed")


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


def wire_limit(headers, length: int, lim: Limits) -> int:
    """The wire limit of a body of `length` bytes (framing.CHUNKED: not known), judged from
    its head before anything is claimed or read: past the limit a 413, a coding this server
    does not decode a 415. Nothing is claimed for a body it has not received: reading claims
    each piece as it comes (reading), decoding, counting and parsing what they hold once the
    body is in (decode_claim, body.read), so a slow sender holds no more than it sent."""
    wire = lim.wire
    if length > wire:
        raise PayloadTooLarge(f"the body is {length} bytes; this server accepts at most {wire} "
                              "bytes per request")
    checked_layers(headers.get("Content-Encoding", ""))
    return wire


def reading(n: int) -> int:
    """What n more bytes of a body being read hold: themselves and the slack of the buffer
    they grow (an eighth, as io.BytesIO grows)."""
    return n + n // 8


def decode_claim(size: int, content_encoding: str, lim: Limits) -> int:
    """What decoding `size` compressed bytes may hold beside them: its output, which may grow
    to a DEFLATE layer's 1,032 times its input (zstd: the decoded cap), within the decoded cap,
    and a copy of it while the output buffer grows."""
    layers = checked_layers(content_encoding)
    if not layers:
        return 0
    most = min(lim.decoded, size * DEFLATE_RATIO) if layers[0] in DEFLATES else lim.decoded
    return 2 * most


def checked_layers(content_encoding: str) -> list[str]:
    """The compression layers a Content-Encoding header lists (identity aside), or a 415: an
    unknown coding, zstd on a Python without it, or more than MAX_LAYERS."""
    layers = [c for c in codings(content_encoding) if c != "identity"]
    for coding in layers:
        if coding == "zstd" and ZSTD is None:
            raise UnsupportedMediaType(ZSTD_HOWTO)
        if coding not in (*DEFLATES, "zstd"):
            raise UnsupportedMediaType(f"unsupported Content-Encoding {coding[:40]!r}; "
                                       "use gzip, deflate, zstd or none")
    if len(layers) > MAX_LAYERS:
        raise UnsupportedMediaType(f"one content coding at most (gzip, deflate or zstd), got "
                                   f"{len(layers)}: {', '.join(layers)[:100]}")
    return layers


def codings(content_encoding: str) -> list[str]:
    """A Content-Encoding header's codings, in the order they were applied."""
    return [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
