"""Image bytes: what a client sent, what format it really is, and how large, without decoding it.

Owns: reading data URLs and bare base64, sniffing the format from the bytes (PNG, JPEG, GIF,
WebP, BMP; the declared type is not trusted) and the pixel size from the header, and the
limits (bytes, pixels). The size judged is the size Pillow (vLLM's loader) decodes: every GIF
frame must lie within its screen, a PNG has one IHDR, a JPEG one frame header, read past fill
bytes, and at most MAX_JPEG_SCANS scans (each one a pass of Pillow's decoder over the image);
a walk through a file's chunks or blocks is bounded (MAX_STEPS).
Never: decodes pixels (vLLM's processor does), fetches links (fetch.py), logs image bytes.
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
# Chunks, segments or blocks walked in one image: a 20 MB GIF of 255-byte sub-blocks has
# 80,000; more is a file built to cost CPU here and in Pillow's walk of it at every read.
MAX_STEPS = 1 << 18
# Encoders write 1 scan (baseline) to 18 (libjpeg's script for CMYK); libtiff and GDAL stop at 100.
MAX_JPEG_SCANS = 100
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
    """The bytes reach the end the format marks (walking PNG chunks and GIF blocks, not
    decoding them): a header-only or cut image would otherwise be forwarded to vLLM with every
    read. BadImage for a second PNG IHDR, a GIF frame past its screen or a JPEG of more than
    MAX_JPEG_SCANS scans, found on the way."""
    if fmt == "png":
        return _png_complete(data)
    if fmt == "jpeg":  # the end-of-image marker after the frame (0xFF is stuffed in the scan)
        jpeg_scans(data)
        return data.rfind(b"\xff\xd9") > data.find(b"\xff\xda") > 0
    if fmt == "gif":
        return _gif_complete(data)
    if fmt == "webp":
        return int.from_bytes(data[4:8], "little") + 8 <= len(data)
    return len(data) >= int.from_bytes(data[2:6], "little") > 26  # bmp: the file size field


def _png_complete(data: bytes) -> bool:
    """Chunk by chunk from the signature: IDAT data present and IEND reached within the bytes,
    and no IHDR but the first (Pillow takes its size from the last one before the data)."""
    i, seen_data = 8, False
    for _ in range(MAX_STEPS):
        if i + 12 > len(data):
            return False
        length = int.from_bytes(data[i:i + 4], "big")
        kind = data[i + 4:i + 8]
        if kind == b"IHDR" and i > 8:
            raise BadImage("a PNG with more than one IHDR header")
        i += 12 + length
        if i > len(data):
            return False
        seen_data = seen_data or (kind == b"IDAT" and length > 0)
        if kind == b"IEND":
            return seen_data
    raise BadImage(f"a PNG of more than {MAX_STEPS} chunks")


def _gif_complete(data: bytes) -> bool:
    """Block by block from the screen descriptor to the trailer, within the bytes: every frame
    must lie within the logical screen, whose size was judged (Pillow grows the image to a
    frame reaching past it)."""
    if len(data) < 13:
        return False
    width, height, flags = struct.unpack("<HHB", data[6:11])
    i, frames, in_blocks = 13 + _colour_table(flags), 0, False
    for _ in range(MAX_STEPS):
        if i >= len(data):
            return False
        if in_blocks:  # a data sub-block: its length, then its bytes; an empty one ends them
            in_blocks = data[i] > 0
            i += data[i] + 1
        elif data[i] == 0x2C:  # a frame: descriptor, its colour table, the LZW code size
            if i + 10 > len(data):
                return False
            left, top, w, h, flags = struct.unpack("<HHHHB", data[i + 1:i + 10])
            if left + w > width or top + h > height:
                raise BadImage(f"a GIF frame of {w}x{h} at {left},{top} reaches past its "
                               f"{width}x{height} screen")
            frames += 1
            i, in_blocks = i + 11 + _colour_table(flags), True
        elif data[i] == 0x21:  # an extension: its label, then its sub-blocks
            i, in_blocks = i + 2, True
        elif data[i] == 0x3B:  # the trailer
            if not frames:
                raise BadImage("a GIF without a frame")
            return True
        else:
            raise BadImage("a damaged GIF: an unknown block")
    raise BadImage(f"a GIF of more than {MAX_STEPS} blocks")


def _colour_table(flags: int) -> int:
    return 3 << ((flags & 7) + 1) if flags & 0x80 else 0


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
            if int.from_bytes(data[14:18], "little") == 12:  # OS/2's core header: 16 bits
                return ("bmp", *struct.unpack("<HH", data[18:22]))
            width, height = struct.unpack("<ii", data[18:26])
            return "bmp", width, abs(height)
        if data[:3] == b"\xff\xd8\xff":
            return ("jpeg", *_jpeg_header(data)[:2])
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


# JPEG markers before the first scan: start-of-frame (the size), and the rest that carry a
# length (tables, restart interval, APPn, comments). Any other (EOI, JPG, JPGn, DHP, TEM) is
# one Pillow reads without a length or as a frame: refused, so no fake header can hide behind.
JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
JPEG_SEGMENTS = JPEG_FRAMES | {0xC4, 0xCC, 0xDB, 0xDC, 0xDD, 0xDF, 0xFE, *range(0xE0, 0xF0)}


def _jpeg_header(data: bytes) -> tuple[int, int, int]:
    """Walk the segments to the first scan as libjpeg and Pillow do (0xFF fill bytes before a
    marker skipped): exactly one start-of-frame gives the size (Pillow keeps the last).
    (width, height, where the first scan's marker starts, or the walk's end without one)."""
    i, size = 2, None
    for _ in range(MAX_STEPS):
        if i + 1 >= len(data) or data[i:i + 2] == b"\xff\xda":  # the end, or the first scan
            if size is None:
                raise BadImage("a JPEG without a frame header")
            return (*size, i)
        marker = data[i + 1]
        if data[i] != 0xFF:
            raise BadImage("a damaged JPEG header")
        if marker == 0xFF:  # a fill byte
            i += 1
        elif 0xD0 <= marker <= 0xD7:  # restart markers: no length
            i += 2
        elif marker in JPEG_SEGMENTS:
            if marker in JPEG_FRAMES:
                if size is not None:
                    raise BadImage("a JPEG with more than one frame header")
                height, width = struct.unpack(">HH", data[i + 5:i + 9])
                size = width, height
            i += 2 + struct.unpack(">H", data[i + 2:i + 4])[0]
        else:
            raise BadImage(f"a JPEG marker this server does not read (0x{marker:02X}) before "
                           "the image data")
    raise BadImage(f"a JPEG of more than {MAX_STEPS} segments before the image data")


# A marker in entropy-coded data: 0xFF then a code, not a stuffed 0x00, a restart marker
# (0xD0-0xD7) or a fill byte (one more 0xFF, whose own match comes next).
JPEG_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")


def jpeg_scans(data: bytes) -> int:
    """The scans from the first start-of-scan marker to the end-of-image marker (libjpeg reads
    nothing after it), marker by marker: a segment with a length (a scan's header, tables,
    APPn, comments) is passed by its length, any other marker by its two bytes, and the data
    after each is searched for the next marker. BadImage past MAX_JPEG_SCANS; bytes that end
    first (a truncated file) end the count, not the image."""
    i, scans = _jpeg_header(data)[2], 0
    for _ in range(MAX_STEPS):
        if i + 1 >= len(data) or data[i + 1] == 0xD9:
            return scans
        marker, i = data[i + 1], i + 2
        if marker == 0xDA:
            scans += 1
            if scans > MAX_JPEG_SCANS:
                raise BadImage(f"a JPEG of more than {MAX_JPEG_SCANS} scans")
        if marker == 0xDA or marker in JPEG_SEGMENTS:
            i += int.from_bytes(data[i:i + 2], "big")
        found = JPEG_MARKER.search(data, i)
        if found is None:
            return scans
        i = found.start()
    raise BadImage(f"a JPEG of more than {MAX_STEPS} segments")
