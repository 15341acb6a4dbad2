"""Stdlib-only tests of what a request body may hold (onepass/body_limits.py): the limits of the
settings and their profile (a vision profile's images beside the JSON), the wire limit judged
from a body's head (nothing claimed for bytes not yet sent), what each piece read claims and
what decoding claims once the body is in, and a header's codings.
Run: python3 -S -m unittest tests.unit.body.test_limits
"""
import unittest
from dataclasses import replace

from onepass.body import limits as body_limits
from onepass import config
from onepass.decision_model import MAX_STATE_BYTES
from onepass.errors import PayloadTooLarge, UnsupportedMediaType
from onepass.profile import Vision
from tests.support.unit_profile import PROFILE


def limits(**changes):
    return body_limits.Limits(**{"decoded_bytes": 1 << 20, **changes})


class TestLimits(unittest.TestCase):
    def test_the_settings_limits_and_a_vision_profiles_images(self):
        """limits: the settings' caps; a vision profile adds its images as base64 data URLs
        beside the JSON, and a string may be as long as one image."""
        settings = config.load(["--port", "0", "--max-decoded-bytes", "5000"], environ={})
        text = body_limits.limits(replace(settings, model=replace(PROFILE, vision=None)))
        self.assertEqual((text.decoded_bytes, text.image_bytes, text.decoded, text.values),
                         (5000, 0, 5000, settings.max_json_values))
        self.assertEqual(text.string_bytes, MAX_STATE_BYTES)
        vision = Vision("<image>", ("<image>",), 64, max_images=2, max_bytes=30 << 20)
        seen = body_limits.limits(replace(settings, model=replace(PROFILE, vision=vision)))
        image = 4 * (10 << 20) + len("data:image/;base64,") + 16  # 30 MiB as base64
        self.assertEqual((seen.image_bytes, seen.decoded, seen.string_bytes),
                         (2 * image, 5000 + 2 * image, image))

    def test_codings_in_the_order_applied(self):
        self.assertEqual(body_limits.codings(" GZIP , identity,zstd "),
                         ["gzip", "identity", "zstd"])
        self.assertEqual(body_limits.codings(""), [])


class TestClaim(unittest.TestCase):
    """What a body claims of the body budget: nothing from its head, its pieces as they come."""

    def test_the_head_is_judged_and_nothing_claimed_from_it(self):
        """wire_limit: the wire limit whatever the length or coding (chunked: -1); past it a
        413 before anything is claimed. reading: a piece read holds itself and an eighth (the
        buffer it grows). decode_claim, once the body is in: a gzip layer what it may decode
        to, at most 1,032x its length (DEFLATE's ratio) within the decoded cap, zstd the cap,
        twice (the output grows)."""
        lim = limits(decoded_bytes=10 << 20, wire_bytes=1 << 20)
        self.assertEqual(body_limits.wire_limit({}, 1000, lim), 1 << 20)
        self.assertEqual(body_limits.wire_limit({"Content-Encoding": "gzip"}, 1000, lim), 1 << 20)
        self.assertEqual(body_limits.wire_limit({}, -1, lim), 1 << 20)  # framing.CHUNKED
        self.assertEqual(body_limits.reading(64 << 10), 72 << 10)
        with self.assertRaises(PayloadTooLarge):
            body_limits.wire_limit({}, (1 << 20) + 1, lim)
        self.assertEqual(body_limits.decode_claim(1000, "", lim), 0)
        self.assertEqual(body_limits.decode_claim(1000, "gzip", lim), 2 * 1032 * 1000)
        self.assertEqual(body_limits.decode_claim(100000, "deflate", lim), 2 * (10 << 20))
        if body_limits.ZSTD is not None:
            self.assertEqual(body_limits.decode_claim(10, "zstd", lim), 2 * (10 << 20))

    def test_codings_it_does_not_decode_are_refused_before_any_claim(self):
        """wire_limit: an unknown coding (br), two layers (each would multiply what a few bytes
        decode to) and zstd on a Python without it are a 415 before anything is claimed."""
        lim = limits(decoded_bytes=10 << 20, wire_bytes=1 << 20)
        refused = ["br", "gzip, gzip", "gzip, deflate", "identity, br"]
        if body_limits.ZSTD is None:
            refused.append("zstd")
        for coding in refused:
            with self.assertRaises(UnsupportedMediaType, msg=coding):
                body_limits.wire_limit({"Content-Encoding": coding}, 10, lim)
        self.assertEqual(body_limits.wire_limit({"Content-Encoding": "identity, gzip"}, 10, lim),
                         1 << 20)


if __name__ == "__main__":
    unittest.main()
