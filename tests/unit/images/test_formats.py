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


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png(width: int, height: int) -> bytes:
    raw = b"".join(b"\0" + b"\0\0\0" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                                             0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def gif(screen, frames) -> bytes:
    """A GIF89a of `screen` (width, height) with a 2-colour table, then a frame for each
    (left, top, width, height) descriptor, each an empty LZW stream (clear, end)."""
    out = b"GIF89a" + struct.pack("<HHBBB", *screen, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff"
    for left, top, width, height in frames:
        out += b"," + struct.pack("<HHHHB", left, top, width, height, 0) + b"\x02\x01\x2c\0"
    return out + b";"


def sof(height: int, width: int, marker: int = 0xC0) -> bytes:
    """A JPEG start-of-frame segment: 8 bits, three components."""
    return (bytes([0xFF, marker]) + struct.pack(">HBHHB", 17, 8, height, width, 3)
            + bytes.fromhex("011100021101031101"))


SCAN = bytes.fromhex("ffda000c03010002110311003f00") + b"\x12" * 10 + b"\xff\xd9"


def smuggled_jpeg(prefix: bytes) -> bytes:
    """SOI, `prefix`, an 8000x8000 frame header, then an APP1 segment whose payload holds a 1x1
    frame header where a walker lands that reads `prefix` as a marker with a length field
    (4 + the next two bytes on). Pillow (vLLM's loader) opens these as 8000x8000."""
    head = b"\xff\xd8" + prefix + sof(8000, 8000)
    fake_at = 4 + int.from_bytes(head[4:6], "big")
    end = fake_at + 40
    payload = bytearray(end - len(head) - 4)
    at = fake_at - len(head) - 4
    payload[at:at + 19] = sof(1, 1)
    return head + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + bytes(payload) + SCAN


# Real encoder output (Pillow): an animated GIF whose later frames sit at (2, 1) and (3, 2) of
# its 8x6 screen, and a progressive 16x8 JPEG (one SOF2, ten scans).
ANIMATED_GIF = bytes.fromhex(
    "47494638396108000600810000000000ff000000000000000021ff0b4e45545343415045322e300301000000"
    "21f904000a0000002c00000000080006000008140001081c4830804182000c0640c8b0a1430001010021f904"
    "010a0002002c02000100040003008100000000ff00000000000000080d000108140020804101060304040021"
    "f904010a0002002c0300020004000300810000000000ff000000000000080d00010814002080410106030404"
    "003b")
PROGRESSIVE_JPEG = bytes.fromhex(
    "ffd8ffe000104a46494600010100000100010000ffdb004300100b0c0e0c0a100e0d0e1211101318281a1816"
    "16183123251d283a333d3c3933383740485c4e404457453738506d51575f626768673e4d71797064785c6567"
    "63ffdb0043011112121815182f1a1a2f63423842636363636363636363636363636363636363636363636363"
    "6363636363636363636363636363636363636363636363636363ffc200110800080010030122000211010311"
    "01ffc4001500010100000000000000000000000000000001ffc40015010101000000000000000000000000000"
    "00405ffda000c0301000210031000000180533fffc40014100100000000000000000000000000000010ffda00"
    "080101000105023fffc40014110100000000000000000000000000000000ffda0008010301013f017fffc400"
    "14110100000000000000000000000000000000ffda0008010201013f017fffc4001410010000000000000000"
    "0000000000000010ffda0008010100063f023fffc40014100100000000000000000000000000000010ffda00"
    "08010100013f213fffda000c030100020003000000100bffc400141101000000000000000000000000000000"
    "00ffda0008010301013f107fffc40014110100000000000000000000000000000000ffda0008010201013f10"
    "7fffc40014100100000000000000000000000000000010ffda0008010100013f103fffd9")


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
                + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 20, 30) + b"\0" * 10 + SCAN)
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


