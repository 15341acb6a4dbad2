"""A request body (edge/framing.py read it off the socket) decoded and parsed as JSON: the first
thing Service.handle does with it, before the adapter reads any field.

Owns: Content-Encoding (gzip, deflate, zstd; whole streams only) with a cap on the decoded size,
Content-Type checks, strict JSON parsing (no NaN, no number beyond a float, no lone surrogate,
bounded nesting), and multipart/form-data (the JSON in a part named `request`, images in others).
Never: interprets the JSON (the adapters do) or logs body bytes.
In: the body bytes and its headers. Out: a JSON value, or a typed error.
"""
from __future__ import annotations

import json
import re
import zlib

from .errors import InvalidRequest, PayloadTooLarge, Problem, UnsupportedMediaType

try:  # Python 3.14+
    from compression import zstd as _zstd
except ImportError:
    try:
        from backports import zstd as _zstd  # optional; the shim runs without it
    except ImportError:
        _zstd = None

MAX_CODINGS = 2  # content codings applied on top of each other (each is bounded anyway)
MAX_JSON_DEPTH = 100  # objects and arrays inside one another: the stages walk them recursively
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
ZSTD_HOWTO = ("this server cannot decode zstd request bodies: run it on Python 3.14+ or install "
              "backports.zstd beside it, or send the body uncompressed")


def decode(body: bytes, content_encoding: str, max_decoded_bytes: int) -> bytes:
    """Undo Content-Encoding (applied in order, so undone in reverse)."""
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
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


MAX_PARTS = 32  # a multipart body's parts, the request included


def parse(body: bytes, content_type: str):
    """(JSON value, {part name: bytes}) from a JSON or a multipart/form-data body."""
    media, _, params = content_type.partition(";")
    if media.strip().lower() != "multipart/form-data":
        return parse_json(body, content_type), {}
    boundary = _param(params, "boundary")
    if not boundary or len(boundary) > 70:
        raise InvalidRequest([Problem((), "multipart/form-data needs a boundary of 1 to 70 "
                                      "characters", "value_error")])
    files = _multipart(body, boundary.encode("latin-1", "replace"))
    if "request" not in files:
        raise InvalidRequest([Problem((), "a multipart body needs a part named \"request\" "
                                      "holding the JSON request", "missing")])
    request, ctype = files.pop("request")
    return parse_json(request, ctype or "application/json"), {k: v for k, (v, _) in files.items()}


def _param(params: str, name: str) -> str | None:
    for item in params.split(";"):
        key, _, value = item.strip().partition("=")
        if key.strip().lower() == name:
            return value.strip().strip('"')
    return None


def _multipart(body: bytes, boundary: bytes) -> dict:
    """{name: (bytes, content type)}; every part needs a unique form-data name."""
    def bad(msg):
        return InvalidRequest([Problem((), f"malformed multipart body: {msg}", "value_error")])
    delimiter = b"--" + boundary
    start = body.find(delimiter)  # anything before it is a preamble, ignored
    if start < 0:
        raise bad("the boundary never occurs")
    chunks = body[start + len(delimiter):].split(b"\r\n" + delimiter)
    if len(chunks) > MAX_PARTS + 1:
        raise bad(f"more than {MAX_PARTS} parts")
    parts = {}
    for chunk in chunks:
        if chunk.startswith(b"--"):  # the closing delimiter
            return parts
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            raise bad("a part without a blank line after its headers")
        headers = {}
        for line in head.decode("utf-8", "replace").split("\r\n")[1:]:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        disposition, _, params = headers.get("content-disposition", "").partition(";")
        name = _param(params, "name")
        if disposition.strip().lower() != "form-data" or not name:
            raise bad("every part needs Content-Disposition: form-data with a name")
        if name in parts:
            raise bad(f"two parts are named {name!r}")
        parts[name] = (content, headers.get("content-type", ""))
    raise bad("no closing boundary")


def _no_constants(name):
    raise ValueError(f"{name} is not valid JSON")


def parse_json(body: bytes, content_type: str):
    media = content_type.split(";", 1)[0].strip().lower()
    if media and media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaType(f"Content-Type {media!r} is not supported here; "
                                   "send application/json")
    try:
        text = body.decode("utf-8")
        value = json.loads(text, parse_constant=_no_constants, parse_float=_finite)
        if _depth_over(value, MAX_JSON_DEPTH):
            raise RecursionError
        if SURROGATE_ESCAPE.search(text):  # only an escape can make one: check the strings
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeDecodeError as e:
        msg = f"the body is not UTF-8: {e.reason} at byte {e.start}"
    except UnicodeEncodeError:
        msg = "the JSON has a lone surrogate escape (\\ud800-\\udfff outside a pair)"
    except RecursionError:
        msg = f"the JSON is nested too deeply (at most {MAX_JSON_DEPTH} levels)"
    except ValueError as e:
        msg = f"JSON decode error: {e}"
    raise InvalidRequest([Problem((), msg, "json_invalid")])


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:20]} is out of range for a float")
    return value


def _depth_over(value, limit: int) -> bool:
    """Objects and arrays nested more than `limit` deep (iterative: any depth is safe here)."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def read(raw: bytes, headers, max_decoded_bytes: int) -> tuple:
    """(JSON value, multipart files): the body decoded and parsed, before any API field."""
    return parse(decode(raw, headers.get("Content-Encoding", ""), max_decoded_bytes),
                 headers.get("Content-Type", ""))
