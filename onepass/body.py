"""A request body (edge/framing.py read it off the socket) decoded and parsed as JSON: the first
thing the parse step (pipeline.Pipeline.decide) does with it, before the adapter reads any field.

Owns: what a body may hold (Limits: the JSON's own bytes once decoded, a vision profile's images
beside them, the wire), what it claims of the body budget before it is read (claim) and holds
once decoded and counted (the hold resized before json.loads runs), Content-Encoding (gzip,
deflate, zstd; whole streams only) with a cap on the decoded size, Content-Type checks, strict
JSON parsing (no NaN, no number beyond a float, no lone surrogate; values and nesting counted
before parsing, json_shape.py) and multipart/form-data (multipart.py).
Never: interprets the JSON (the adapters do) or logs body bytes.
In: the body bytes and its headers. Out: a JSON value, or a typed error.
"""
from __future__ import annotations

import json
import re
import sys
import zlib
from dataclasses import dataclass

from . import json_shape, multipart
from .decision import MAX_STATE_BYTES
from .edge.framing import CHUNKED
from .errors import InvalidRequest, PayloadTooLarge, Problem, UnsupportedMediaType

try:  # Python 3.14+
    from compression import zstd as _zstd
except ImportError:
    try:
        from backports import zstd as _zstd  # optional; the shim runs without it
    except ImportError:
        _zstd = None

MAX_CODINGS = 2  # content codings applied on top of each other (each is bounded anyway)
MAX_JSON_DEPTH, MAX_JSON_VALUES = json_shape.MAX_DEPTH, json_shape.MAX_VALUES
DEFLATE_RATIO = 1032  # DEFLATE's largest expansion: a 258-byte match coded in 2 bits
DEFLATES = ({"gzip"}, {"x-gzip"}, {"deflate"})  # one layer of these: bounded by the ratio
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
ZSTD_HOWTO = ("this server cannot decode zstd request bodies: run it on Python 3.14+ or install "
              "backports.zstd beside it, or send the body uncompressed")


@dataclass(frozen=True)
class Limits:
    """What one request body may hold."""
    decoded_bytes: int = sys.maxsize  # the JSON's own bytes once decoded (--max-decoded-bytes)
    image_bytes: int = 0  # images' bytes beside them (a vision profile's, as base64)
    wire_bytes: int | None = None  # on the wire, images aside (--max-body-bytes; None: as
    # decoded)
    values: int = MAX_JSON_VALUES
    depth: int = MAX_JSON_DEPTH
    string_bytes: int = sys.maxsize  # the longest string any field takes (a state, an image)

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
    reading, decoding and counting it may hold (json_shape: a copy or two of it), claimed of the
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
    codings = set(_codings(headers.get("Content-Encoding", ""))) - {"identity"}
    decoded = most if not codings else min(lim.decoded, most * DEFLATE_RATIO) \
        if codings in DEFLATES else lim.decoded
    work = 2 * decoded  # counting: a copy or two of it
    if codings:
        work += 2 * decoded  # the decompressor's pieces, then joined
    if headers.get("Content-Type", "").lower().startswith("multipart/"):
        work += 2 * decoded  # split into parts
    return raw + work, wire


def decode(body: bytes, content_encoding: str, max_decoded_bytes: int) -> bytes:
    """Undo Content-Encoding (applied in order, so undone in reverse)."""
    codings = _codings(content_encoding)
    if len(codings) > MAX_CODINGS:
        raise UnsupportedMediaType(f"at most {MAX_CODINGS} content codings, got {len(codings)}")
    for coding in reversed(codings):
        if coding == "identity":
            continue
        if coding in ("gzip", "x-gzip", "deflate"):
            wbits = 47 if coding != "deflate" else 15  # 47: gzip or zlib header, auto-detected
            body = _bounded(zlib.decompressobj(wbits), body, max_decoded_bytes, zlib.error)
        elif coding == "zstd":
            if _zstd is None:
                raise UnsupportedMediaType(ZSTD_HOWTO)
            body = _bounded(_zstd.ZstdDecompressor(), body, max_decoded_bytes, _zstd.ZstdError)
        else:
            raise UnsupportedMediaType(f"unsupported Content-Encoding {coding!r}; "
                                       "use gzip, deflate, zstd or none")
    return body