class TestTheSizeVLLMReads(unittest.TestCase):
    """The size judged is the size Pillow (vLLM's loader) decodes: the headers it reads after
    the first are walked too, the way it reads them (checked against Pillow 13 with the same
    bytes: each of these opened there as 8000x8000)."""

    def refused(self, data, why):
        with self.assertRaisesRegex(images.BadImage, why):
            images.from_bytes(data, 20 * MB, 4096 * 4096)

    def test_a_gif_frame_larger_than_its_screen_is_refused(self):
        """A 1x1 screen with an 8000x8000 frame: Pillow grows the image to the frame."""
        self.refused(gif((1, 1), [(0, 0, 8000, 8000)]), "8000x8000 at 0,0 .* 1x1 screen")

    def test_every_gif_frame_is_checked(self):
        for frames in ([(0, 0, 10, 10), (0, 0, 10, 10), (5, 5, 6, 5)],
                       [(0, 0, 10, 10), (60000, 0, 10, 10)], [(0, 0, 10, 10), (0, 9, 1, 2)]):
            with self.subTest(frames):
                self.refused(gif((10, 10), frames), "reaches past its 10x10 screen")

    def test_gif_frames_inside_the_screen_are_read(self):
        img = images.from_bytes(gif((10, 10), [(0, 0, 10, 10), (3, 4, 7, 6), (9, 9, 1, 1)]),
                                MB, 10_000)
        self.assertEqual((img.format, img.width, img.height), ("gif", 10, 10))
        self.assertEqual(images.from_bytes(ANIMATED_GIF, MB, 10_000).width, 8)

    def test_a_gif_cut_inside_a_frame_is_refused(self):
        """Its last byte a `;` inside the image data: the trailer is found by walking the
        blocks, not by the last byte."""
        whole = gif((4, 4), [(0, 0, 4, 4)])
        cut = whole[:-4] + b"\x02\x2c\x3b"  # a sub-block of 2 bytes, the second a ';', cut
        self.refused(cut, "ends before")
        self.refused(whole[:-1], "ends before")

    def test_a_png_with_a_second_ihdr_is_refused(self):
        """Pillow keeps the last IHDR before the image data."""
        tiny = png(1, 1)
        second = chunk(b"IHDR", struct.pack(">IIBBBBB", 8000, 8000, 8, 2, 0, 0, 0))
        self.refused(tiny[:33] + second + tiny[33:], "more than one IHDR")

    def test_a_jpeg_with_two_frame_headers_is_refused(self):
        """Pillow keeps the last start-of-frame before the first scan."""
        self.refused(b"\xff\xd8" + sof(1, 1) + sof(8000, 8000) + SCAN, "more than one frame")
        self.refused(b"\xff\xd8" + sof(1, 1) + sof(8000, 8000, 0xC2) + SCAN,
                     "more than one frame")

    def test_fill_bytes_before_a_jpeg_marker_are_skipped(self):
        """0xFF fill bytes may precede any marker (libjpeg and Pillow skip them): read as a
        marker with a length, they hid the real frame header behind a fake one."""
        self.refused(smuggled_jpeg(b"\xff"), "8000x8000 pixels")
        self.refused(b"\xff\xd8" + b"\xff" * 5 + sof(8000, 8000) + SCAN, "8000x8000 pixels")

    def test_jpeg_markers_without_a_length_cannot_hide_a_frame(self):
        """Pillow reads EOI, JPG and JPGn (0xF0-0xFD) as markers without a length; a walker
        that reads a length there lands on the fake 1x1 frame. These markers, and DHP
        (hierarchical JPEG, which libjpeg does not decode), have no place before a scan."""
        for marker in (b"\xff\xd9", b"\xff\xc8", b"\xff\xf0", b"\xff\xfd", b"\xff\xde"):
            with self.subTest(marker.hex()):
                self.refused(smuggled_jpeg(marker), "marker")

    def test_real_progressive_and_animated_files_are_read(self):
        img = images.from_bytes(PROGRESSIVE_JPEG, MB, 10_000)
        self.assertEqual((img.format, img.width, img.height), ("jpeg", 16, 8))

    def test_an_os2_bmp_header_gives_its_16_bit_size(self):
        """A 12-byte BITMAPCOREHEADER holds 16-bit width and height (Pillow reads them so)."""
        core = (b"BM" + struct.pack("<IHHI", 26 + 24, 0, 0, 26) + struct.pack("<IHHHH", 12, 2, 3,
                                                                             1, 24) + b"\0" * 24)
        self.assertEqual(images.sniff(core), ("bmp", 2, 3))
        self.assertEqual(images.from_bytes(core, MB, 100).height, 3)


