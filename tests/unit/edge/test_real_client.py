"""Stdlib tests of who the client is behind a proxy (onepass/edge/real_client.py): the trusted
proxies (addresses and CIDR blocks, IPv4 mapped into IPv6; a bad item refused at start) and
X-Forwarded-For's rightmost entry that is not a trusted proxy, read only behind a trusted peer
(a forged one from any other is ignored). The PROXY protocol: test_proxy_protocol.py; over a
real shim: test_client_key.py.
Run: python3 -S -m unittest tests.unit.edge.test_real_client
"""
import unittest

from onepass import config
from onepass.edge.real_client import Trust, address


class TestAddresses(unittest.TestCase):
    def test_the_forms_proxies_write(self):
        for text, want in (("192.0.2.1", "192.0.2.1"), (" 192.0.2.1:443", "192.0.2.1"),
                           ("2001:db8::1", "2001:db8::1"), ("[2001:db8::1]", "2001:db8::1"),
                           ("[2001:db8::1]:443", "2001:db8::1"), ("::ffff:192.0.2.1", "192.0.2.1")):
            self.assertEqual(str(address(text)), want, text)
        for text in ("unknown", "", "_hidden", "192.0.2.1:x", "[2001:db8::1]x", "[::1", "1.2.3"):
            self.assertIsNone(address(text), text)


class TestTrust(unittest.TestCase):
    def test_addresses_and_blocks(self):
        trust = Trust("10.0.0.0/8, 127.0.0.1,2001:db8::/32")
        for text in ("10.1.2.3", "127.0.0.1", "::ffff:10.9.9.9", "2001:db8::7"):
            self.assertTrue(trust.trusts(text), text)
        for text in ("11.0.0.1", "127.0.0.2", "2001:db9::1", "garbage", ""):
            self.assertFalse(trust.trusts(text), text)

    def test_nothing_is_trusted_by_default(self):
        self.assertFalse(Trust(""))
        self.assertFalse(Trust("").trusts("127.0.0.1"))
        self.assertEqual(Trust("").client("127.0.0.1", ["203.0.113.9"]), "127.0.0.1")

    def test_a_bad_item_is_a_config_error(self):
        with self.assertRaisesRegex(config.ConfigError, "trusted_proxies: '10.0.0.0/33'"):
            config.load(["--trusted-proxies", "127.0.0.1,10.0.0.0/33"], environ={})
        with self.assertRaisesRegex(config.ConfigError, "'proxy.local'"):
            config.load([], environ={"ONEPASS_TRUSTED_PROXIES": "proxy.local"})
        settings = config.load([], environ={"ONEPASS_TRUSTED_PROXIES": "10.0.0.0/8, ::1"})
        self.assertEqual(settings.trusted_proxies, "10.0.0.0/8, ::1")


class TestForwardedFor(unittest.TestCase):
    trust = Trust("10.0.0.0/8")

    def test_a_peer_not_trusted_is_the_client_whatever_it_forwards(self):
        self.assertEqual(self.trust.client("203.0.113.5", ["10.0.0.1, 198.51.100.7"]),
                         "203.0.113.5")

    def test_the_rightmost_entry_that_is_not_a_trusted_proxy(self):
        # the client forged the first entry; the ingress (10.0.0.2) appended what it saw
        self.assertEqual(self.trust.client("10.0.0.9", ["1.1.1.1, 198.51.100.7, 10.0.0.2"]),
                         "198.51.100.7")
        self.assertEqual(self.trust.client("10.0.0.9", ["1.1.1.1", "198.51.100.7"]),
                         "198.51.100.7")  # two header lines read as one list, in order
        self.assertEqual(self.trust.client("10.0.0.9", ["[2001:db8::5]:80"]), "2001:db8::5")

    def test_every_entry_trusted_is_the_leftmost(self):
        self.assertEqual(self.trust.client("10.0.0.9", ["10.0.0.1, 10.0.0.2"]), "10.0.0.1")

    def test_an_entry_that_is_no_address_stops_at_the_proxy_that_sent_it(self):
        self.assertEqual(self.trust.client("10.0.0.9", ["198.51.100.7, unknown"]), "10.0.0.9")
        self.assertEqual(self.trust.client("10.0.0.9", ["198.51.100.7, unknown, 10.0.0.3"]),
                         "10.0.0.3")

    def test_no_header_keys_the_trusted_peer_as_itself(self):
        self.assertEqual(self.trust.client("10.0.0.9", []), "10.0.0.9")


if __name__ == "__main__":
    unittest.main()
