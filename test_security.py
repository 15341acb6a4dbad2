"""Security and robustness of the shim's HTTP edge, standard library only (no vLLM needed):
limits, slow clients, malformed HTTP, auth and what never reaches the logs.
Run: python3 -m unittest test_security
"""
import gzip
import http.client
import json
import logging
import socket
import time
import unittest

from test_shim import NOUL_Q, call, req, start_shim, stop_shim


class TestEdge(unittest.TestCase):
    def setUp(self):
        self.server = start_shim("http://127.0.0.1:9", ONEPASS_MAX_BODY_BYTES="65536",
                                 ONEPASS_MAX_DECODED_BYTES="8192", ONEPASS_CLIENT_TIMEOUT_S="1",
                                 ONEPASS_API_KEY="k-123")
        self.addCleanup(stop_shim, self.server)
        self.auth = {"Authorization": "Bearer k-123"}

    def raw(self, data: bytes) -> bytes:
        with socket.create_connection(self.server.server_address[:2], timeout=5) as s:
            s.sendall(data)
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
            return b"".join(chunks)

    def assert_still_serving(self):
        self.assertEqual(call(self.server, "GET", "/health?live=1")[0], 200)

    def test_oversized_body_is_413_before_reading(self):
        """server: a Content-Length over the limit is refused with JSON 413 and the socket closes."""
        reply = self.raw(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n"
                         b"Authorization: Bearer k-123\r\n\r\n{")
        head, _, body = reply.partition(b"\r\n\r\n")
        self.assertIn(b" 413 ", head.split(b"\r\n")[0])
        self.assertIn(b"Connection: close", head)
        self.assertIn("65536", json.loads(body)["detail"]["message"])
        self.assert_still_serving()

    def test_compression_bomb_is_413(self):
        """transport: a gzip body that inflates past the decoded limit is 413, not memory."""
        bomb = gzip.compress(b" " * 10_000_000)
        self.assertLess(len(bomb), 65536)
        status, _, doc = call(self.server, body=bomb,
                              headers={"Content-Encoding": "gzip", **self.auth})
        self.assertEqual(status, 413)
        self.assert_still_serving()

    def test_slow_client_is_dropped(self):
        """server: a client that stalls mid-body is disconnected after the client timeout."""
        started = time.monotonic()
        with socket.create_connection(self.server.server_address[:2], timeout=10) as s:
            s.sendall(b"POST /v1/systemone HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            self.assert_still_serving()  # other clients are served meanwhile
            self.assertEqual(s.recv(1024), b"")  # closed by the server, no reply
        self.assertLess(time.monotonic() - started, 5)

    def test_malformed_http_gets_json(self):
        """server: garbage request lines and too many headers get JSON 4xx, and serving goes on."""
        reply = self.raw(b"THIS IS NOT HTTP\r\n\r\n")
        head, _, body = reply.partition(b"\r\n\r\n")
        self.assertIn(b" 400 ", head.split(b"\r\n")[0])
        self.assertIn(b"application/json", head)
        json.loads(body)
        many = b"".join(b"X-H%d: v\r\n" % i for i in range(200))
        reply = self.raw(b"GET /health HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
        self.assertIn(b" 431 ", reply.split(b"\r\n")[0])
        self.assert_still_serving()

    def test_auth_schemes(self):
        """server: only Bearer with the exact key passes; /health needs no key."""
        for value, status in (("Basic k-123", 401), ("Bearer k-1234", 401), ("Bearer k-12", 401),
                              ("bearer k-123", 503)):  # 503: past auth, the engine is down
            self.assertEqual(call(self.server, body=req({"q": NOUL_Q}),
                                  headers={"Authorization": value})[0], status, value)
        self.assertEqual(call(self.server, "GET", "/health")[0], 200)

    def test_logs_hold_no_secrets_or_bodies(self):
        """server: access logs carry method, path, status and request id; never keys or bodies."""
        with self.assertLogs("onepass", logging.INFO) as logs:
            call(self.server, body=req({"q": NOUL_Q}, state="PRIVATE-STATE-TEXT"),
                 headers=self.auth)
            call(self.server, body=b"{bad json PRIVATE", headers=self.auth)
            deadline = time.monotonic() + 5  # the access line is written after the reply
            while len(logs.records) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        text = "\n".join(logs.output)
        self.assertIn("POST /v1/systemone", text)
        for secret in ("k-123", "PRIVATE"):
            self.assertNotIn(secret, text)

    def test_methods_and_deep_json(self):
        """server: other methods on a route are 405; absurdly nested JSON is 422, not 500."""
        conn = http.client.HTTPConnection(*self.server.server_address[:2], timeout=5)
        conn.request("PUT", "/v1/systemone", body=b"{}", headers=self.auth)
        self.assertEqual(conn.getresponse().status, 405)
        conn.close()
        status, _, doc = call(self.server, body=b"[" * 30000 + b"]" * 30000, headers=self.auth)
        self.assertEqual(status, 422)
        self.assertIn("nested too deeply", doc["detail"][0]["msg"])


    def test_decisions_route_errors_in_openai_shape(self):
        """server: /v1/decisions answers every edge error in OpenAI's envelope: a missing or
        wrong key 401 invalid_api_key, a bomb 413, bad JSON 400, a wrong method 405, and its
        bodies stay out of the logs."""
        body = {"model": "jev-latest", "input": "PRIVATE-INPUT",
                "questions": [{"type": "predicate", "instructions": "Refund?"}]}
        with self.assertLogs("onepass", logging.INFO) as logs:
            for headers in ({}, {"Authorization": "Bearer nope"}):
                status, _, doc = call(self.server, path="/v1/decisions", body=body,
                                      headers=headers)
                self.assertEqual((status, doc["error"]["code"]), (401, "invalid_api_key"))
            bomb = gzip.compress(b" " * 10_000_000)
            status, _, doc = call(self.server, path="/decisions", body=bomb,
                                  headers={"Content-Encoding": "gzip", **self.auth})
            self.assertEqual(status, 413)
            self.assertEqual(set(doc["error"]), {"message", "type", "param", "code"})
            status, _, doc = call(self.server, path="/v1/decisions", body=b"{PRIVATE",
                                  headers=self.auth)
            self.assertEqual((status, doc["error"]["type"]), (400, "invalid_request_error"))
            status, _, doc = call(self.server, "GET", "/v1/decisions", headers=self.auth)
            self.assertEqual((status, set(doc)), (405, {"error"}))
        self.assertNotIn("PRIVATE", "\n".join(logs.output))
        self.assert_still_serving()


if __name__ == "__main__":
    unittest.main()
