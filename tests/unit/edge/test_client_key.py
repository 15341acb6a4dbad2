"""Stdlib tests of the client a connection and its requests are counted under
(onepass/edge/client_key.py), behind a trusted proxy (--trusted-proxies 127.0.0.1), on real
sockets against an in-process shim before a stand-in engine: a PROXY header (v1, v2) from the proxy
names the client the access log, the connection cap and the in-flight share key on; one from
any other address is a 400 naming the setting, a malformed one too; X-Forwarded-For is read
behind the proxy only (a forged one from another address changes nothing); the proxy's own
connections are not capped as one address's, and between requests a forwarded client's
connection counts as the proxy's again. Parsing and the trust rule alone:
test_proxy_protocol.py, test_real_client.py.
Run: python3 -S -m unittest tests.unit.edge.test_client_key
"""
import json
import logging
import socket
import threading
import time
import unittest

from onepass.edge.connections import access_log
from tests.support.edge_client import exchange, read_response, request
from tests.support.inprocess_shim import AgainstFakeEngine
from tests.support.systemone_bodies import NOUL_Q, req
from tests.unit.edge.test_proxy_protocol import v2

PROXY, OTHER = "127.0.0.1", "127.0.0.2"  # the trusted proxy, and an address that is not
CLIENT_A, CLIENT_B = "203.0.113.7", "203.0.113.8"


def v1(client: str) -> bytes:
    return f"PROXY TCP4 {client} 127.0.0.1 40000 8741\r\n".encode()


def get(headers=None) -> bytes:
    return request("GET", "/v1/models", b"", {"Connection": "close", **(headers or {})})


def decision(headers=None) -> bytes:
    return request("POST", "/v1/systemone", json.dumps(req({"q": NOUL_Q})).encode(),
                   {"Content-Type": "application/json", "Connection": "close", **(headers or {})})


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.docs = []

    def emit(self, record):
        self.docs.append(json.loads(record.getMessage()))


def wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("not reached in time")
        time.sleep(0.01)


