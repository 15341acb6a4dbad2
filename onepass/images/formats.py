"""Image bytes: what a client sent, what format it really is, and how large, without decoding it.

Owns: reading data URLs and bare base64, sniffing the format from the bytes (PNG, JPEG, GIF,
WebP, BMP; the declared type is not trusted) and the pixel size from the header, and the
limits (bytes, pixels). Never: decodes pixels (vLLM's processor does), fetches links (fetch.py),
logs image bytes.
"""
from __future__ import annotations

import base64
import binascii
import re
import struct
from dataclasses import dataclass
from functools import cached_property

DATA_URL = re.compile(r"data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(?:;[^,;]*)*),(?P<data>.*)",
                      re.S)
MIME = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "bmp": "image/bmp"}


class BadImage(ValueError):
    """Not an image this server reads, or over a limit; the message names the rule."""


@dataclass(frozen=True)
class Image:
    data: bytes
    format: str  # png, jpeg, gif, webp or bmp, from the bytes
    width: int
    height: int

    @cached_property  # encoded once, however many reads show it
    def data_url_bytes(self) -> bytes:
        """How vLLM receives it: a data URL, never a link; every body shows these bytes."""
        return f"data:{MIME[self.format]};base64,".encode() + base64.b64encode(self.data)

    @property
    def data_url(self) -> str:
        return self.data_url_bytes.decode("ascii")


def from_data_url(text: str, max_bytes: int, max_pixels: int) -> Image:
    match = DATA_URL.fullmatch(text.strip())
    if not match or ";base64" not in match.group("params"):
        raise BadImage("an image data URL must be data:<type>;base64,<data>")
    return from_base64(match.group("data"), max_bytes, max_pixels)


def from_base64(text: str, max_bytes: int, max_pixels: int) -> Image:
    if len(text) > (max_bytes + 2) // 3 * 4 + 4:  # refuse before decoding a huge string
        raise BadImage(f"the image is larger than {max_bytes} bytes")
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise BadImage("the image is not valid base64") from None
    return from_bytes(data, max_bytes, max_pixels)


def from_bytes(data: bytes, max_bytes: int, max_pixels: int) -> Image:
    if len(data) > max_bytes:
        raise BadImage(f"the image is larger than {max_bytes} bytes")
    fmt, width, height = sniff(data)
    if width <= 0 or height <= 0:
        raise BadImage("the image header gives no size")
    if width * height > max_pixels:
        raise BadImage(f"the image has {width}x{height} pixels, more than {max_pixels}")
    if not complete(fmt, data):
        raise BadImage(f"the {fmt.upper()} data ends before its format says it does "
                       "(a truncated or header-only image)")
    return Image(data, fmt, width, height)


def complete(fmt: str, data: bytes) -> bool:
    """The bytes reach the end the format marks (walking PNG chunks, not decoding them): a
    header-only or cut image would otherwise be forwarded to vLLM with every read."""
    if fmt == "png":
        return _png_complete(data)
    if fmt == "jpeg":  # the end-of-image marker after the frame (0xFF is stuffed in the scan)
        return data.rfind(b"\xff\xd9") > data.find(b"\xff\xda") > 0
    if fmt == "gif":
        return len(data) > 13 and data.rstrip(b"\0").endswith(b";")
    if fmt == "webp":
        return int.from_bytes(data[4:8], "little") + 8 <= len(data)
    return len(data) >= int.from_bytes(data[2:6], "little") > 26  # bmp: the file size field


def _png_complete(data: bytes) -> bool:
    """Chunk by chunk from the signature: IDAT data present and IEND reached within the bytes."""
    i, seen_data = 8, False
    while i + 12 <= len(data):
        length = int.from_bytes(data[i:i + 4], "big")
        kind = data[i + 4:i + 8]
        i += 12 + length
        if i > len(data):
            return False
        seen_data = seen_data or (kind == b"IDAT" and length > 0)
        if kind == b"IEND":
            return seen_data
    return False


def sniff(data: bytes) -> tuple[str, int, int]:
    """(format, width, height) from the header; BadImage for anything else."""
    try:
        if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
            return ("png", *struct.unpack(">II", data[16:24]))
        if data[:6] in (b"GIF87a", b"GIF89a"):
            return ("gif", *struct.unpack("<HH", data[6:10]))
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return ("webp", *_webp_size(data))
        if data[:2] == b"BM":
            width, height = struct.unpack("<ii", data[18:26])
            return "bmp", width, abs(height)
        if data[:3] == b"\xff\xd8\xff":
            return ("jpeg", *_jpeg_size(data))
    except struct.error:
        pass
    raise BadImage("the data is not a PNG, JPEG, GIF, WebP or BMP image")


def _webp_size(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return (int.from_bytes(data[24:27], "little") + 1,
                int.from_bytes(data[27:30], "little") + 1)
    raise BadImage("an unknown WebP chunk")


def _jpeg_size(data: bytes) -> tuple[int, int]:
    """Walk the segments to the first start-of-frame marker."""
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            raise BadImage("a damaged JPEG header")
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length field
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    raise BadImage("a JPEG without a frame header")
