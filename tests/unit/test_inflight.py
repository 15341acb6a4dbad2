"""Stdlib-only tests of the request being answered (onepass/inflight.py): the ids sent to vLLM,
the client's id and traceparent kept only when safe, the tokens its calls cost, a call in flight
cut when its client leaves (real sockets here; against vLLM in tests/live/test_abandon_live.py),
nothing new started after, and nothing new past its deadline. The edge's watch on the client
is tested in tests/unit/edge/test_watch.py, the deadline header in
tests/unit/edge/test_connections.py.
Run: python3 -S -m unittest tests.unit.test_inflight
"""
import http.client
import socket
import threading
import time
import unittest

from onepass import inflight
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
        call.abandon()
        t.join(5)  # a guard: uncut, the call waits for its 30 s timeout
        self.assertFalse(t.is_alive())
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


if __name__ == "__main__":
    unittest.main()
