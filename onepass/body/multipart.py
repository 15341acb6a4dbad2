"""A multipart/form-data body split into its parts: the JSON request in the part named `request`,
images in the others (the TypeSafe SDK's layout).

Owns: the boundary parameter, the part framing and each part's Content-Disposition name (unique)
and Content-Type.
Never: parses the JSON (body.py does) or reads an image's bytes (images/ does).
In: the decoded body and its Content-Type parameters. Out: the request part, its Content-Type
and {name: bytes} of the other parts, or InvalidRequest.
"""
from __future__ import annotations

from ..errors import InvalidRequest, Problem

MAX_PARTS = 32  # a multipart body's parts, the request included
# One part's headers (after its boundary line, up to the blank line): clients send two or
# three short lines. Found within these bytes, counted before anything is decoded or split.
MAX_PART_HEAD_BYTES, MAX_PART_HEAD_LINES = 8192, 32


def split(body: bytes, params: str) -> tuple[bytes, str, dict]:
    """(request bytes, its Content-Type, {part name: bytes}) of a multipart/form-data body."""
    boundary = param(params, "boundary")
    if not boundary or len(boundary) > 70:
        raise InvalidRequest([Problem((), "multipart/form-data needs a boundary of 1 to 70 "
                                      "characters", "value_error")])
    files = _parts(body, boundary.encode("latin-1", "replace"))
    if "request" not in files:
        raise InvalidRequest([Problem((), "a multipart body needs a part named \"request\" "
                                      "holding the JSON request", "missing")])
    request, ctype = files.pop("request")
    return request, ctype, {k: v for k, (v, _) in files.items()}


def param(params: str, name: str) -> str | None:
    for item in params.split(";"):
        key, _, value = item.strip().partition("=")
        if key.strip().lower() == name:
            return value.strip().strip('"')
    return None


def _parts(body: bytes, boundary: bytes) -> dict:
    """{name: (bytes, content type)}; every part needs a unique form-data name. Parts are found
    one at a time and each is copied once, so a body of many tiny parts is refused at part
    MAX_PARTS + 1 without splitting the rest of it; a part's headers are looked for within
    MAX_PART_HEAD_BYTES and their lines counted before any is decoded or split."""
    def bad(msg):
        return InvalidRequest([Problem((), f"malformed multipart body: {msg}", "value_error")])
    delimiter = b"--" + boundary
    between = b"\r\n" + delimiter
    start = body.find(delimiter)  # anything before it is a preamble, ignored
    if start < 0:
        raise bad("the boundary never occurs")
    at, parts = start + len(delimiter), {}
    for _ in range(MAX_PARTS + 1):
        if body.startswith(b"--", at):  # the closing delimiter
            return parts
        end = body.find(between, at)
        if end < 0:
            raise bad("no closing boundary")
        head_end = min(end, at + MAX_PART_HEAD_BYTES + 4)  # the boundary line's CRLF besides
        blank = body.find(b"\r\n\r\n", at, head_end)
        if blank < 0 and head_end < end:
            raise bad(f"a part's headers are longer than {MAX_PART_HEAD_BYTES} bytes")
        if blank < 0:
            raise bad("a part without a blank line after its headers")
        if body.count(b"\r\n", at, blank) > MAX_PART_HEAD_LINES:
            raise bad(f"a part has more than {MAX_PART_HEAD_LINES} header lines")
        headers = {}
        for line in body[at:blank].decode("utf-8", "replace").split("\r\n")[1:]:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        disposition, _, params = headers.get("content-disposition", "").partition(";")
        name = param(params, "name")
        if disposition.strip().lower() != "form-data" or not name:
            raise bad("every part needs Content-Disposition: form-data with a name")
        if name in parts:
            raise bad(f"two parts are named {name!r}")
        parts[name] = (body[blank + 4:end], headers.get("content-type", ""))
        at = end + len(between)
    raise bad(f"more than {MAX_PARTS} parts")
