"""Stdlib-only tests of fetching image links safely (onepass/images/fetch.py): the URL and port rules,
and a local HTTP server for redirects into every blocked range (tests/unit/images/
test_addresses.py), DNS answers into them, pinning, size, type and time limits, and the one
message a client reads whatever stopped the fetch (the cause only in the log).
Run: python3 -m unittest tests.unit.images.test_fetch
"""
import ipaddress
import os
import struct
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from onepass import telemetry
from onepass.backend.warmup import png
from onepass.edge import body_budget
from onepass.errors import Overloaded
from onepass.images import fetch, inputs
from onepass.profile import Vision
from tests.support.prerequisites import missing
from tests.unit.images.test_addresses import BLOCKED

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
REAL_PNG = png(8, 8, (255, 0, 0))
NOT_FETCHED = "the image link could not be fetched"  # what a client reads, whatever the cause
class Images(BaseHTTPRequestHandler):
    def do_GET(self):
        routes = {
            "/img.png": (200, {"Content-Type": "image/png"}, PNG),
            "/real.png": (200, {"Content-Type": "image/png"}, REAL_PNG),
            "/page": (200, {"Content-Type": "text/html"}, b"<html>"),
            "/error": (500, {"Content-Type": "text/plain"}, b"oops"),
            "/big": (200, {"Content-Type": "image/png"}, PNG * 2000),
            "/to-private": (302, {"Location": "http://10.0.0.1/img.png"}, b""),
            "/to-metadata": (302, {"Location": "http://169.254.169.254/latest"}, b""),
            "/to-v6-loopback": (302, {"Location": "http://[::1]/img.png"}, b""),
            "/to-mapped": (302, {"Location": "http://[::ffff:127.0.0.2]/img.png"}, b""),
            "/to-name": (302, {"Location": f"http://inside.test:{self.server.server_port}/img.png"},
                         b""),
            "/to-https": (302, {"Location": "https://public.test/img.png"}, b""),
        }
        if self.path.startswith("/to/"):  # a redirect to the host named in the path
            host = urllib.parse.unquote(self.path[4:])
            routes[self.path] = (302, {"Location": f"http://{host}/img.png"}, b"")
        if self.path.startswith("/hop/"):
            left = int(self.path.split("/")[2])
            target = "/img.png" if left == 0 else f"/hop/{left - 1}"
            routes[self.path] = (302, {"Location": target}, b"")
        if self.path == "/slow":
            time.sleep(3)
        if self.path == "/reset":  # the connection closed with a TCP reset, nothing answered
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if self.path == "/trickle-head":  # a status line, then a header byte every 0.2 s
            try:
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                for byte in b"X-Slow: " + b"x" * 40:  # 9.6 s of it: past the 4 s deadline
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
            self.close_connection = True
            return
        if self.path == "/trickle":  # every byte in time for the step timeout, never done
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", "100")
            self.end_headers()
            try:
                for _ in range(100):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
            return
        status, headers, body = routes.get(self.path, (404, {}, b""))
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:  # a client that stopped reading at its byte cap
            pass

    def log_message(self, *args):
        pass


class TestUrlRules(unittest.TestCase):
    def test_url_rules(self):
        for url, why in (("http://example.com/a.png", "https"), ("ftp://example.com/a", "https"),
                         ("https://user:pw@example.com/a.png", "credentials"),
                         ("https:///a.png", "no host"), ("https://example.com:99999/", "valid")):
            with self.assertRaises(fetch.FetchRefused) as ctx:
                fetch.fetch(url)
            self.assertIn(why, str(ctx.exception))
            self.assertNotIn("example.com", str(ctx.exception))


class TestLocalServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), Images)
        cls.server.daemon_threads = True
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.port = cls.server.server_port

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        self.lookups = []

    def resolve(self, host, port, type=0):
        """A DNS that knows the test names; public.test is this server, 'made public' below."""
        self.lookups.append(host)
        try:  # an address literal resolves to itself, as with the system resolver
            ip = ipaddress.ip_address(host)
            family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
            return [(family, socket.SOCK_STREAM, 6, "", (host, port))]
        except ValueError:
            pass
        table = {"public.test": ["127.0.0.1"], "inside.test": ["192.168.7.7"],
                 "mixed.test": ["127.0.0.1", "10.0.0.9"], "127.0.0.1": ["127.0.0.1"],
                 **{f"blocked-{i}.test": [a] for i, a in enumerate(BLOCKED)}}
        if host not in table:
            raise socket.gaierror("unknown")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in table[host]]

    def rules(self, **kw):
        """http allowed; this server's address counts as public and its port is allowed, every
        other rule as shipped."""
        kw = {"ports": (80, 443, self.port), "timeout_s": 1.0, **kw}
        return fetch.Rules(allow_http=True, resolve=self.resolve,
                           is_allowed=lambda a: a == "127.0.0.1" or fetch.is_public(a), **kw)

    def url(self, path, host="public.test", port=None):
        return f"http://{host}:{port or self.port}{path}"

    def refused(self, url, why, **kw):
        """The client reads the one message; `why`, the cause, is in the server's log."""
        with self.assertLogs("onepass", "INFO") as logs:
            with self.assertRaises(fetch.FetchRefused) as ctx:
                fetch.fetch(url, self.rules(**kw))
        self.assertEqual(str(ctx.exception), NOT_FETCHED)
        self.assertIn(why, "\n".join(logs.output))
        return "\n".join(logs.output)

    def test_fetches_an_image_on_the_checked_address(self):
        body, kind = fetch.fetch(self.url("/img.png"), self.rules())
        self.assertEqual((body, kind), (PNG, "image/png"))
        self.assertEqual(self.lookups, ["public.test"])  # one lookup, then that address

    def test_fetched_bytes_are_claimed_as_they_arrive(self):
        """inputs.resolve with the request's hold: each link's bytes are claimed as they
        arrive (a chunk and its buffer's slack before each read), never the profile's
        max_bytes before fetching. On a 20 MB-an-image profile two links to a small image stay
        in the budget while another address's upload holds the lane (claimed up front, 51 MB a
        link went past the share, waited for that lane and got a 529); with no room for a
        chunk the request is a 529 holding nothing more; the hold keeps what the images keep."""
        vision = Vision("<image>", ("<image>",), 64, max_images=4, max_bytes=20_000_000)
        policy = inputs.Policy("m", vision, self.rules())
        links = [inputs.Source("link", self.url("/real.png"), ("images", i)) for i in range(2)]
        budget = body_budget.Budget(128 << 20, wait_s=0.05)
        upload, hold = budget.hold("10.0.0.9"), budget.hold("10.0.0.2")
        upload.take(40 << 20)  # a slow upload past its share: in the lane
        hold.take(1000)  # the body's own bytes
        found = inputs.resolve(links, policy, hold)
        self.assertEqual([i.data for i in found], [REAL_PNG, REAL_PNG])
        self.assertEqual((budget.lane, hold.in_lane), (upload, False))
        kept = 2 * (len(REAL_PNG) + fetch.base64_size(len(REAL_PNG)))
        self.assertEqual((hold.held, budget.used), (1000 + kept, 1000 + kept))
        small = body_budget.Budget(200_000, wait_s=0.05, per_source=200_000)
        other, tight = small.hold("10.0.0.1"), small.hold("10.0.0.2")
        other.take(150_000)
        tight.take(1000)
        with self.assertRaises(Overloaded):  # a chunk's claim does not fit
            inputs.resolve(links, policy, tight)
        self.assertEqual((tight.held, small.used), (1000, 151_000))
        other.release()
        self.assertEqual(len(inputs.resolve(links, policy, tight)), 2)

    def test_redirects_into_blocked_ranges_are_refused(self):
        for path in ("/to-private", "/to-metadata", "/to-v6-loopback", "/to-mapped", "/to-name"):
            self.refused(self.url(path), "not public")

    def test_every_blocked_range_is_refused_behind_a_redirect_and_a_dns_answer(self):
        """For each blocked address: a redirect to it as a literal, a redirect to a name that
        resolves to it, and a first request to that name. (127.0.0.1 stands for this test
        server, so it is judged by test_every_blocked_range_is_refused only.)"""
        for i, address in enumerate(BLOCKED):
            if address == "127.0.0.1":
                continue
            name = f"blocked-{i}.test"
            self.refused(self.url("/img.png", name), "not public")
            self.refused(self.url("/to/" + urllib.parse.quote(f"{name}:{self.port}")), "not public")
            if "%" not in address:  # a zone id cannot travel in a Location URL
                literal = f"[{address}]" if ":" in address else address
                self.refused(self.url("/to/" + urllib.parse.quote(literal)), "not public")

    def test_dns_answers_into_blocked_ranges_are_refused(self):
        self.refused(self.url("/img.png", "inside.test"), "not public")
        self.refused(self.url("/img.png", "mixed.test"), "not public")  # one bad answer is enough
        self.refused(self.url("/img.png", "nowhere.test"), "does not resolve")

    def test_only_ports_80_and_443_by_default_refused_before_any_lookup(self):
        """The link's own port is judged from its text: told to the client, before any DNS
        lookup or connection."""
        for url in ("https://public.test:22/img.png", "http://public.test:8080/img.png",
                    "https://public.test:8443/", "http://[2606:4700::1]:25/"):
            with self.subTest(url), self.assertRaises(fetch.FetchRefused) as ctx:
                fetch.fetch(url, fetch.Rules(allow_http=True, resolve=self.resolve))
            self.assertEqual(str(ctx.exception), "image links may use only ports 80, 443")
        self.assertEqual(self.lookups, [])
        for url in ("https://public.test/img.png", "https://public.test:443/img.png",
                    "http://public.test:80/img.png"):  # past the port rule: 127.0.0.1 is not public
            with self.subTest(url), self.assertRaises(fetch.FetchRefused) as ctx:
                fetch.fetch(url, fetch.Rules(allow_http=True, resolve=self.resolve))
            self.assertEqual(str(ctx.exception), NOT_FETCHED)
        self.assertEqual(self.lookups, ["public.test"] * 3)

    def test_a_redirect_to_another_port_is_refused_before_connecting(self):
        """A redirect to a port not allowed (a listener here, on an allowed address): refused
        with the one message, and nothing connects to it."""
        listener = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(listener.close)
        other = listener.getsockname()[1]
        self.refused(self.url("/to/" + urllib.parse.quote(f"127.0.0.1:{other}")), "port")
        listener.setblocking(False)
        with self.assertRaises(BlockingIOError):
            listener.accept()  # no connection is waiting

    def test_at_most_three_redirects(self):
        body, _ = fetch.fetch(self.url("/hop/2"), self.rules())  # 3 redirects
        self.assertEqual(body, PNG)
        self.refused(self.url("/hop/3"), "more than 3 redirects")

    def test_type_size_time_and_scheme_limits(self):
        self.refused(self.url("/page"), "not image/*")
        self.refused(self.url("/big"), "larger than", max_bytes=10_000)
        self.refused(self.url("/slow"), "failed")  # waited for, it would be answered
        self.refused(self.url("/missing"), "HTTP 404")
        # 0.2 s a byte passes each 1 s step, not the 4 s deadline; without it, answered
        self.refused(self.url("/trickle"), "too long")

    def test_the_whole_fetch_deadline_covers_the_head(self):
        """A status line, then one header byte every 0.2 s (each in time for the 1 s step):
        refused at the 4 s whole-fetch deadline, not when the trickle stops (9.6 s)."""
        self.refused(self.url("/trickle-head"), "too long")
        with self.assertRaises(fetch.FetchRefused):  # http is off unless switched on
            fetch.fetch(self.url("/img.png"), fetch.Rules(resolve=self.resolve))

    def test_one_message_whatever_the_cause(self):
        """Refused, timed out or reset; HTTP 404 or 500; not an image; too large; a host or a
        redirect into a private address; an unknown host; a redirect to another port or with
        credentials: the client reads the same words for each, so a link cannot probe hosts
        and ports from the server's place by what it is told. The log tells them apart."""
        closed = socket.create_server(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]
        closed.close()  # nothing listens: the connection is refused
        silent = socket.create_server(("127.0.0.1", 0))  # never accepts: the reply times out
        self.addCleanup(silent.close)
        silent_port = silent.getsockname()[1]
        links = {
            "refused": self.url("/img.png", port=closed_port),
            "timed out": self.url("/img.png", port=silent_port),
            "reset": self.url("/reset"), "HTTP 404": self.url("/missing"),
            "HTTP 500": self.url("/error"), "not an image": self.url("/page"),
            "too large": self.url("/big"), "redirect to private": self.url("/to-private"),
            "private host": self.url("/img.png", "inside.test"),
            "unknown host": self.url("/img.png", "nowhere.test"),
            "redirect to port 22": self.url("/to/" + urllib.parse.quote("public.test:22")),
            "redirect with credentials": self.url("/to/" + urllib.parse.quote(
                f"u:p@public.test:{self.port}")),
        }
        told = {}
        for cause, url in links.items():
            with self.assertRaises(fetch.FetchRefused) as ctx:
                fetch.fetch(url, self.rules(ports=(80, 443, self.port, closed_port, silent_port),
                                            max_bytes=10_000, timeout_s=0.5))
            told[cause] = str(ctx.exception)
        self.assertEqual(told, dict.fromkeys(links, NOT_FETCHED))

    def test_the_cause_is_logged_without_the_path_query_or_credentials(self):
        """The log names the link's origin (scheme, host, port) and the cause; a path, a query
        string or credentials may carry secrets and never reach it."""
        for url, why in ((self.url("/secret-path/img.png?token=SECRET"), "HTTP 404"),
                         (self.url("/to/" + urllib.parse.quote(
                             f"user:SECRET@public.test:{self.port}")), "credentials"),
                         (self.url("/hop/9"), "more than 3 redirects")):
            with self.subTest(why):
                logged = self.refused(url, why)
                self.assertIn(f"http://public.test:{self.port}", logged)
                for secret in ("SECRET", "secret-path", "user", "/hop"):
                    self.assertNotIn(secret, logged)

    def test_fetches_counted_by_outcome(self):
        """/metrics' onepass_image_fetches_total: a fetched image is ok, a broken rule refused,
        a far server's error status or an unknown host failed."""
        def counts():
            return [telemetry.FETCHES.series.get((o,), 0) for o in telemetry.FETCH_OUTCOMES]
        before = counts()
        fetch.fetch(self.url("/img.png"), self.rules())
        for url in (self.url("/page"), self.url("/to-private"), self.url("/missing"),
                    self.url("/img.png", "nowhere.test")):
            with self.assertRaises(fetch.FetchRefused):
                fetch.fetch(url, self.rules())
        self.assertEqual([a - b for a, b in zip(counts(), before)], [1, 2, 2])