def _codings(content_encoding: str) -> list[str]:
    return [c.strip().lower() for c in content_encoding.split(",") if c.strip()]


def _bounded(decompressor, data: bytes, limit: int, error) -> bytes:
    try:
        out = decompressor.decompress(data, limit + 1)
    except error as e:
        raise InvalidRequest([Problem((), f"the body could not be decompressed: {e}",
                                      "value_error")]) from None
    if len(out) > limit:
        raise PayloadTooLarge(f"the decoded body exceeds this server's limit of {limit} bytes")
    if not decompressor.eof:  # gzip's checksum trailer, zlib's and zstd's end: all required
        raise InvalidRequest([Problem((), "the compressed body is truncated: its end (and "
                                      "checksum) is missing", "value_error")])
    if decompressor.unused_data:
        raise InvalidRequest([Problem((), "bytes follow the end of the compressed body",
                                      "value_error")])
    return out


def read(raw: bytes, headers, lim: Limits, hold=None) -> tuple:
    """(JSON value, multipart files): the body decoded and parsed, before any API field. With
    a hold on the body budget (holding claim's bytes), the hold is resized to what counting
    and then parsing hold before they run; no room in time is a 529 (Overloaded)."""
    data = decode(raw, headers.get("Content-Encoding", ""), lim.decoded)
    held = len(raw) + (len(data) if data is not raw else 0)
    return parse(data, headers.get("Content-Type", ""), lim, hold, held)


def parse(body: bytes, content_type: str, lim: Limits = Limits(), hold=None, held: int = 0):
    """(JSON value, {part name: bytes}) from a JSON or a multipart/form-data body."""
    media, _, params = content_type.partition(";")
    if media.strip().lower() != "multipart/form-data":
        return parse_json(body, content_type, lim, hold, held), {}
    if hold is not None:  # split: a copy of the body after its preamble, then its parts
        hold.resize(held + 2 * len(body))
    request, ctype, files = multipart.split(body, params)
    held += len(body)
    return parse_json(request, ctype or "application/json", lim, hold, held), files


def _no_constants(name):
    raise ValueError(f"{name} is not valid JSON")


def parse_json(body: bytes, content_type: str, lim: Limits = Limits(), hold=None,
               held: int = 0):
    """The JSON value of a body, its shape checked first (json_shape.scan) and, with a hold,
    the bytes its parse takes held (`held`: what the request holds besides) before parsing."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media and media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaType(f"Content-Type {media!r} is not supported here; "
                                   "send application/json")
    if lim.image_bytes and len(body) > lim.decoded_bytes:
        besides = len(body) - min(json_shape.image_bytes(body), lim.image_bytes)
        if besides > lim.decoded_bytes:
            raise PayloadTooLarge(f"the JSON is {besides} bytes besides images; this server reads "
                                  f"at most {lim.decoded_bytes} bytes besides images per request")
    if hold is not None:
        hold.resize(held + 2 * len(body))  # what counting copies
    shape = json_shape.scan(body, lim)
    surrogates = shape.escapes and SURROGATE_ESCAPE.search(body) is not None
    if hold is not None:  # the lone-surrogate check encodes the value once more
        hold.resize(held + shape.parse_bytes(len(body)) + 8 * len(body) * surrogates)
    try:
        text = body.decode("utf-8")
        value = json.loads(text, parse_constant=_no_constants, parse_float=_finite)
        del text
        if surrogates:  # only an escape can make one: check the strings
            json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if hold is not None:  # the text is gone; the value stays
            hold.resize(held + shape.kept_bytes(len(body)))
        return value
    except UnicodeDecodeError as e:
        msg = f"the body is not UTF-8: {e.reason} at byte {e.start}"
    except UnicodeEncodeError:
        msg = "the JSON has a lone surrogate escape (\\ud800-\\udfff outside a pair)"
    except RecursionError:
        msg = f"the JSON is nested too deeply (at most {lim.depth} levels)"
    except ValueError as e:
        msg = f"JSON decode error: {e}"
    raise InvalidRequest([Problem((), msg, "json_invalid")])


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:20]} is out of range for a float")
    return value
