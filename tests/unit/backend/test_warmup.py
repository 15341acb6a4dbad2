"""Stdlib-only tests of the warm-up bodies (onepass/backend/warmup.py): every registered kind
answered by label reads appears in them and every body is a valid request on its route (parsed
by the adapter as a client's would be), the optional paths add their bodies, and png() writes a
valid PNG. Running them is the server's (tests/unit/test_server.py).
Run: python3 -S -m unittest tests.unit.backend.test_warmup
"""
import struct
import unittest
import zlib

from onepass import kinds
from onepass.api import Limits, decisions, systemone
from onepass.backend import warmup
from onepass.images import formats

ADAPTERS = {"/v1/systemone": systemone, "/v1/decisions": decisions}
LIMITS = Limits(max_options=255, max_questions=400)


def parsed(route, body):
    return ADAPTERS[route].parse(body, None, LIMITS)


class TestBodies(unittest.TestCase):
    def test_every_reading_kind_is_warmed_on_both_apis(self):
        """reading_bodies: each reading kind alone, all in one body, and on /v1/decisions."""
        bodies = warmup.reading_bodies()
        routes = [route for route, _ in bodies]
        n = len(kinds.reading())
        self.assertEqual(routes, ["/v1/systemone"] * (n + 1) + ["/v1/decisions"])
        asked = [[q.kind for q in parsed(route, body).questions] for route, body in bodies]
        self.assertEqual(asked[:n], [[k.name] for k in kinds.reading()])
        self.assertEqual(sorted(asked[n]), sorted(k.name for k in kinds.reading()))
        self.assertEqual(sorted(asked[n + 1]), sorted(k.name for k in kinds.reading()
                                                      if k.decisions))

    def test_the_optional_paths_add_their_bodies(self):
        """warmup_bodies: images add 2, each served kind not read by labels (box, number) 1,
        an unserved one none; two-way adds both modes explicitly."""
        plain = warmup.warmup_bodies(False)
        self.assertEqual(plain, warmup.reading_bodies())
        self.assertEqual(warmup.warmup_bodies(False, served={"noul", "choice"}), plain)
        every = warmup.warmup_bodies(False, vision=True, served={"box", "number"})
        self.assertEqual(len(every), len(plain) + 4)
        kinds_asked = {q.kind for route, body in every[len(plain):]
                       for q in parsed(route, body).questions}
        self.assertEqual(kinds_asked, {"noul", "choice", "box", "number"})
        two_way = warmup.warmup_bodies(True)
        self.assertEqual([parsed(*b).mode for b in two_way[len(plain):]],
                         ["bidirectional", "causal"])

    def test_image_bodies_carry_one_image_each(self):
        """image_bodies: each route's body holds one PNG data URL image, asked of the first
        reading kind with an image question there (warmup_image)."""
        bodies = warmup.image_bodies()
        self.assertEqual([route for route, _ in bodies], ["/v1/systemone", "/v1/decisions"])
        for route, body in bodies:
            self.assertEqual(len(parsed(route, body).images), 1, route)
        first = [next(k.name for k in kinds.reading() if getattr(k, api).warmup_image)
                 for api in ("systemone", "decisions")]
        self.assertEqual([[q.kind for q in parsed(*b).questions] for b in bodies],
                         [[name] for name in first])


class TestPng(unittest.TestCase):
    def test_png_is_a_valid_png_of_its_size(self):
        """png: the PNG signature, an IHDR of its size (8-bit RGB) and a CRC on each chunk."""
        data = warmup.png(5, 3, (1, 2, 3))
        self.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n")
        self.assertEqual(formats.sniff(data), ("png", 5, 3))
        self.assertTrue(formats.complete("png", data))
        at, chunks = 8, []
        while at < len(data):
            size, = struct.unpack(">I", data[at:at + 4])
            kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + size]
            crc, = struct.unpack(">I", data[at + 8 + size:at + 12 + size])
            self.assertEqual(crc, zlib.crc32(kind + body), kind)
            chunks.append((kind, body))
            at += 12 + size
        self.assertEqual([k for k, _ in chunks], [b"IHDR", b"IDAT", b"IEND"])
        self.assertEqual(chunks[0][1], struct.pack(">IIBBBBB", 5, 3, 8, 2, 0, 0, 0))

    def test_png_pixels_and_square(self):
        """png: each row a filter byte then RGB; the square paints only its pixels."""
        data = warmup.png(3, 2, (9, 9, 9), square=(1, 1, 5, (7, 0, 0)))
        idat = data[33 + 8:33 + 8 + struct.unpack(">I", data[33:37])[0]]
        self.assertEqual(zlib.decompress(idat), b"\0" + bytes([9] * 9)
                         + b"\0" + bytes([9, 9, 9, 7, 0, 0, 7, 0, 0]))


if __name__ == "__main__":
    unittest.main()
