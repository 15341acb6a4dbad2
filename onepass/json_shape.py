"""A JSON text's shape counted from its bytes before it is parsed: how many values it holds, how
deep it nests, how wide its characters. json.loads builds an object per value (an empty `{}`
costs 25 times its 3 bytes), so a body is judged by what it would build, for the price of a few
scans at C speed (bytes.count, translate, one regex), never a Python loop over its bytes.

Owns: the counts (values: the commas and opening brackets outside strings, plus one; depth:
from the brackets outside strings, walked only up to where json.loads could get), their limits'
refusals, and the bytes a parse of a given shape may take (`Shape.parse_bytes`, what the body
budget is charged).
Never: parses (body.py does, once the shape passed) or reads any value.
In: the decoded body bytes and the limits. Out: a Shape, or PayloadTooLarge / InvalidRequest.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import accumulate

from .errors import InvalidRequest, PayloadTooLarge, Problem

# 400 questions of 255 options (~110,000 values) beside a JSON state of as many values as a
# 128k-token context can read whole (a cut state has at most 20,000 parts): a decision never
# needs more. At 200 bytes a value at most, the objects of one body stay under 50 MB.
MAX_VALUES = 250_000
MAX_DEPTH = 100  # objects and arrays inside one another: the stages walk them recursively
# Measured with tracemalloc (tests/unit/test_body.py): a value costs json.loads at most ~182
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
    longest = long_string(data, limits.string_bytes)
    if longest:
        raise PayloadTooLarge(f"the JSON holds a string of at least {longest} bytes; this server "
                              f"reads strings of at most {limits.string_bytes} bytes (a state, "
                              "the longest field, is refused past that size)")
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


def long_string(data: bytes, limit: int) -> int:
    """At least how many UTF-8 bytes a string of the text holds when that is over `limit`, else
    0; found without parsing, so a body whose one string no field can take is refused before
    json.loads builds it (a 12 MiB string with one emoji: 48 MiB of characters, twice). A string
    longer than `limit` spans a multiple of `limit`: look for a quote on each side of each."""
    if limit <= 0 or len(data) <= limit:
        return 0
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
            return least
    return 0


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
