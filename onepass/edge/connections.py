"""HTTP connections: a thread per client connection, under a cap, each request judged from its
head before its body is read, within one deadline, and the drain on SIGTERM.

Owns: the per-connection request loop, response bytes, closing without resetting an unread
response, the access log line (telemetry.finish writes it: JSON, never bodies or keys), the
counts the edge alone sees (requests, times, 529s for slow connections), and drain-then-stop;
conn_table.py holds the caps on open connections (the table's and each source address's) and
answers a newcomer past them; behind a trusted proxy each request is keyed on the client it
names (a PROXY header, then X-Forwarded-For: client_key.py).
Never: validates API fields or decides (api/ and pipeline.py do), or parses framing (framing.py).
"""
from __future__ import annotations

import errno
import io
import logging
import socket
import socketserver
import sys
import threading
import time
import uuid

from . import framing
from .bugs import log_bug
from .client_key import ClientKey
from .. import inflight, telemetry
from .conn_table import IDLE, READING, WORKING, Conn, Table, fit_descriptors
from .responses import printable, response
from .watch import Watcher
from .real_client import Trust
from ..errors import (ClientClosed, MalformedHttp, OnepassError, Overloaded, RequestTimeout,
                      ShuttingDown, SourceOverCap)

log = logging.getLogger("onepass")
access_log = logging.getLogger("onepass.access")  # shim.py writes its lines as bare JSON
CLIENT_GONE = (TimeoutError, ConnectionError)  # a client that stalled or left
# A balancer's (or client's) deadline for the whole request: Envoy's and Istio's header, which
# they set from their route timeout; HAProxy can set it with http-request set-header.
DEADLINE_HEADER = "x-envoy-expected-rq-timeout-ms"
LINGER_S, LINGER_BYTES = 2.0, 1 << 20  # after a refusal: drop what still arrives, this much
QUIET_S, QUIET_WAIT_S = 0.3, 5.0  # at exit: a connection idle this long has no request coming


def deadline_s(value) -> float | None:
    """The header's milliseconds as seconds (None when absent or not a positive integer)."""
    if not isinstance(value, str) or not value.isascii() or not value.isdigit() or \
            len(value) > 12 or int(value) == 0:
        return None
    return int(value) / 1000


def linger_close(sock, linger: bool) -> None:
    """Close after the response has left. With unread input (a refused body, requests after a
    framing error) close() alone would send RST, which can destroy the response before the
    client reads it: stop sending, drop what still arrives for a moment, then close."""
    try:
        sock.shutdown(socket.SHUT_WR)
        deadline, dropped = time.monotonic() + LINGER_S, 0
        while linger and dropped < LINGER_BYTES and time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            data = sock.recv(65536)
            if not data:
                break
            dropped += len(data)
    except OSError:
        pass  # the client left first
    finally:
        sock.close()


