"""Stdlib tests of the HTTP connections (onepass/edge/connections.py): the deadline header read
as whole milliseconds; closing after a refusal without resetting the response (unread input
dropped, for a bounded time and number of bytes); a response that cannot be encoded answered as
a generic 500; the attention mode's header; a client that leaves early logged as routine, any
other failure as a bug; and when the access log line is written: before the response is sent,
so a client that has its answer finds its line, and one client's requests in a row are logged in
that order. The edge as a client meets it (framing, caps, drain) is tested in test_security.py.
Run: python3 -S -m unittest tests.unit.edge.test_connections
"""
import json
import logging
import threading
import time
import unittest
from unittest import mock

from onepass.edge import connections
from onepass.edge.connections import Handler, access_log, deadline_s, linger_close
from tests.support.edge_client import socket_pair
from tests.support.inprocess_shim import AgainstFakeEngine, call
from tests.support.systemone_bodies import NOUL_Q, req

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


class TestAnswers(AgainstFakeEngine):
    def decide_returns(self, doc):
        pipeline = self.server.service.pipeline
        if "decide" not in vars(pipeline):  # the instance's own, once: the class's stays
            self.addCleanup(delattr, pipeline, "decide")
        pipeline.decide = lambda adapter, raw, headers, hold=None: doc

    def test_an_unsendable_document_is_a_generic_500(self):
        """send: a document JSON cannot carry (NaN) is logged as a bug and answered 500."""
        self.decide_returns({"answers": {}, "x": float("nan")})
        with self.assertLogs("onepass", logging.ERROR) as logs:
            status, _, doc = call(self.server, body=req({"q": NOUL_Q}))
        self.assertEqual((status, doc["detail"]["error_type"]), (500, "internal_error"))
        self.assertIn("unsendable response", "\n".join(logs.output))

    def test_the_attention_mode_rides_in_a_header(self):
        """answer: a document's x_attention_mode is also the x-onepass-attention-mode header."""
        self.decide_returns({"answers": {}, "x_attention_mode": "bidirectional"})
        status, headers, _ = call(self.server, body=req({"q": NOUL_Q}))
        self.assertEqual((status, headers["x-onepass-attention-mode"]), (200, "bidirectional"))
        self.decide_returns({"answers": {}})
        self.assertNotIn("x-onepass-attention-mode", call(self.server, body=req({"q": NOUL_Q}))[1])


class TestClosing(unittest.TestCase):
    def test_the_response_arrives_whole_then_the_end(self):
        """linger_close: after a refusal with input unread, the client reads the response and
        then end-of-file (not a reset); the socket is closed once the client closes its side."""
        server_side, client = socket_pair(self)
        client.sendall(b"x" * 10_000)  # a refused body, never read
        server_side.sendall(b"HTTP/1.1 413 ...")
        closing = threading.Thread(target=linger_close, args=(server_side, True))
        closing.start()
        client.settimeout(2)
        self.assertEqual(client.recv(100), b"HTTP/1.1 413 ...")
        self.assertEqual(client.recv(100), b"")  # the server stopped sending
        client.close()
        closing.join(1.0)
        self.assertFalse(closing.is_alive())
        self.assertEqual(server_side.fileno(), -1)

    def test_lingering_is_bounded_by_the_bytes_dropped(self):
        """linger_close: a client that keeps sending is cut after LINGER_BYTES, long before
        LINGER_S; without lingering the close is at once."""
        for linger, sent in ((True, 4096), (False, 0)):
            server_side, client = socket_pair(self)
            client.sendall(b"y" * sent)
            started = time.monotonic()
            with mock.patch.object(connections, "LINGER_BYTES", 1024):
                linger_close(server_side, linger)
            self.assertLess(time.monotonic() - started, connections.LINGER_S / 2, linger)
            self.assertEqual(server_side.fileno(), -1)

    def test_a_client_gone_is_routine_and_anything_else_a_bug(self):
        """Server.handle_error: a reset or a stall is an info line naming the address; any
        other exception is logged as a bug."""
        for error, level, words in ((ConnectionResetError(), "INFO", "ended early"),
                                    (KeyError("x"), "ERROR", "unexpected error serving")):
            with self.assertLogs("onepass", logging.INFO) as logs:
                try:
                    raise error
                except Exception:
                    connections.Server.handle_error(None, None, ("10.1.2.3", 5000))
            [record] = logs.records
            self.assertEqual(record.levelname, level)
            self.assertIn(words, record.getMessage())
            self.assertIn("10.1.2.3", record.getMessage())


class TestDeadlineHeader(unittest.TestCase):
    def test_the_header_is_whole_positive_milliseconds(self):
        self.assertEqual(deadline_s("2500"), 2.5)
        for bad in (None, "", "0", "-5", "2.5", "1e3", "٣", "9" * 13):
            self.assertIsNone(deadline_s(bad), bad)


if __name__ == "__main__":
    unittest.main()