class TestWalkCost(unittest.TestCase):
    """Walking a file's chunks or blocks costs a step each: a file built of tiny ones is
    refused at a bounded number of steps, not walked for seconds (20 MB of empty PNG chunks
    took 0.43 s)."""

    def test_a_png_of_many_empty_chunks_is_refused(self):
        tiny = png(1, 1)
        empty = chunk(b"tEXt", b"")
        self.assertRaisesRegex(images.BadImage, "more than .* chunks", images.from_bytes,
                               tiny[:33] + empty * (1 << 19) + tiny[33:], 20 * MB, 10_000)

    def test_a_gif_of_many_tiny_sub_blocks_is_refused(self):
        frame = gif((1, 1), [(0, 0, 1, 1)])
        many = frame[:-4] + b"\x01\x2c" * (1 << 19) + b"\0;"
        self.assertRaisesRegex(images.BadImage, "more than .* blocks", images.from_bytes,
                               many, 20 * MB, 10_000)

    def test_a_jpeg_of_many_empty_segments_is_refused(self):
        many = b"\xff\xd8" + b"\xff\xfe\x00\x02" * (1 << 19) + sof(1, 1) + SCAN
        self.assertRaisesRegex(images.BadImage, "more than .* segments", images.from_bytes,
                               many, 20 * MB, 10_000)


DQT = b"\xff\xdb\x00\x43\x00" + bytes(range(1, 65))
SOS = bytes.fromhex("ffda0008010100003f00")  # one component, coefficients 0-63
# Entropy-coded bytes: a stuffed 0xFF (FF 00) before a 0xDA byte, every restart marker, and
# fill bytes before one: none of them is a marker that ends the scan.
ENTROPY = (b"\x12\xff\x00\xda\x34" + b"".join(bytes([0xFF, 0xD0 + n, n]) for n in range(8))
           + b"\xff\xff\xd0\x56\xff\x00\x78")


def segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body


def dht(symbols: bytes) -> bytes:
    """A DC Huffman table 0 whose codes are all 8 bits long, one per symbol."""
    return segment(0xC4, b"\x00" + bytes(7) + bytes([len(symbols)]) + bytes(8) + symbols)


def scans(count: int, frame: int = 0xC2, between: bytes = b"", end: bytes = b"\xff\xd9") -> bytes:
    """SOI, tables and a 16x8 frame header, then `count` scans (SOS, its header, ENTROPY), with
    `between` before each scan but the first, then `end`."""
    return (b"\xff\xd8" + DQT + sof(8, 16, frame) + dht(b"\x00\x01")
            + between.join([SOS + ENTROPY] * count) + end)