class TestBehindAProxy(AgainstFakeEngine):
    settings = {"ONEPASS_TRUSTED_PROXIES": PROXY, "ONEPASS_MAX_CONNECTIONS_PER_SOURCE": "3",
                "ONEPASS_MAX_IN_FLIGHT": "8"}

    def setUp(self):
        self.addr = self.server.server_address[:2]
        self.lines, level = Lines(), access_log.level
        access_log.addHandler(self.lines)
        access_log.setLevel(logging.INFO)
        self.addCleanup(access_log.setLevel, level)
        self.addCleanup(access_log.removeHandler, self.lines)

    def one(self, data: bytes, source: str = PROXY, logged: bool = True) -> tuple:
        """(status, body, its access line) of one request on its own connection (the line
        taken only when `logged`: no other request's line is written meanwhile)."""
        [(status, _, body)], rest = exchange(self.addr, data, source=source)
        self.assertEqual(rest, b"")
        if logged:
            wait_for(lambda: self.lines.docs)
        return status, json.loads(body), self.lines.docs.pop() if logged else None

    def test_a_proxy_header_names_the_client(self):
        for header, client in ((v1(CLIENT_A), CLIENT_A), (v2("2001:db8::7"), "2001:db8::7"),
                               (v2(CLIENT_A, command=0), PROXY),  # LOCAL: the proxy itself
                               (b"PROXY UNKNOWN\r\n", PROXY)):
            status, _, line = self.one(header + get())
            self.assertEqual((status, line["client"], line.get("peer")),
                             (200, client, PROXY if client != PROXY else None), header)

    def test_a_proxy_header_from_another_address_is_refused(self):
        for header in (v1(CLIENT_A), v2(CLIENT_A)):
            status, doc, line = self.one(header + get(), source=OTHER)
            self.assertEqual((status, line["client"]), (400, OTHER))
            self.assertIn("not a trusted proxy", doc["detail"]["message"])
            self.assertIn("--trusted-proxies", doc["detail"]["message"])

    def test_a_malformed_proxy_header_is_refused(self):
        status, doc, _ = self.one(b"PROXY TCP4 203.0.113.7 nowhere 1 2\r\n" + get())
        self.assertEqual(status, 400)
        self.assertIn("malformed PROXY protocol header", doc["detail"]["message"])

    def test_forwarded_for_only_behind_the_proxy(self):
        forged = {"X-Forwarded-For": f"{CLIENT_B}, {CLIENT_A}"}
        self.assertEqual(self.one(get(forged), source=OTHER)[2]["client"], OTHER)
        self.assertEqual(self.one(get(forged))[2]["client"], CLIENT_A)
        # a PROXY header naming a client that is not a proxy: its X-Forwarded-For is its own
        self.assertEqual(self.one(v1(CLIENT_B) + get(forged))[2]["client"], CLIENT_B)

    def test_the_connection_cap_keys_on_the_named_client(self):
        """Three connections open for CLIENT_A (its cap): its fourth gets 503 naming its address;
        CLIENT_B and the proxy's own connections are not held back by them."""
        table, held = self.server.table, []
        self.addCleanup(lambda: [s.close() for s in held])
        for _ in range(3):
            held.append(socket.create_connection(self.addr, 5))
            held[-1].sendall(v1(CLIENT_A) + b"GET /v1/mo")  # a head still on its way
        wait_for(lambda: table.held[CLIENT_A] == 3)
        with self.assertLogs("onepass", logging.WARNING) as logs:
            status, doc, line = self.one(v1(CLIENT_A) + get())
        self.assertIn(f"refused a connection from {CLIENT_A}", logs.output[0])
        self.assertEqual((status, line["client"]), (503, CLIENT_A))
        self.assertIn("connections are open from your address", doc["detail"]["message"])
        for _ in range(4):  # the proxy's own, idle: past the cap of 3, still not refused
            held.append(socket.create_connection(self.addr, 5))
        wait_for(lambda: table.held[PROXY] >= 4)
        self.assertEqual(self.one(v1(CLIENT_B) + get())[0], 200)
        self.assertEqual(self.one(get())[0], 200)

    def test_a_forwarded_client_counts_only_while_its_request_runs(self):
        with socket.create_connection(self.addr, 5) as sock:
            rfile = sock.makefile("rb")
            for client in (CLIENT_A, CLIENT_B):  # one keep-alive connection, two clients
                sock.sendall(request("GET", "/v1/models", b"", {"X-Forwarded-For": client}))
                self.assertEqual(read_response(rfile)[0], 200)
                wait_for(lambda: self.server.table.held[client] == 0)
            self.assertEqual([d["client"] for d in self.lines.docs], [CLIENT_A, CLIENT_B])

    def test_the_in_flight_share_keys_on_the_forwarded_client(self):
        """max_in_flight 8: an address's share is 2. CLIENT_A holds both (its engine calls
        slow); its third request is the 529 naming its address, CLIENT_B's is answered."""
        self.fake.set_delay(1.0)
        self.addCleanup(self.fake.set_delay, 0.0)
        slots, results = self.server.service.slots, []
        as_a = decision({"X-Forwarded-For": CLIENT_A})
        threads = [threading.Thread(target=lambda: results.append(self.one(as_a, logged=False)))
                   for _ in range(2)]
        [t.start() for t in threads]
        wait_for(lambda: slots.held[CLIENT_A] == 2)
        status, doc, _ = self.one(as_a, logged=False)
        self.assertEqual(status, 529, doc)
        self.assertIn("from your address", doc["detail"]["message"])
        self.assertEqual(self.one(decision({"X-Forwarded-For": CLIENT_B}), logged=False)[0], 200)
        [t.join() for t in threads]
        self.assertEqual([r[0] for r in results], [200, 200])


if __name__ == "__main__":
    unittest.main()
