"""Stdlib-only tests of logging a bug without the request in it (onepass/edge/bugs.py): the
exception's type and frames reach the log, its message (and a chained one's) never.
Run: python3 -S -m unittest tests.unit.edge.test_bugs
"""
import logging
import unittest

from onepass.edge import bugs

LOG = logging.getLogger("onepass.test_bugs")


def fail_with(secret):
    raise ValueError(f"cannot parse {secret}")


def rethrow(secret):
    """Raises KeyError(secret) chained from fail_with's ValueError of `secret` reversed."""
    try:
        fail_with(secret[::-1])
    except ValueError as inner:
        raise KeyError(secret) from inner


class TestLogBug(unittest.TestCase):
    def test_the_message_is_withheld_and_the_frames_kept(self):
        """log_bug: type, what and the raising function logged; the message, chained too, not."""
        with self.assertLogs(LOG, logging.ERROR) as logs:
            try:
                rethrow("1-TERCES"[::-1] + "-value")  # the secret is never a source line
            except KeyError:
                bugs.log_bug(LOG, "bug in %s", "handler")
        text = "\n".join(logs.output)
        self.assertIn("bug in handler (KeyError; message withheld: it may quote the request)",
                      text)
        self.assertIn("in rethrow", text)
        self.assertNotIn("SECRET", text)
        self.assertNotIn("eulav", text)  # nor the chained message

    def test_without_an_exception_it_logs_what(self):
        """log_bug: outside an except block, only `what % args`."""
        with self.assertLogs(LOG, logging.ERROR) as logs:
            bugs.log_bug(LOG, "odd state %d", 7)
        self.assertEqual(logs.records[0].getMessage(), "odd state 7")


if __name__ == "__main__":
    unittest.main()
