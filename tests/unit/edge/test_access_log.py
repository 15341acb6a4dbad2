"""Stdlib test of when the access log line is written (onepass/edge/connections.py): before the
response is sent, so a client that has its answer finds its line, and one client's requests in
a row are logged in that order. The send is slowed here: a line written after the send would be
missing when the client looks.
Run: python3 -S -m unittest tests.unit.edge.test_access_log
"""
import json
import logging
import time
import unittest
from unittest import mock

from onepass.edge.connections import Handler, access_log
from tests.support.inprocess_shim import AgainstFakeEngine, call

AUTH = {"Authorization": "Bearer unit-test-key"}


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.ids = []

    def emit(self, record):
        self.ids.append(json.loads(record.getMessage())["request_id"])


class TestAccessLogOrder(AgainstFakeEngine):
    def test_the_line_is_written_before_the_answer_leaves(self):
        lines, send = Lines(), Handler.send

        def slow_send(handler, *args):
            send(handler, *args)
            time.sleep(0.3)  # a line logged after sending would come this much after the answer

        level = access_log.level
        access_log.addHandler(lines)
        access_log.setLevel(logging.INFO)  # as shim.py sets it
        try:
            with mock.patch.object(Handler, "send", slow_send):
                got = []
                for path in ("/v1/models", "/nowhere", "/v1/models"):
                    status, headers, _ = call(self.server, "GET", path, headers=AUTH)
                    got.append(headers["x-typesafe-request-id"])
                    self.assertEqual(lines.ids, got, path)  # there as soon as the answer is
        finally:
            access_log.removeHandler(lines)
            access_log.setLevel(level)


if __name__ == "__main__":
    unittest.main()