class TestTLS(unittest.TestCase):
    """https to a local TLS server: the connection goes to the checked address while the
    certificate is verified for the link's host name (SNI); an untrusted certificate or a name
    mismatch is refused. The test trusts its own certificate through SSL_CERT_FILE, which the
    default context reads."""

    @classmethod
    def setUpClass(cls):
        if not shutil.which("openssl"):
            missing("needs the openssl command to make a certificate (test.sh installs it)")
        cls.dir = tempfile.TemporaryDirectory()
        cert, key = os.path.join(cls.dir.name, "cert.pem"), os.path.join(cls.dir.name, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-keyout", key, "-out", cert, "-subj", "/CN=public.test",
                        "-addext", "subjectAltName=DNS:public.test"],
                       check=True, capture_output=True)
        cls.cert = cert
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), Images)
        cls.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        cls.server.socket = context.wrap_socket(cls.server.socket, server_side=True)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()
        cls.dir.cleanup()

    def fetch(self, host: str, trusted: bool):
        def resolve(name, port, type=0):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        rules = fetch.Rules(timeout_s=2.0, resolve=resolve, is_allowed=lambda a: True,
                            ports=(self.server.server_port,))
        saved = os.environ.get("SSL_CERT_FILE")
        os.environ["SSL_CERT_FILE"] = self.cert if trusted else os.devnull
        try:
            return fetch.fetch(f"https://{host}:{self.server.server_port}/img.png", rules)
        finally:
            if saved is None:
                os.environ.pop("SSL_CERT_FILE")
            else:
                os.environ["SSL_CERT_FILE"] = saved

    def test_verified_for_the_host_on_the_pinned_address(self):
        self.assertEqual(self.fetch("public.test", trusted=True), (PNG, "image/png"))

    def test_untrusted_or_mismatched_certificates_are_refused(self):
        for host, trusted in (("public.test", False), ("other.test", True)):
            with self.assertLogs("onepass", "INFO") as logs:
                with self.assertRaises(fetch.FetchRefused) as ctx:
                    self.fetch(host, trusted)
            self.assertEqual(str(ctx.exception), NOT_FETCHED)
            self.assertIn("CERTIFICATE_VERIFY_FAILED", "\n".join(logs.output))


if __name__ == "__main__":
    unittest.main()
