"""A request body (edge/framing.py read it off the socket) decoded and parsed as JSON: the first
thing the parse step (pipeline.Pipeline.decide) does with it, before the adapter reads any field.

Owns: Content-Encoding (gzip, deflate, zstd; whole streams only) with a cap on the decoded size,
Content-Type checks, multipart/form-data (multipart.py), the JSON's shape counted from its bytes
before it is parsed (scan: its values, the commas and opening brackets outside strings, plus
one; its nesting; its widest characters; a string no field can take), what parsing a shape may
hold (the body budget's hold resized before json.loads runs) and strict JSON parsing (no NaN, no
number beyond a float, no lone surrogate). json.loads builds an object per value (an empty `{}`
costs 25 times its 3 bytes), so a body is judged by what it would build, for the price of a few
scans at C speed (bytes.count, translate, one regex), never a Python loop over its bytes.
Never: interprets the JSON (the adapters do), sets the limits (body_limits.py) or logs body
bytes.
In: the body bytes, its headers and its Limits. Out: a JSON value, or a typed error.
"""
from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from itertools import accumulate

from ..errors import InvalidRequest, PayloadTooLarge, Problem, UnsupportedMediaType
from . import limits as body_limits, multipart
from .limits import Limits

SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# Measured with tracemalloc (tests/unit/body/test_decode.py): a value costs json.loads at most ~182
# bytes beyond its characters (objects of one key nested in one another: a dict each), and no
# shape more than ~44 bytes per byte of its text (`[[[[]]]]`: a list per 2 bytes).
PER_VALUE_BYTES, PER_TEXT_BYTE = 200, 48
PARSE_BYTES = 64 << 10  # the decoder's own objects (its scanner, the key memo's table)

STRUCTURE = b'"[]{},:'  # the colon too: then two strings never touch outside a string
NOT_STRUCTURE = bytes(b for b in range(256) if b not in STRUCTURE)
NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
STEP = [0] * 256  # a bracket's step in depth
for _ch in b"[{":
    STEP[_ch] = 1
for _ch in b"]}":
    STEP[_ch] = -1
FOUR_BYTE = re.compile(rb"[\xf0-\xf4]")  # a 4-byte UTF-8 sequence: Python's str then takes 4
# bytes for every character of the text; otherwise at most 2 for non-ASCII
BASE64_RUN = re.compile(rb"[A-Za-z0-9+/]{1024,}=*")  # image data: a long run of base64


def decode(body: bytes, content_encoding: str, max_decoded_bytes: int) -> bytes:
    """Undo Content-Encoding: one layer at most (body_limits.checked_layers)."""
    for coding in body_limits.checked_layers(content_encoding):
        if coding in body_limits.DEFLATES:
            wbits = 47 if coding != "deflate" else 15  # 47: gzip or zlib header, auto-detected
            body = _bounded(zlib.decompressobj(wbits), body, max_decoded_bytes, zlib.error)
        else:
            zstd = body_limits.ZSTD
            body = _bounded(zstd.ZstdDecompressor(), body, max_decoded_bytes, zstd.ZstdError)
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


def read(raw: bytes, headers, lim: Limits, hold=None) -> tuple:
    """(JSON value, multipart files): the body decoded and parsed, before any API field. With
    a hold on the body budget (holding claim's bytes), the hold is resized to what decoding,
    counting and then parsing hold before each runs; no room in time is a 529 (Overloaded)."""
    coding = headers.get("Content-Encoding", "")
    if hold is not None:  # decoding's output, claimed now that the body is in
        hold.resize(len(raw) + body_limits.decode_claim(len(raw), coding, lim))
    data = decode(raw, coding, lim.decoded)
    held = len(raw) + (len(data) if data is not raw else 0)
    return parse(data, headers.get("Content-Type", ""), lim, hold, held)


def parse(body: bytes, content_type: str, lim: Limits = Limits(), hold=None, held: int = 0):
    """(JSON value, {part name: bytes}) from a JSON or a multipart/form-data body."""
    media, _, params = content_type.partition(";")
    if media.strip().lower() != "multipart/form-data":
        return parse_json(body, content_type, lim, hold, held), {}
    if hold is not None:  # split: its parts, each copied once
        hold.resize(held + len(body))
    request, ctype, files = multipart.split(body, params)
    held += len(body)
    return parse_json(request, ctype or "application/json", lim, hold, held), files


def _no_constants(name):
    raise ValueError(f"{name} is not valid JSON")