class Handler(socketserver.BaseRequestHandler):
    server: "Server"

    def setup(self):
        s = self.server.service.settings
        # evicted before this thread began: an untracked record; its socket reads EOF at once
        self.conn = self.server.table.open.get(self.request) or Conn(self.request)
        self.reader = framing.DeadlineReader(self.request, s.keepalive_timeout_s,
                                             s.client_timeout_s)
        self.rfile = io.BufferedReader(self.reader, 65536)
        self.closing = self.linger = False
        self.key = ClientKey(self.server, self.request, self.client_address[0])

    def handle(self):
        while not self.closing:
            self.conn.set(IDLE)
            self.key.between()
            self.reader.end()
            try:
                if not self.rfile.peek(1):
                    return  # the client (or an eviction) closed an idle connection
            except (*CLIENT_GONE, OSError):
                return  # idle past the keep-alive timeout, or reset: nothing is owed
            self.reader.begin()
            self.conn.set(READING)
            self.one_request()

    def finish(self):
        self.server.table.remove(self.request)
        linger_close(self.request, self.linger)

    def one_request(self) -> None:
        started, request_id = time.monotonic(), "req_" + uuid.uuid4().hex
        limit = self.server.service.settings.request_timeout_s
        with inflight.request(request_id, started + limit if limit else None) as self.call:
            self._one_request(started, request_id)

    def _one_request(self, started: float, request_id: str) -> None:
        method, path, service = "-", "", self.server.service
        telemetry.start_request()
        try:
            self.key.greet(self.rfile, self.reader.deadline)  # a PROXY header, first only
            head = framing.read_head(self.rfile)
            if head is None:
                self.closing = True
                return
            method, (path, _, query) = head.method, head.target.partition("?")
            self.closing = not head.keep_alive
            request_id = self.call.adopt(head.fields.get("x-request-id"),
                                         head.fields.get("traceparent"))
            self.call.limit(deadline_s(head.fields.get(DEADLINE_HEADER)))
            status, doc, extra = self.answer(head, path, query)
        except Unanswered:
            self.closing = True
            access_log.info("%s", telemetry.finish(method, path, printable(path), 0, started, {},
                                                   request_id,
                                                   **self.key.logged(self.call.source)))
            return
        # a broken or late head or body, or a PROXY header naming a client past its cap
        except (MalformedHttp, SourceOverCap, TimeoutError) as e:
            err = e if isinstance(e, OnepassError) else RequestTimeout(
                f"the request was not complete within {service.settings.client_timeout_s} s")
            self.closing = self.linger = True
            status, doc, extra = service.render_error(err, path)
        except (ConnectionError, OSError):
            self.closing = True
            if not self.conn.evicted:
                log.info("%s %s dropped: the client sent no complete request (%s)", method,
                         printable(path), request_id)
                return
            telemetry.OVERLOADED.inc("connections")
            status, doc, extra = service.render_error(Overloaded(
                f"this server has its {self.server.table.limit} connections open; this one "
                "sent its request the slowest and was closed", retry_after_ms=1000), path)
        self.closing = self.closing or service.slots.closed  # draining: clients move on
        # counted and logged before sending: a client that scrapes or reads the log right after
        # its answer finds its request there, in the order its answers came
        if status == ClientClosed.status:
            self.closing = True  # nobody reads the answer
        access_log.info("%s", telemetry.finish(method, path, printable(path), status, started,
                                               doc, request_id, self.call.tokens,
                                               **self.key.logged(self.call.source)))
        if status != ClientClosed.status:
            self.send(method, status, doc, request_id, extra)

    def answer(self, head: framing.Head, path: str, query: str) -> tuple[int, dict, dict]:
        """Judge the head; only an admitted request has its body read, then decided."""
        service, limit, unread, reading = self.server.service, 0, 0, False
        try:
            unread = framing.body_length(head)
            source = self.call.source = self.key.of_request(head.fields)
            status, adapter = service.admit(head.method, path, query, head.fields, source)
            if status is not None:
                return status, adapter, {}
            hold = service.bodies.hold(source)  # the body's bytes in the body budget
            try:
                limit, claim = service.claim_body(hold, head.fields, unread)  # 413, 415
                if unread and "100-continue" in head.fields.tokens("expect") and not head.http10:
                    self.request.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                reading = True
                # each piece claimed as it comes (529 past a wait): a head holds nothing
                raw = framing.read_body(self.rfile, unread, limit, claim)
                reading, unread = False, 0
                self.reader.end()  # answering is bounded by the engine timeouts, not this one
                self.conn.set(WORKING)
                # watched from before the door: a client that leaves while queued never starts
                with self.server.watcher.watching(self.request, self.call), \
                        service.entered(source):
                    doc = service.pipeline.decide(adapter, raw, head.fields, hold)
            finally:
                hold.release()
            mode = doc.get("x_attention_mode")
            return 200, doc, {"x-onepass-attention-mode": mode} if mode else {}
        except OnepassError as e:
            if isinstance(e, MalformedHttp):
                raise
            self.closing |= isinstance(e, SourceOverCap)  # past its client's cap: closed
            if isinstance(e, ShuttingDown) and service.settings.drain_refusal == "close":
                raise Unanswered from None  # nothing was done: the balancer retries elsewhere
            return service.render_error(e, path)
        except Exception as e:
            if reading and isinstance(e, CLIENT_GONE):
                raise  # the client stalled or left mid-body
            # a bug, never bad input: log it, answer a generic 500
            log_bug(log, "internal error on %s %s", head.method, printable(path))
            return service.render_error(OnepassError("internal error; see the server log"), path)
        finally:
            if unread:  # answered without reading the body: the connection cannot go on
                self.closing = self.linger = True

    def send(self, method: str, status: int, doc: dict, request_id: str, extra: dict) -> None:
        try:
            data = response(status, doc, request_id, extra, self.closing, method == "HEAD")
        except (ValueError, UnicodeEncodeError):  # a bug: the checks refuse such values
            log_bug(log, "unsendable response (%s)", request_id)
            status, doc, extra = self.server.service.render_error(
                OnepassError("internal error; see the server log"))
            data = response(status, doc, request_id, extra, self.closing)
        try:
            self.request.settimeout(self.server.service.settings.client_timeout_s)
            self.request.sendall(data)
        except OSError:
            self.closing = True  # the client left or stopped reading


