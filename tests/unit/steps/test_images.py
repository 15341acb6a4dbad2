"""Stdlib-only tests of the images step (onepass/steps/images.py): a request without images
keeps an empty tuple, and an image sent to a text-only server is a 422 naming it, before any
engine call (the fetching and checking themselves: tests/unit/images/).
Run: python3 -S -m unittest tests.unit.steps.test_images
"""
import unittest
from types import SimpleNamespace

from onepass.errors import InvalidRequest
from onepass.images.inputs import Source
from onepass.steps.images import images
from tests.support.build_decision import decision
from tests.support.records import record


class TestImages(unittest.TestCase):
    def test_no_images_keep_the_decision_as_it_was(self):
        d = decision((), "ticket")
        r = images(record(d, request=SimpleNamespace(images=())))
        self.assertEqual((r.decision, r.decision.images), (d, ()))

    def test_an_image_to_a_text_only_server_is_refused(self):
        source = Source("bytes", b"\x89PNG", ("state", "image"))
        with self.assertRaises(InvalidRequest) as ctx:
            images(record(decision((), "ticket"), request=SimpleNamespace(images=(source,))))
        self.assertEqual(ctx.exception.problems[0].loc, ("state", "image"))


if __name__ == "__main__":
    unittest.main()
