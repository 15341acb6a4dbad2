"""Stdlib-only tests of reading image inputs (onepass/images/formats.py): data URLs, bare base64, the
format sniffed from the bytes, sizes from the headers, and the limits. PIL-made files of every
format are checked in tests/live/test_images_reference.py.
Run: python3 -m unittest tests.unit.images.test_formats
"""
import base64
import struct
import unittest
import zlib

from onepass.images import formats as images

MB = 1 << 20


def png(width: int, height: int) -> bytes:
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(
            ">I", zlib.crc32(kind + body))
    raw = b"".join(b"\0" + b"\0\0\0" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                                             0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


class TestImages(unittest.TestCase):
    def test_png_data_url_and_bare_base64(self):
        data = png(3, 2)
        url = "data:image/png;base64," + base64.b64encode(data).decode()
        for img in (images.from_data_url(url, MB, 10_000),
                    images.from_base64(base64.b64encode(data).decode(), MB, 10_000)):
            self.assertEqual((img.format, img.width, img.height, img.data), ("png", 3, 2, data))
        self.assertEqual(images.from_data_url(url, MB, 10_000).data_url, url)

    def test_format_comes_from_the_bytes_not_the_label(self):
        url = "data:image/jpeg;base64," + base64.b64encode(png(5, 4)).decode()
        self.assertEqual(images.from_data_url(url, MB, 10_000).format, "png")
        gif = b"GIF89a" + struct.pack("<HH", 7, 9) + b"\0" * 8
        self.assertEqual(images.sniff(gif), ("gif", 7, 9))
        bmp = b"BM" + b"\0" * 16 + struct.pack("<ii", 11, -13) + b"\0" * 8
        self.assertEqual(images.sniff(bmp), ("bmp", 11, 13))
        jpeg = (b"\xff\xd8\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0" + b"\0" * 9
                + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 20, 30) + b"\0" * 12)
        self.assertEqual(images.sniff(jpeg), ("jpeg", 30, 20))

    def test_refusals_name_the_rule(self):
        cases = [("data:text/plain,hello", "data:<type>;base64"),
                 ("data:image/png;base64,@@@", "not valid base64"),
                 ("data:image/png;base64," + base64.b64encode(b"hello world").decode(),
                  "not a PNG, JPEG"),
                 ("data:image/png;base64," + base64.b64encode(png(200, 200)).decode(),
                  "more than 10000")]
        for url, why in cases:
            with self.assertRaises(images.BadImage) as ctx:
                images.from_data_url(url, MB, 10_000)
            self.assertIn(why, str(ctx.exception))
        big = base64.b64encode(png(10, 10) + b"\0" * 5000).decode()
        with self.assertRaises(images.BadImage) as ctx:
            images.from_base64(big, 1000, 10_000)
        self.assertIn("larger than 1000 bytes", str(ctx.exception))
        with self.assertRaises(images.BadImage):
            images.sniff(b"\x89PNG\r\n\x1a\n")  # truncated header



class TestBombsAndTruncation(unittest.TestCase):
    """Issue 25: a 49-megapixel PNG of a few KB was accepted (and forwarded with every read),
    and so was a header-only PNG."""

    def test_a_pixel_bomb_under_the_old_limit_is_refused(self):
        from onepass.profile import Vision
        most = Vision("<image>", ("<image>",), 33).max_pixels
        self.assertLessEqual(most, 4096 * 4096)
        tiny = png(1, 1)
        bomb = tiny[:16] + struct.pack(">II", 7000, 7000) + tiny[24:]  # 7000x7000 in IHDR
        with self.assertRaisesRegex(images.BadImage, "7000x7000 pixels"):
            images.from_bytes(bomb, MB, most)

    def test_truncated_images_are_refused(self):
        whole = png(3, 2)
        header_only = whole[:33]
        cut = whole[:-20]
        for name, data in (("header only", header_only), ("cut in IDAT", cut),
                           ("jpeg header only", bytes.fromhex(
                               "ffd8ffc0001108000200030301110002110003110000"))):
            with self.subTest(name), self.assertRaisesRegex(images.BadImage, "ends before"):
                images.from_bytes(data, MB, 10_000)
        self.assertEqual(images.from_bytes(whole, MB, 10_000).width, 3)


if __name__ == "__main__":
    unittest.main()
