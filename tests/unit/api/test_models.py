"""Stdlib-only tests of the model list and the unknown-model message (onepass/api/models.py),
called directly: `created` from the release date, and the client's name cut. Both shapes over
HTTP are tested in tests/unit/test_server.py.
Run: python3 -S -m unittest tests.unit.api.test_models
"""
import unittest
from dataclasses import replace

from onepass.api import models
from tests.support.unit_profile import PROFILE


class TestModels(unittest.TestCase):
    def test_created_is_the_release_day_in_unix_seconds(self):
        """document: 1970-01-02 is 86400; a date that is not YYYY-MM-DD gives 0."""
        doc = models.document(replace(PROFILE, release_date="1970-01-02"))
        self.assertEqual({m["created"] for m in doc["data"]}, {86400})
        for bad in ("soon", "2026-13-01", ""):
            doc = models.document(replace(PROFILE, release_date=bad))
            self.assertEqual({m["created"] for m in doc["data"]}, {0}, bad)

    def test_every_name_in_both_lists_in_order(self):
        """document: the concrete name, then the aliases, in System One's and OpenAI's lists."""
        doc = models.document(PROFILE)
        self.assertEqual([m["name"] for m in doc["models"]], list(PROFILE.names))
        self.assertEqual([m["id"] for m in doc["data"]], list(PROFILE.names))

    def test_an_unknown_name_is_echoed_cut_at_100(self):
        """unknown: up to 100 characters echoed as sent, a longer name cut with '...'."""
        served = ", ".join(PROFILE.names)
        self.assertEqual(models.unknown("x" * 100, PROFILE),
                         f"Unknown model: {'x' * 100}; this server serves {served} "
                         "(listed by GET /v1/models)")
        self.assertTrue(models.unknown("y" * 101, PROFILE).startswith(
            f"Unknown model: {'y' * 100}...; this server"))


if __name__ == "__main__":
    unittest.main()