class TestJpegScans(unittest.TestCase):
    """Pillow's decoder (libjpeg) makes a pass over the image for every scan: a progressive
    JPEG of thousands of tiny scans is a small file that costs seconds of CPU to load. The
    scans are counted to the end-of-image marker, and more than MAX_JPEG_SCANS are refused."""
    LIMIT = images.MAX_JPEG_SCANS

    def test_baseline_and_progressive_files_pass(self):
        for data, count in ((scans(1, frame=0xC0), 1), (scans(10), 10), (PROGRESSIVE_JPEG, 10),
                            (b"\xff\xd8" + sof(1, 1) + SCAN, 1)):
            with self.subTest(count=count, size=len(data)):
                self.assertEqual(images.jpeg_scans(data), count)
                self.assertEqual(images.from_bytes(data, MB, 10_000).format, "jpeg")

    def test_more_than_the_limit_is_refused(self):
        self.assertGreaterEqual(self.LIMIT, 18)  # libjpeg's progressive script for CMYK
        self.assertEqual(images.jpeg_scans(scans(self.LIMIT)), self.LIMIT)
        self.assertEqual(images.from_bytes(scans(self.LIMIT), MB, 10_000).width, 16)
        with self.assertRaisesRegex(images.BadImage, f"^a JPEG of more than {self.LIMIT} scans$"):
            images.from_bytes(scans(self.LIMIT + 1), MB, 10_000)
        self.assertRaisesRegex(images.BadImage, "more than .* scans", images.from_bytes,
                               scans(5000, frame=0xC0), MB, 10_000)

    def test_stuffed_bytes_and_restart_markers_are_not_scans(self):
        """Nor steps of the walk: a scan of 320,000 restart markers (more than MAX_STEPS)."""
        data = scans(2)[:-2] + ENTROPY * 40_000 + b"\xff\xd9"  # the last scan's data, long
        self.assertEqual(images.jpeg_scans(data), 2)
        self.assertEqual(images.jpeg_scans(scans(self.LIMIT)), self.LIMIT)  # each has 8 RSTs

    def test_fill_bytes_before_a_scan_marker_are_passed(self):
        self.assertEqual(images.jpeg_scans(scans(3, between=b"\xff\xff\xff")), 3)
        with self.assertRaisesRegex(images.BadImage, "more than .* scans"):
            images.from_bytes(scans(self.LIMIT + 1, between=b"\xff"), MB, 10_000)

    def test_a_segment_between_scans_is_passed_by_its_length(self):
        """A table's or comment's payload holding FF DA is not a scan (libjpeg reads the
        length and the payload as the segment's)."""
        fake = SOS + ENTROPY
        for between in (dht(b"\xff\xda" * 8), segment(0xFE, fake * (self.LIMIT + 1)),
                        segment(0xE1, fake * 3) + segment(0xDB, DQT[4:]) + dht(b"\xda\xff")):
            with self.subTest(between[:2].hex()):
                data = scans(3, between=between)
                self.assertEqual(images.jpeg_scans(data), 3)
                self.assertEqual(images.from_bytes(data, MB, 10_000).height, 8)

    def test_a_file_cut_after_its_scans_is_counted_as_far_as_it_goes(self):
        """No end-of-image marker: the scans there are counted and the scan rule does not
        refuse it (completeness is judged apart); cut past the limit, it is refused."""
        whole, last = scans(10), len(SOS + ENTROPY) + 2
        for cut, count in ((whole[:-2], 10), (whole[:-7], 10), (whole[:-last + 5], 10),
                           (whole[:-last + 1], 9), (whole[:-last], 9)):
            with self.subTest(len(cut)):
                self.assertEqual(images.jpeg_scans(cut), count)
        self.assertEqual(images.jpeg_scans(scans(self.LIMIT, end=b"")), self.LIMIT)
        self.assertRaisesRegex(images.BadImage, "more than .* scans", images.from_bytes,
                               scans(self.LIMIT + 1, end=b"")[:-3], MB, 10_000)

    def test_nothing_after_the_end_of_image_marker_is_counted(self):
        """libjpeg stops at EOI (an MPO's second image follows it)."""
        data = scans(2) + scans(self.LIMIT + 1)[2:]
        self.assertEqual(images.jpeg_scans(data), 2)

    def test_a_jpeg_of_many_markers_after_its_scan_is_refused(self):
        many = scans(1, end=b"\xff\x01" * (1 << 19) + b"\xff\xd9")
        self.assertRaisesRegex(images.BadImage, "more than .* segments", images.jpeg_scans, many)


if __name__ == "__main__":
    unittest.main()
