"""Response bytes and log-safe text for the HTTP edge.

Owns: the response head and body as sent (a JSON document, or a Raw body as it is, with the
request id in both request-id headers) and the escaping of client text for log lines.
Never: decides a status or a body (the service does) or writes to a socket.
"""
from __future__ import annotations

import email.utils
import http
import json
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Raw:
    """A response body sent as it is (the metrics text, the try-it page's files), with the
    headers that belong to it (the page's Content-Security-Policy)."""
    body: bytes
    content_type: str
    headers: tuple = ()  # (name, value) pairs


def response(status: int, doc, request_id: str, extra: dict, close: bool,
             head_only: bool = False) -> bytes:
    """The response bytes: a document as JSON, or a Raw body (metrics) as it is."""
    if isinstance(doc, Raw):
        payload, content_type, extra = doc.body, doc.content_type, {**dict(doc.headers), **extra}
    else:
        payload = json.dumps(doc, ensure_ascii=False, allow_nan=False).encode("utf-8")
        content_type = "application/json"
    phrase = http.HTTPStatus(status).phrase if status in http.HTTPStatus._value2member_map_ \
        else "Overloaded"
    lines = [f"HTTP/1.1 {status} {phrase}", "Server: onepass",
             f"Date: {email.utils.formatdate(usegmt=True)}", f"Content-Type: {content_type}",
             f"Content-Length: {len(payload)}", f"x-typesafe-request-id: {request_id}",
             f"x-request-id: {request_id}", *(f"{k}: {v}" for k, v in extra.items())]
    if close:
        lines.append("Connection: close")
    return "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + (b"" if head_only else payload)


def printable(text: str, limit: int = 200) -> str:
    """For log lines: control characters and non-ASCII escaped, long text cut."""
    text = text[:limit].encode("ascii", "backslashreplace").decode("ascii")
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", text)
