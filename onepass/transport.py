"""Transport: a request body off the socket, decoded and parsed as JSON, within limits.

Owns: Content-Length and chunked reading, Content-Encoding (gzip, deflate, zstd) with a cap on
the decoded size, Content-Type checks, strict JSON parsing (no NaN, bounded nesting).
Never: interprets the JSON (the adapters do) or logs body bytes.
In: the handler's headers and rfile. Out: a JSON value, or a typed error.
"""
from __future__ import annotations

import json
import zlib

from .errors import InvalidRequest, PayloadTooLarge, Problem, UnsupportedMediaType

try:  # Python 3.14+
    from compression import zstd as _zstd
except ImportError:
    try:
        from backports import zstd as _zstd  # optional; the shim runs without it
    except ImportError:
        _zstd = None

ZSTD_HOWTO = ("this server cannot decode zstd request bodies: run it on Python 3.14+ or install "
              "backports.zstd beside it, or send the body uncompressed")


def read_body(headers, rfile, max_body_bytes: int) -> bytes:
    """The raw body; refuses sizes over the limit before reading them."""
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        return _read_chunked(rfile, max_body_bytes)
    try:
        length = int(headers.get("Content-Length") or 0)
    except ValueError:
        raise InvalidRequest([Problem((), "Content-Length is not a number", "value_error")])
    if length < 0:
        raise InvalidRequest([Problem((), "Content-Length is negative", "value_error")])
    if length > max_body_bytes:
        raise PayloadTooLarge(f"the body is {length} bytes; this server accepts at most "
                              f"{max_body_bytes} bytes per request")
    return rfile.read(length)


def _read_chunked(rfile, max_body_bytes: int) -> bytes:
    parts, total = [], 0
    while True:
        line = rfile.readline(1024)
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise InvalidRequest([Problem((), "malformed chunked body", "value_error")]) from None
        if size == 0:
            while rfile.readline(1024).strip():  # trailers
                pass
            return b"".join(parts)
        total += size
        if total > max_body_bytes:
            raise PayloadTooLarge(f"the body exceeds this server's limit of {max_body_bytes} "
                                  "bytes per request")
        parts.append(rfile.read(size))
        rfile.readline(1024)


def decode(body: bytes, content_encoding: str, max_decoded_bytes: int) -> bytes:
    """Undo Content-Encoding (applied in order, so undone in reverse)."""
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
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


def _bounded(decompressor, data: bytes, limit: int, error) -> bytes:
    try:
        out = decompressor.decompress(data, limit + 1)
    except error as e:
        raise InvalidRequest([Problem((), f"the body could not be decompressed: {e}",
                                      "value_error")]) from None
    if len(out) > limit:
        raise PayloadTooLarge(f"the decoded body exceeds this server's limit of {limit} bytes")
    return out


def _no_constants(name):
    raise ValueError(f"{name} is not valid JSON")


def parse_json(body: bytes, content_type: str):
    media = content_type.split(";", 1)[0].strip().lower()
    if media and media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaType(f"Content-Type {media!r} is not supported here; "
                                   "send application/json")
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_no_constants)
    except UnicodeDecodeError as e:
        msg, kind = f"the body is not UTF-8: {e.reason} at byte {e.start}", "json_invalid"
    except RecursionError:
        msg, kind = "the JSON is nested too deeply", "json_invalid"
    except ValueError as e:
        msg, kind = f"JSON decode error: {e}", "json_invalid"
    raise InvalidRequest([Problem((), msg, kind)])