def parse_json(body: bytes, content_type: str, lim: Limits = Limits(), hold=None,
               held: int = 0):
    """The JSON value of a body, its shape checked first (scan) and, with a hold,
    the bytes its parse takes held (`held`: what the request holds besides) before parsing."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media and media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaType(f"Content-Type {media!r} is not supported here; "
                                   "send application/json")
    if lim.image_bytes and len(body) > lim.decoded_bytes:
        besides = len(body) - min(image_bytes(body), lim.image_bytes)
        if besides > lim.decoded_bytes:
            raise PayloadTooLarge(f"the JSON is {besides} bytes besides images; this server reads "
                                  f"at most {lim.decoded_bytes} bytes besides images per request")
    if hold is not None:
        hold.resize(held + 2 * len(body))  # what counting copies
    shape = scan(body, lim)
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


@dataclass(frozen=True)
class Shape:
    values: int  # an upper bound of the values json.loads builds (a key is part of its member)
    depth: int  # an upper bound of the nesting (exact when over the limit's count of brackets)
    width: int  # bytes per character of the decoded text: 1, 2 or 4
    escapes: bool  # a \u escape: a parsed string may be wider than the text (4 bytes a char)

    def kept_bytes(self, size: int) -> int:
        """An upper bound of what the parsed value of `size` bytes of this shape holds: the
        strings' characters (at most the text's, each at its width) and an object per value."""
        objects = min(self.values * PER_VALUE_BYTES, size * PER_TEXT_BYTE)
        return size * (4 if self.escapes else self.width) + objects

    def parse_bytes(self, size: int) -> int:
        """An upper bound of what parsing takes at its peak: the decoded text besides."""
        return size * self.width + self.kept_bytes(size) + PARSE_BYTES


def scan(data: bytes, limits) -> Shape:
    """The shape of a JSON text, refused past `limits.values` values (413), `limits.depth`
    levels (422) or a string longer than `limits.string_bytes` (413). A text that is not JSON
    gets a shape too; json.loads refuses it next."""
    longest, at = long_string(data, limits.string_bytes)
    if longest:
        raise PayloadTooLarge(f"the JSON holds {string_named(data, at)} of at least {longest} "
                              f"bytes; this server reads strings of at most "
                              f"{limits.string_bytes} bytes ({limits.longest_field}, the "
                              "longest field it takes)")
    opens = data.count(b"[") + data.count(b"{")
    commas = data.count(b",")
    depth = opens  # nesting cannot exceed the opening brackets, in strings or not
    if opens + commas + 1 > limits.values or opens > limits.depth:
        skeleton = data
        if b'"' in data:  # some may stand inside strings: count what lies outside them
            skeleton = _outside_strings(data, limits)
            opens = skeleton.count(b"[") + skeleton.count(b"{")
            commas = skeleton.count(b",")
        if opens + commas + 1 > limits.values:
            raise _too_many(limits)
        # json.loads stops at the first closing bracket without an opening one, so the walk
        # needs no more brackets than twice the opening ones: bounded by the values limit
        brackets = skeleton.translate(None, NOT_BRACKETS)[:2 * opens + 1]
        depth = max(accumulate(map(STEP.__getitem__, brackets)), default=0)
        if depth > limits.depth:
            raise InvalidRequest([Problem((), f"the JSON is nested too deeply (at most "
                                          f"{limits.depth} levels)", "json_invalid")])
    width = 1 if data.isascii() else 4 if FOUR_BYTE.search(data) else 2
    return Shape(opens + commas + 1, depth, width, b"\\u" in data)


def long_string(data: bytes, limit: int) -> tuple[int, int]:
    """(at least how many UTF-8 bytes a string of the text holds when that is over `limit`,
    where its opening quote is), else (0, -1); found without parsing, so a body whose one
    string no field can take is refused before json.loads builds it (a 12 MiB string with one
    emoji: 48 MiB of characters, twice). A string longer than `limit` spans a multiple of
    `limit`: look for a quote on each side of each."""
    if limit <= 0 or len(data) <= limit:
        return 0, -1
    for point in range(limit, len(data), limit):
        start, end = data.rfind(b'"', 0, point), data.find(b'"', point)
        if start < 0 or end < 0 or end - start - 1 <= limit:
            continue
        if data[start - 1:start] == b"\\" or data[end - 1:end] == b"\\":
            continue  # an escaped quote: not where the string ends; json.loads will tell
        head = data[:start]
        if b"\\" in head:  # pairs of backslashes first, then escaped quotes: the rest delimit
            head = head.replace(b"\\\\", b"").replace(b'\\"', b"")
        if head.count(b'"') % 2:
            continue  # the run lies between two strings, not inside one
        # an escape (a backslash) stands for at least one byte in at most six: \uXXXX
        least = end - start - 1 - 5 * data.count(b"\\", start + 1, end)
        if least > limit:
            return least, start
    return 0, -1


IMAGE_KEYS = (b'"data_base64"', b'"image_url"', b'"url"')  # the keys images come in


def string_named(data: bytes, quote: int) -> str:
    """What the string opening at `quote` is, as a refusal names it: an image (a data URL, or
    the value of a key images come in), the state, or a string."""
    if data.startswith(b'"data:', quote):
        return "an image"
    key = data[max(0, quote - 64):quote].rstrip(b" \t\r\n")
    if not key.endswith(b":"):
        return "a string"
    key = key[:-1].rstrip(b" \t\r\n")
    if key.endswith(b'"state"'):
        return "a state"
    return "an image" if key.endswith(IMAGE_KEYS) else "a string"


def _outside_strings(data: bytes, limits) -> bytes:
    """The structural bytes outside strings. Escapes go first: each `\\\\` pair, then each `\\"`
    (a backslash left over escapes what follows it), so every quote left opens or closes a
    string; then all but structural bytes, so a string without any is `""`, dropped at once.
    What is left are strings holding brackets, commas or colons: each a value or a key, so
    more than twice the values limit of them is a 413 without cutting them out one by one."""
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    skeleton = data.translate(None, NOT_STRUCTURE).replace(b'""', b"")
    quotes = skeleton.count(b'"')
    if not quotes:
        return skeleton
    if quotes // 2 > 2 * limits.values:
        raise _too_many(limits)
    return b"".join(skeleton.split(b'"')[::2])


def _too_many(limits) -> PayloadTooLarge:
    return PayloadTooLarge(f"the JSON holds more than {limits.values} values (strings, numbers, "
                           "objects, arrays and members, counted before it is parsed); this "
                           f"server reads at most {limits.values} values per request")


def image_bytes(data: bytes) -> int:
    """Bytes of the text in long base64 runs: inline images (data URLs, bare base64)."""
    return sum(m.end() - m.start() for m in BASE64_RUN.finditer(data))
