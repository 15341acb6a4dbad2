"""Transport: a request body off the socket, decoded and parsed as JSON, within limits.

Owns: Content-Length and chunked reading, Content-Encoding (gzip, deflate, zstd) with a cap on
the decoded size, Content-Type checks, strict JSON parsing (no NaN, bounded nesting), and
multipart/form-data (the JSON in a part named `request`, image files in the others).
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
        return json.loads(body.decode("utf-8"), parse_constant=_no_constants)
    except UnicodeDecodeError as e:
        msg, kind = f"the body is not UTF-8: {e.reason} at byte {e.start}", "json_invalid"
    except RecursionError:
        msg, kind = "the JSON is nested too deeply", "json_invalid"
    except ValueError as e:
        msg, kind = f"JSON decode error: {e}", "json_invalid"
    raise InvalidRequest([Problem((), msg, kind)])
