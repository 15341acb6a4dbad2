"""Stdlib tests of the HTTP connections (onepass/edge/connections.py): the deadline header read
as whole milliseconds; closing after a refusal without resetting the response (unread input
dropped, for a bounded time and number of bytes); a response that cannot be encoded answered as
a generic 500; the attention mode's header; a client that leaves early logged as routine, any
other failure as a bug; and when the access log line is written: before the response is sent,
so a client that has its answer finds its line, and one client's requests in a row are logged in
that order; on real sockets against an in-process shim, bodies claimed of the body budget as
they arrive (heads alone hold next to nothing; a slow upload in the lane keeps neither small
chunked bodies nor another address's large one out) and a client that leaves behind a stray
byte logged 499 with its engine call cut. The edge as a client meets it (framing, caps,
drain) is tested in test_security.py.
Run: python3 -S -m unittest tests.unit.edge.test_connections
"""
import json
import logging
import socket
import sys
import threading
import time
import unittest
from unittest import mock

from onepass.body import limits as body_limits
from onepass.edge import connections, framing
from onepass.edge.connections import Handler, access_log, deadline_s, linger_close
from tests.support.edge_client import exchange, request, socket_pair
from tests.support.fake_engine import FakeEngine
from tests.support.inprocess_shim import AgainstFakeEngine, call, start_shim, stop_shim
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
            closing = threading.Thread(target=linger_close, args=(server_side, linger))
            with mock.patch.object(connections, "LINGER_BYTES", 1024), \
                    mock.patch.object(connections, "LINGER_S", 600):
                closing.start()
                closing.join(10)  # a guard: lingering to LINGER_S would take 600 s
            self.assertFalse(closing.is_alive(), linger)
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



def reading_bodies() -> int:
    """Threads inside framing.read_body: requests admitted, their bodies awaited."""
    count = 0
    for frame in sys._current_frames().values():
        while frame is not None and frame.f_code is not framing.read_body.__code__:
            frame = frame.f_back
        count += frame is not None
    return count


def until(condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.01)


def connect(server, source: str) -> socket.socket:
    return socket.create_connection(server.server_address[:2], timeout=10,
                                    source_address=(source, 0))


def head(chunked: bool, length: int = 0) -> bytes:
    framing_field = {"Transfer-Encoding": "chunked"} if chunked else {
        "Content-Length": str(length)}
    raw = request("POST", "/v1/systemone", b"", {"Content-Type": "application/json",
                                                 "Connection": "close", **framing_field})
    return raw.replace(b"Content-Length: 0\r\n", b"") if chunked else raw


class TestBodiesClaimedAsTheyArrive(unittest.TestCase):
    def shim(self, **env):
        fake = FakeEngine(profile=env.get("ONEPASS_PROFILE", ""))
        self.addCleanup(fake.stop)
        server = start_shim(fake.url, ONEPASS_BODY_BUDGET_WAIT_S="0.5", **env)
        self.addCleanup(stop_shim, server)
        return server

    def hogs(self, server, heads) -> list:
        socks = []
        for source, data in heads:
            socks.append(connect(server, source))
            self.addCleanup(socks[-1].close)
            socks[-1].sendall(data)
        return socks

    def test_heads_alone_hold_next_to_nothing(self):
        """Issue 67's recipe at the default limits: from 4 addresses, a chunked head and a
        `Content-Length: 8388608` head each, then nothing. They held all 128 MiB (the length,
        and twice the wire limit for chunked) and another client's 2 KB body got a 529; now
        they hold at most a piece each and it is answered."""
        server = self.shim()
        self.hogs(server, [(f"127.0.0.{n}", head(chunked, 8 << 20)) for n in range(2, 6)
                           for chunked in (True, False)])
        until(lambda: reading_bodies() == 8, "8 bodies awaited")
        held = server.service.bodies.used
        status, _, doc = call(server, body=req({"q": NOUL_Q}, state="x" * 2000))
        self.assertEqual(status, 200, doc)
        self.assertLessEqual(held, 8 * body_limits.reading(framing.PIECE))

    def test_a_slow_upload_in_the_lane_keeps_other_vision_requests_in(self):
        """A vision profile, a share of 200,000 bytes: a chunked upload that sent 300,000 bytes
        and stalls is in the lane. A 2 KB chunked body (which claimed twice the vision wire
        limit, so waited for the lane) and another address's 300 KB body (the lane was one
        hold for the whole server) are both answered."""
        server = self.shim(ONEPASS_PROFILE="idefics3-tiny", ONEPASS_BODY_BUDGET_PER_SOURCE="200000",
                           ONEPASS_BODY_BUDGET_BYTES="4000000")
        budget, start = server.service.bodies, b'{"model": "jev-latest", "state": "'
        self.hogs(server, [("127.0.0.2", head(True) + b"%x\r\n" % 300_000 + start
                            + b"x" * (300_000 - len(start)) + b"\r\n")])
        until(lambda: budget.lane is not None, "the upload in the lane")
        small = json.dumps(req({"q": NOUL_Q}, state="x" * 2000)).encode()
        chunked = head(True) + b"%x\r\n%s\r\n0\r\n\r\n" % (len(small), small)
        large = json.dumps(req({"q": NOUL_Q}, state="x" * 300_000)).encode()
        for source, data in (("127.0.0.3", chunked), ("127.0.0.4", head(False, len(large))
                                                      + large)):
            [(status, _, raw)], _ = exchange(server.server_address[:2], data, 10, source)
            self.assertEqual(status, 200, (source, raw[:300]))
        self.assertEqual(len(budget.lane_holds), 1)  # the upload, still there


class TestStrayByte(unittest.TestCase):
    def test_a_client_that_leaves_behind_a_stray_byte_is_a_499(self):
        """Issue 67's recipe: a request, one more byte (`G`) once its decision runs, then a
        close. The byte hid the close from the watch and the work ran on; now the engine call
        in flight is cut and the access log says 499."""
        fake = FakeEngine(delay_s=3.0)
        self.addCleanup(fake.stop)
        server = start_shim(fake.url, timeout_s=30.0)
        self.addCleanup(stop_shim, server)
        lines, done = [], threading.Event()

        class Catch(logging.Handler):
            def emit(self, record):
                line = json.loads(record.getMessage())
                if line["request_id"] == "stray-byte":
                    lines.append(line)
                    done.set()
        catch, level = Catch(logging.INFO), access_log.level
        access_log.addHandler(catch)
        access_log.setLevel(logging.INFO)
        self.addCleanup(access_log.setLevel, level)
        self.addCleanup(access_log.removeHandler, catch)
        body = json.dumps(req({"q": NOUL_Q})).encode()
        sock = connect(server, "127.0.0.1")
        sock.sendall(request("POST", "/v1/systemone", body, {"X-Request-Id": "stray-byte"}))
        until(lambda: sum(fake.calls.values()) > 0, "an engine call")
        sock.sendall(b"G")
        time.sleep(0.3)  # the watch sees the byte alone
        sock.close()
        self.assertTrue(done.wait(60))
        self.assertEqual(lines[0]["status"], 499, lines)


if __name__ == "__main__":
    unittest.main()
