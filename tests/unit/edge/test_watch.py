"""Stdlib-only tests of the edge's watch on the clients whose decisions run
(onepass/edge/watch.py), on real sockets: a client that closes or half-closes is seen leaving
and its call abandoned, even with a byte it sent after its request still unread; a call past
its deadline is stopped while its client waits, even when bytes wait on its socket; a pipelined
request is not leaving and stays unread; and once its block ends a socket is no longer watched.
Run: python3 -S -m unittest tests.unit.edge.test_watch
"""
import socket
import struct
import time
import unittest

from onepass import inflight
from onepass.edge.watch import Watcher, left
from onepass.errors import ClientClosed, DeadlineExceeded
from tests.support.edge_client import socket_pair, tcp_pair


class TestWatch(unittest.TestCase):
    def test_a_client_that_closes_or_resets_is_seen_leaving(self):
        watcher = Watcher(poll_s=0.05)
        for how in ("close", "shut"):
            server_side, client = socket_pair(self)
            call = inflight.Call("req_1")
            with watcher.watching(server_side, call):
                time.sleep(0.1)
                self.assertFalse(call.gone.is_set())
                client.close() if how == "close" else client.shutdown(socket.SHUT_WR)
                self.assertTrue(call.gone.wait(1.0), how)

    def test_a_call_past_its_deadline_is_stopped_while_its_client_waits(self):
        watcher = Watcher(poll_s=0.05)
        server_side, client = socket_pair(self)
        call = inflight.Call("req_1", time.monotonic() + 0.2)
        with watcher.watching(server_side, call):
            self.assertTrue(call.gone.wait(1.0))
        self.assertIs(call.why, DeadlineExceeded)

    def test_a_client_that_leaves_after_a_stray_byte_is_seen_leaving(self):
        """The issue's recipe: a byte after the request (`G`, seen by the watcher on its own),
        then a close: the call is abandoned (a peek read the byte, not the end of input, and
        the socket was watched no more), and the byte is still there for the handler."""
        watcher = Watcher(poll_s=0.05)
        server_side, client = tcp_pair(self)
        call = inflight.Call("req_1")
        with watcher.watching(server_side, call):
            client.sendall(b"G")
            time.sleep(0.3)  # several polls see the byte alone
            self.assertFalse(call.gone.is_set())
            client.close()
            self.assertTrue(call.gone.wait(5.0))
        self.assertIs(call.why, ClientClosed)
        self.assertEqual(server_side.recv(10), b"G")
        for how in ("shut", "reset"):  # a half-close and a reset behind a byte alike
            server_side, client = tcp_pair(self)
            call = inflight.Call("req_2")
            with watcher.watching(server_side, call):
                client.sendall(b"G")
                time.sleep(0.3)
                if how == "shut":
                    client.shutdown(socket.SHUT_WR)
                else:  # SO_LINGER 0: close() sends RST
                    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    client.close()
                self.assertTrue(call.gone.wait(5.0), how)

    def test_a_deadline_cuts_a_call_whose_socket_has_bytes_waiting(self):
        """A pipelined request waiting on the socket (the client still there) leaves the call
        to its deadline: it is stopped there all the same."""
        watcher = Watcher(poll_s=0.05)
        server_side, client = tcp_pair(self)
        call = inflight.Call("req_1", time.monotonic() + 0.3)
        with watcher.watching(server_side, call):
            client.sendall(b"GET /health HTTP/1.1\r\n\r\n")
            self.assertTrue(call.gone.wait(5.0))
        self.assertIs(call.why, DeadlineExceeded)

    def test_a_pipelined_request_is_not_leaving_and_is_left_unread(self):
        watcher = Watcher(poll_s=0.05)
        server_side, client = socket_pair(self)
        call = inflight.Call("req_1")
        with watcher.watching(server_side, call):
            client.sendall(b"GET /health HTTP/1.1\r\n\r\n")
            time.sleep(0.3)
            self.assertFalse(call.gone.is_set())
        self.assertEqual(server_side.recv(100), b"GET /health HTTP/1.1\r\n\r\n")
        self.assertFalse(left(server_side))  # nothing waiting, the client still there

    def test_after_its_block_a_client_leaving_abandons_nothing(self):
        """watching: the block's end stops the watch, so a client that leaves once its answer
        is sent (the request over) cuts no call; the thread goes on watching the others."""
        watcher = Watcher(poll_s=0.05)
        done_side, done_client = socket_pair(self)
        done = inflight.Call("req_1")
        with watcher.watching(done_side, done):
            pass
        other_side, other_client = socket_pair(self)
        other = inflight.Call("req_2")
        with watcher.watching(other_side, other):
            done_client.close()
            time.sleep(0.2)
            self.assertFalse(done.gone.is_set())
            other_client.close()
            self.assertTrue(other.gone.wait(1.0))
        self.assertFalse(done.gone.is_set())


if __name__ == "__main__":
    unittest.main()
