"""onepass.images.formats against PIL: the format and size it reads from each header equal what PIL says,
for every format and a few sizes (PIL writes the files; no server is involved)."""
import io
import sys
from pathlib import Path

import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from onepass.images import formats as images  # noqa: E402

FORMATS = {"png": "PNG", "jpeg": "JPEG", "gif": "GIF", "webp": "WEBP", "bmp": "BMP"}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("size", [(1, 1), (17, 5), (640, 480), (3000, 7)])
def test_header_size_equals_pil(fmt, size):
    buf = io.BytesIO()
    extra = {"lossless": True} if fmt == "webp" else {}
    Image.new("RGB", size, (200, 30, 60)).save(buf, FORMATS[fmt], **extra)
    data = buf.getvalue()
    assert images.sniff(data) == (fmt, *size)
    with Image.open(io.BytesIO(data)) as img:
        assert img.size == size and img.format == FORMATS[fmt]


def test_lossy_and_extended_webp():
    for extra in ({"quality": 50}, {"quality": 50, "exif": b"Exif\0\0"}):
        buf = io.BytesIO()
        Image.new("RGB", (33, 21)).save(buf, "WEBP", **extra)
        assert images.sniff(buf.getvalue()) == ("webp", 33, 21)
