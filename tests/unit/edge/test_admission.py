"""Stdlib-only tests of admission (onepass/edge/admission.py): the key check's outcomes (off,
missing or wrong: 401, each with its RFC 6750 challenge; two keys at once for a rotation), what
counts as local with auth off (the bind address, Host, Origin). Over HTTP: test_security.py (test_auth_schemes,
TestAuthByDefault).
Run: python3 -S -m unittest tests.unit.edge.test_admission
"""
import unittest

from onepass.edge import admission
from onepass.edge.framing import Fields
from onepass.errors import AuthInvalid, AuthMissing


class TestAuth(unittest.TestCase):
    def test_no_key_accepts_anything(self):
        """authorized: with auth off any header, or none, passes."""
        for header in (None, "", "Basic x", "Bearer wrong"):
            self.assertTrue(admission.authorized("", header), header)

    def test_missing_and_wrong_are_both_401_each_with_its_challenge(self):
        """check_auth: no bearer key (no header, or another scheme) raises AuthMissing, a wrong
        one AuthInvalid: both 401 (RFC 9110), the wrong one's challenge naming invalid_token
        (RFC 6750 3.1)."""
        for header, error in ((None, AuthMissing), ("", AuthMissing), ("Token k-1", AuthMissing),
                              ("Bearer", AuthInvalid), ("Bearer k-2", AuthInvalid)):
            with self.assertRaises(error, msg=header) as ctx:
                admission.check_auth("k-1", header)
            self.assertEqual(ctx.exception.status, 401, header)
        self.assertEqual(AuthMissing.challenge, 'Bearer realm="onepass"')
        self.assertEqual(AuthInvalid.challenge, 'Bearer realm="onepass", error="invalid_token"')
        self.assertIsNone(admission.check_auth("k-1", "BEARER k-1 "))  # scheme any case, padded

    def test_a_comma_separated_key_list_accepts_each_key(self):
        """authorized: "new,old" takes either key (a rotation without downtime), never the list
        itself or another key; spaces around a key are not part of it."""
        for key in ("new-1,old-2", " new-1 , old-2 "):
            self.assertTrue(admission.authorized(key, "Bearer new-1"), key)
            self.assertTrue(admission.authorized(key, "Bearer old-2"), key)
            for wrong in ("Bearer new-1,old-2", "Bearer other", "Bearer ", "Bearer new"):
                self.assertFalse(admission.authorized(key, wrong), (key, wrong))
        self.assertEqual(admission.keys(" , "), [])  # config refuses such a value


def fields(**values) -> Fields:
    out = Fields()
    for name, value in values.items():
        out.add(name, value)
    return out


class TestLocal(unittest.TestCase):
    def test_loopback_bind_addresses(self):
        """binds_loopback: 127.0.0.0/8, ::1 and localhost (resolved); the wildcard addresses,
        private ones and names that do not resolve are not."""
        for host in ("127.0.0.1", "127.8.9.10", "::1", "localhost"):
            self.assertTrue(admission.binds_loopback(host), host)
        for host in ("0.0.0.0", "::", "", "10.1.2.3", "192.168.1.5", "no-such-host.invalid"):
            self.assertFalse(admission.binds_loopback(host), host)

    def test_local_host_values(self):
        """local_host: localhost, a 127.0.0.0/8 address or [::1], with any port; nothing else
        (a DNS name that resolves to 127.0.0.1 is what DNS rebinding sends)."""
        for host in ("localhost", "LOCALHOST:8741", "127.0.0.1", "127.0.0.1:1", "[::1]",
                     "[::1]:8741", "127.3.4.5:80"):
            self.assertTrue(admission.local_host(host), host)
        for host in ("evil.example", "evil.example:8741", "localhost.evil.example",
                     "127.0.0.1.nip.io:8741", "[::2]:1", "10.0.0.1:8741", "0.0.0.0:8741",
                     "localhost:abc", "[::1", "[::1]x", "::1", "127.1", ""):
            self.assertFalse(admission.local_host(host), host)

    def test_same_origin(self):
        """same_origin: the Origin's scheme://host:port is http(s)://<Host>; "null", another
        host, port or anything after the authority is not."""
        self.assertTrue(admission.same_origin("http://127.0.0.1:8741", "127.0.0.1:8741"))
        self.assertTrue(admission.same_origin("http://LOCALHOST:8741", "localhost:8741"))
        self.assertTrue(admission.same_origin("https://onepass.internal", "onepass.internal"))
        for origin in ("http://evil.example", "null", "http://127.0.0.1:8742",
                       "http://127.0.0.1:8741/", "ftp://127.0.0.1:8741", ""):
            self.assertFalse(admission.same_origin(origin, "127.0.0.1:8741"), origin)
        self.assertFalse(admission.same_origin("http://", ""))  # no Host: no origin is its own

    def test_foreign_requests_with_auth_off(self):
        """foreign: bound to loopback, a Host that is not local or an Origin of another site is
        named; elsewhere only the Origin is judged; no Host (HTTP/1.0) and no Origin pass."""
        cases = [(True, {"Host": "127.0.0.1:8741"}, None),
                 (True, {"Host": "localhost:8741", "Origin": "http://localhost:8741"}, None),
                 (True, {}, None),
                 (True, {"Host": "evil.example:8741"}, "Host"),
                 (True, {"Host": "127.0.0.1:8741", "Origin": "http://evil.example"}, "Origin"),
                 (True, {"Host": "127.0.0.1:8741", "Origin": "null"}, "Origin"),
                 (False, {"Host": "onepass.internal"}, None),
                 (False, {"Host": "onepass.internal", "Origin": "https://onepass.internal"},
                  None),
                 (False, {"Host": "onepass.internal", "Origin": "http://evil.example"},
                  "Origin")]
        for loopback, values, named in cases:
            why = admission.foreign(fields(**values), loopback)
            if named is None:
                self.assertIsNone(why, values)
            else:
                self.assertIn(named, why or "", values)


if __name__ == "__main__":
    unittest.main()
