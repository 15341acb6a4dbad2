"""Stdlib-only tests of box conventions (onepass/kinds/box_geometry.py), called directly: the
largest coordinate a generation may write, a convention's check (the scale's type and least
value, pixel units without one, the resize's keys and numbers) and what it keeps, the size the
model saw left as sent without a resize, and a box on an image of no size. Every convention
against a known box is tested in tests/unit/kinds/test_box.py; the processor's resize in
tests/unit/steps/test_generate.py.
Run: python3 -S -m unittest tests.unit.kinds.test_box_geometry
"""
import unittest

from onepass.kinds.box_geometry import Convention, convention, resized, to_fractions

RESIZE = {"max_pixels": 1003520, "factor": 28, "min_pixels": 3136}


class TestConvention(unittest.TestCase):
    def test_the_largest_coordinate(self):
        """most: the grid's scale; in pixels the image's longer side."""
        self.assertEqual(Convention("grid", "xyxy", 1000).most((4000, 3000)), 1000)
        self.assertEqual(Convention("original_pixels", "yxyx").most((640, 960)), 960)

    def test_what_a_checked_convention_keeps(self):
        """convention: units, order and scale as given (pixel units with an explicit scale 0),
        the resize as (factor, min_pixels, max_pixels) whatever the keys' order."""
        self.assertEqual(convention({"units": "grid", "order": "yxyx", "scale": 2}),
                         Convention("grid", "yxyx", 2, ()))
        self.assertEqual(convention({"units": "original_pixels", "order": "xyxy", "scale": 0}),
                         Convention("original_pixels", "xyxy"))
        self.assertEqual(convention({"units": "resized_pixels", "order": "xyxy",
                                     "resize": RESIZE}).resize, (28, 3136, 1003520))

    def test_scales_and_resizes_refused(self):
        """convention: a grid of 1, a scale that is a bool (False is not pixels' 0) or a float,
        a resize with another key, a zero or a bool among its numbers: each a ValueError."""
        grid = {"units": "grid", "order": "xyxy"}
        pixels = {"units": "resized_pixels", "order": "xyxy"}
        for bad in ({**grid, "scale": 1}, {**grid, "scale": True}, {**grid, "scale": 1000.0},
                    {"units": "original_pixels", "order": "xyxy", "scale": False},
                    {**pixels, "resize": {**RESIZE, "patch": 14}},
                    {**pixels, "resize": {**RESIZE, "factor": 0}},
                    {**pixels, "resize": {**RESIZE, "factor": True}},
                    {**pixels, "resize": [28, 3136, 1003520]}):
            with self.assertRaises(ValueError, msg=bad):
                convention(bad)


class TestSizes(unittest.TestCase):
    def test_without_a_resize_the_size_as_sent(self):
        """resized: no resize (grid or original pixels) gives the size as sent, as a tuple."""
        for conv in (Convention("grid", "xyxy", 1000), Convention("original_pixels", "xyxy")):
            self.assertEqual(resized(conv, [641, 479]), (641, 479))

    def test_an_image_of_no_size_has_no_box(self):
        """to_fractions: original pixels of an image 0 wide (or tall) is None, not a division
        by zero; a grid needs no size."""
        conv = Convention("original_pixels", "xyxy")
        for size in ((0, 100), (100, 0)):
            self.assertIsNone(to_fractions([1, 1, 2, 2], conv, size, (10, 10)), size)
        self.assertEqual(to_fractions((0, 0, 500, 1000), Convention("grid", "xyxy", 1000),
                                      (0, 0), (0, 0)), (0.0, 0.0, 0.5, 1.0))


if __name__ == "__main__":
    unittest.main()
