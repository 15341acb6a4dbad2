"""Building blocks for the parity corpus: constant states, images, encodings and the Case type.

Everything here is a pure function of constants (no clock, no randomness): the same corpus, byte
for byte, on every run and every machine, so two recordings differ only where the server does.
"""
from __future__ import annotations

import base64
import gzip
import json
import struct
import zlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout's onepass/
from onepass.backend.warmup import png as _png  # noqa: E402  (the one stdlib PNG writer)

S1, DEC = "/v1/systemone", "/v1/decisions"
MODEL = "jev-latest"
JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class Case:
    name: str
    route: str
    body: bytes
    covers: str  # one line: what this request exercises
    headers: dict = field(default_factory=lambda: dict(JSON))


def case(name: str, route: str, body, covers: str, headers: dict | None = None) -> Case:
    """A Case; a dict or list body is sent as json.dumps writes it (key order as written)."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Case(name, route, raw, covers, dict(JSON) if headers is None else headers)


def s1(state, questions, **extra) -> dict:
    return {"model": MODEL, "state": state, "questions": questions, **extra}


def dec(input_, questions, **extra) -> dict:
    return {"model": MODEL, "input": input_, "questions": questions, **extra}


# -- states --------------------------------------------------------------------------------
TICKET = "I was charged twice for my subscription this month. Please refund one charge."
ORDER = ("Order 4471: the customer was charged twice for a 39.90 EUR plan and asks for one "
         "charge to be refunded. Two items were returned on 3 March; the parcel arrived late.")

WORDS = ("invoice refund parcel courier damaged delayed billing account password login error "
         "outage subscription renewal discount warehouse address customer agent ticket mug "
         "screen battery charger cable warranty receipt").split()


def long_text(sentences: int = 2200) -> str:
    """About 20k tokens of varied but fixed text (far over the 4,096-token context), with a
    few sentences that match the questions, so BM25 has something to find."""
    out = []
    for i in range(sentences):
        a, b, c = WORDS[i % 26], WORDS[(i * 7 + 3) % 26], WORDS[(i * 11 + 5) % 26]
        out.append(f"Note {i}: the {a} for case {1000 + i} mentions {b} and {c}.")
        if i % 500 == 250:
            out.append(f"Note {i}b: the customer writes that the mug arrived broken and "
                       "demands a full refund immediately.")
    return " ".join(out)


def long_json(rows: int = 1500) -> dict:
    """A large JSON state (orders with nested items), over the context in compact form."""
    status = ("shipped", "returned", "refunded", "pending", "lost")
    return {"customer": {"id": 77, "name": "Ada Example", "tier": "gold"},
            "orders": [{"id": 5000 + i, "status": status[i % 5], "total": round(9.5 + i % 40, 2),
                        "items": [WORDS[i % 26], WORDS[(i * 3) % 26]],
                        "note": "customer complained about a broken mug" if i % 300 == 7 else ""}
                       for i in range(rows)]}


# -- images ----------------------------------------------------------------------------------
def png(width: int, height: int, rgb, square=None) -> bytes:
    return _png(width, height, rgb, square, level=9)  # the corpus as recorded: zlib level 9



def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + b64(data)


RED = png(48, 32, (200, 40, 40))
BLUE_SQUARE = png(64, 64, (240, 240, 240), (8, 24, 24, (30, 30, 220)))
GREEN = png(32, 32, (40, 180, 60))


# -- encodings -------------------------------------------------------------------------------
def gzip_bytes(raw: bytes) -> bytes:
    return gzip.compress(raw, compresslevel=6, mtime=0)  # mtime=0: the same bytes every run


def deflate_bytes(raw: bytes) -> bytes:
    return zlib.compress(raw, 6)  # HTTP "deflate" is the zlib format


def zstd_raw_frame(raw: bytes) -> bytes:
    """A valid zstd frame of raw (stored) blocks, written by hand: no zstd module needed
    here, and the server must still decode it (RFC 8878: single segment, 4-byte size)."""
    out = [b"\x28\xb5\x2f\xfd", bytes([0xA0]), struct.pack("<I", len(raw))]
    step = 128 * 1024  # the largest block
    chunks = [raw[i:i + step] for i in range(0, len(raw), step)] or [b""]
    for n, chunk in enumerate(chunks):
        last = 1 if n == len(chunks) - 1 else 0
        out.append(struct.pack("<I", (len(chunk) << 3) | last)[:3] + chunk)  # type 0: raw
    return b"".join(out)


BOUNDARY = "onepass-parity-boundary-7f3a"


def multipart(request: dict, parts: dict[str, tuple[bytes, str]]) -> tuple[bytes, dict]:
    """(body, headers) of a multipart/form-data request as the TypeSafe SDK sends it: the
    JSON under `request`, then one part per asset."""
    crlf, out = b"\r\n", []
    head = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="request"\r\n'
    out.append(head.encode() + b"Content-Type: application/json\r\n\r\n"
               + json.dumps(request).encode() + crlf)
    for name, (data, ctype) in parts.items():
        out.append(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"; '
                   f'filename="{name}"\r\nContent-Type: {ctype}\r\n\r\n'.encode() + data + crlf)
    out.append(f"--{BOUNDARY}--\r\n".encode())
    return b"".join(out), {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