class Unanswered(Exception):
    """A request refused while draining with drain_refusal=close: its connection is closed
    without a response, which a balancer retries on another server (no work was done)."""


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the default backlog of 5 resets bursts of parallel clients

    def __init__(self, service):
        self.service = service
        settings = service.settings
        self.table = Table(fit_descriptors(settings.max_connections, settings.engine_connections),
                           settings.max_connections_per_source)
        self.trust = Trust(settings.trusted_proxies)  # whose word names the client
        self.draining = threading.Event()
        self.watcher = Watcher()  # clients whose decisions run, watched for leaving
        super().__init__((settings.host, settings.port), Handler)

    def get_request(self):
        try:
            return super().get_request()
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE):
                time.sleep(0.05)  # out of descriptors: the listener stays readable; do not spin
            raise

    def verify_request(self, request, client_address) -> bool:
        # a trusted proxy's connections are capped per client once it names one (client_key.py)
        peer, capped = client_address[0], not self.trust.trusts(client_address[0])
        if self.table.add(request, peer, capped):
            return True
        status, doc, extra = self.service.render_error(self.table.refusal(peer, capped))
        try:  # the accepting thread must not block on a client: one non-blocking send
            request.setblocking(False)
            request.send(response(status, doc, "req_" + uuid.uuid4().hex, extra, close=True))
        except OSError:
            pass
        return False

    def server_close(self) -> None:
        """After a drain: the connections still in the listen backlog are taken and answered
        (503, shutting down) instead of reset; then the socket closes, so later ones are
        refused; then each open connection finishes its request (within the drain's bound, at
        most QUIET_WAIT_S)."""
        if self.draining.is_set():
            self.socket.setblocking(False)
            while True:
                try:
                    sock, address = self.socket.accept()
                except OSError:
                    break  # the backlog is empty
                sock.settimeout(None)
                if self.service.settings.drain_refusal == "close":
                    sock.close()  # unanswered: the balancer retries it elsewhere
                elif self.verify_request(sock, address):
                    self.process_request(sock, address)
            self.socket.close()
            left = self.drain_until - time.monotonic()  # the drain's bound holds here too
            self.table.wait_quiet(QUIET_S, min(QUIET_WAIT_S, max(QUIET_S, left)))
        super().server_close()

    def handle_error(self, request, client_address):
        """A client that resets or stalls is routine; anything else is logged with its trace."""
        if isinstance(sys.exc_info()[1], CLIENT_GONE):
            log.info("connection from %s ended early", client_address[0])
        else:
            log_bug(log, "unexpected error serving %s", client_address[0])

    def drain(self) -> None:
        """SIGTERM: /health turns 503 draining and new requests 503 (retry-after-ms); requests
        in flight finish within drain_timeout_s; then the server stops."""
        if self.draining.is_set():
            return
        timeout_s = self.service.settings.drain_timeout_s
        self.drain_until = time.monotonic() + timeout_s
        self.draining.set()
        log.info("draining: no new requests; waiting up to %.0f s for %d in flight", timeout_s,
                 self.service.slots.busy)
        left = self.service.slots.close_and_wait(timeout_s)
        if left:
            log.warning("drain timed out with %d requests in flight", left)
        self.shutdown()
