"""Stdlib-only tests of the request being answered (onepass/inflight.py) and the edge's watch on
its client (onepass/edge/watch.py): the ids sent to vLLM, the client's id and traceparent kept
only when safe, a call in flight cut when its client leaves (real sockets here; against vLLM in
tests/live/test_abandon_live.py), nothing new started after, and a client seen leaving.
Run: python3 -S -m unittest tests.unit.test_inflight
"""
import http.client
import socket
import threading
import time
import unittest

from onepass import inflight
from onepass.edge.watch import Watcher, left
from onepass.edge.connections import deadline_s
from onepass.errors import ClientClosed, DeadlineExceeded

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class TestIds(unittest.TestCase):
    def test_each_call_has_an_id_of_its_own_under_the_requests(self):
        call = inflight.Call("req_1")
        self.assertEqual([inflight.headers(call)["X-Request-Id"] for _ in range(3)],
                         ["req_1-1", "req_1-2", "req_1-3"])
        self.assertEqual(inflight.headers(None), {})

    def test_the_clients_id_and_traceparent_when_safe(self):
        call = inflight.Call("req_1")
        self.assertEqual(call.adopt("lb-7f3a:2.b_c", PARENT), "lb-7f3a:2.b_c")
        self.assertEqual(inflight.headers(call), {"X-Request-Id": "lb-7f3a:2.b_c-1",
                                                  "traceparent": PARENT})
        for unsafe in ("", "a b", "a\r\nSet-Cookie: x", "é", "a" * 129, None):
            other = inflight.Call("req_2")
            self.assertEqual(other.adopt(unsafe, "00-xyz"), "req_2", unsafe)
            self.assertNotIn("traceparent", inflight.headers(other))

    def test_usage_counts_computed_and_generated_tokens(self):
        with inflight.request("req_1") as call:
            inflight.spent({"usage": {"prompt_tokens": 100, "completion_tokens": 5,
                                      "prompt_tokens_details": {"cached_tokens": 64}}})
            inflight.spent({"usage": {"prompt_tokens": "x"}})  # unreadable: nothing
            inflight.spent({})
        self.assertEqual(call.tokens, 41)


class TestAbandon(unittest.TestCase):
    def setUp(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                self.accepted.append(self.listener.accept()[0])  # and never answer
            except OSError:
                return

    def tearDown(self):
        self.listener.close()
        for s in self.accepted:
            s.close()

    def test_a_call_in_flight_is_cut_and_nothing_new_starts(self):
        """abandon() shuts the socket of a call blocked on its answer: its read returns at
        once, and check() refuses the next call."""
        call = inflight.Call("req_1")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        self.addCleanup(conn.close)
        got = []

        def wait_for_answer():
            try:
                with call.flying(conn):
                    conn.request("POST", "/v1/completions", body=b"{}")
                    conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                got.append(e)
        t = threading.Thread(target=wait_for_answer)
        t.start()
        time.sleep(0.3)
        started = time.monotonic()
        call.abandon()
        t.join(5)
        self.assertFalse(t.is_alive())
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertTrue(got)
        token = inflight.CURRENT.set(call)
        try:
            with self.assertRaises(ClientClosed):
                inflight.check()
            with self.assertRaises(ClientClosed):
                with call.flying(http.client.HTTPConnection("127.0.0.1", self.port)):
                    pass
        finally:
            inflight.CURRENT.reset(token)


class TestDeadline(unittest.TestCase):
    def test_past_its_deadline_nothing_new_starts(self):
        """check() and flying() raise DeadlineExceeded once the deadline has passed; the
        shorter of the server's and the request's deadline applies."""
        with inflight.request("req_1", time.monotonic() + 60) as call:
            call.limit(0.05)
            self.assertIsNotNone(inflight.check())
            time.sleep(0.06)
            with self.assertRaises(DeadlineExceeded):
                inflight.check()
        call = inflight.Call("req_2", time.monotonic() + 0.01)
        call.limit(60)  # a later one does not move it
        time.sleep(0.02)
        self.assertTrue(call.expired())

    def test_the_header_is_whole_positive_milliseconds(self):
        self.assertEqual(deadline_s("2500"), 2.5)
        for bad in (None, "", "0", "-5", "2.5", "1e3", "٣", "9" * 13):
            self.assertIsNone(deadline_s(bad), bad)


class TestWatch(unittest.TestCase):
    def pair(self):
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        return a, b

    def test_a_client_that_closes_or_resets_is_seen_leaving(self):
        watcher = Watcher(poll_s=0.05)
        for how in ("close", "shut"):
            server_side, client = self.pair()
            call = inflight.Call("req_1")
            with watcher.watching(server_side, call):
                time.sleep(0.1)
                self.assertFalse(call.gone.is_set())
                client.close() if how == "close" else client.shutdown(socket.SHUT_WR)
                self.assertTrue(call.gone.wait(1.0), how)

    def test_a_call_past_its_deadline_is_stopped_while_its_client_waits(self):
        watcher = Watcher(poll_s=0.05)
        server_side, client = self.pair()
        call = inflight.Call("req_1", time.monotonic() + 0.2)
        with watcher.watching(server_side, call):
            self.assertTrue(call.gone.wait(1.0))
        self.assertIs(call.why, DeadlineExceeded)

    def test_a_pipelined_request_is_not_leaving_and_is_left_unread(self):
        watcher = Watcher(poll_s=0.05)
        server_side, client = self.pair()
        call = inflight.Call("req_1")
        with watcher.watching(server_side, call):
            client.sendall(b"GET /health HTTP/1.1\r\n\r\n")
            time.sleep(0.3)
            self.assertFalse(call.gone.is_set())
        self.assertEqual(server_side.recv(100), b"GET /health HTTP/1.1\r\n\r\n")
        self.assertFalse(left(server_side))  # nothing waiting, the client still there


if __name__ == "__main__":
    unittest.main()
