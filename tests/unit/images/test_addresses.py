"""Stdlib-only tests of which addresses an image link may reach (onepass/images/addresses.py): every
range of IANA's special-purpose registries, multicast, site-local and the cloud addresses is
refused, also inside IPv4-mapped and NAT64 forms, and ordinary public addresses pass, whatever
the Python version's is_global says. Run: python3 -m unittest tests.unit.images.test_addresses
"""
import ipaddress
import unittest

from onepass.images import addresses

BLOCKED = ["127.0.0.1", "127.255.255.254", "10.1.2.3", "172.16.0.1", "192.168.1.1",
           "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1", "240.0.0.1",
           "255.255.255.255", "192.0.2.1", "198.18.0.1", "::1", "::", "fe80::1", "fc00::1",
           "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
           "2002:a00:1::", "64:ff9b::7f00:1", "2001:db8::1", "fe80::1%eth0",
           "192.0.0.9", "192.0.0.170", "fec0::1", "168.63.129.16", "100.100.100.200",
           "fd00:ec2::254", "2002:808:808::", "2001::808:808", "64:ff9b:1::a00:1", "3fff::1"]
PUBLIC = ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808",
          "2a00:1450:4001:80b::200e", "2001:200::1", "192.0.1.1", "168.63.129.17",
          "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0", "198.17.255.255",
          "198.20.0.0", "223.255.255.255", "11.0.0.1"]

# IANA's IPv4 and IPv6 special-purpose address registries, multicast, site-local and the
# cloud addresses: every one refused, whatever Python's is_global says (3.11 and 3.13 differ:
# 192.0.0.9 and 2001:3::/32 are global to one of them).
SPECIAL = {
    "0.0.0.0/8": "this network", "10.0.0.0/8": "private", "100.64.0.0/10": "shared (CGNAT)",
    "127.0.0.0/8": "loopback", "169.254.0.0/16": "link-local, cloud metadata",
    "172.16.0.0/12": "private", "192.0.0.0/24": "IETF protocol assignments",
    "192.0.2.0/24": "documentation", "192.31.196.0/24": "AS112-v4", "192.52.193.0/24": "AMT",
    "192.88.99.0/24": "6to4 relay anycast", "192.168.0.0/16": "private",
    "192.175.48.0/24": "AS112 direct delegation", "198.18.0.0/15": "benchmarking",
    "198.51.100.0/24": "documentation", "203.0.113.0/24": "documentation",
    "224.0.0.0/4": "multicast", "240.0.0.0/4": "reserved, broadcast",
    "168.63.129.16/32": "Azure wire server",
    "::/128": "unspecified", "::1/128": "loopback", "::/96": "IPv4-compatible",
    "64:ff9b:1::/48": "local-use NAT64", "100::/64": "discard-only",
    "100:0:0:1::/64": "dummy prefix", "2001::/23": "IETF protocol assignments",
    "2001::/32": "Teredo", "2001:2::/48": "benchmarking", "2001:3::/32": "AMT",
    "2001:4:112::/48": "AS112-v6", "2001:20::/28": "ORCHIDv2", "2001:db8::/32": "documentation",
    "2002::/16": "6to4", "2620:4f:8000::/48": "AS112 direct delegation",
    "3fff::/20": "documentation", "5f00::/16": "segment routing", "fc00::/7": "unique local",
    "fe80::/10": "link-local", "fec0::/10": "site-local", "ff00::/8": "multicast",
}


class TestAddresses(unittest.TestCase):
    def test_every_blocked_range_is_refused(self):
        for address in BLOCKED:
            self.assertFalse(addresses.is_public(address), address)
        for address in PUBLIC:
            self.assertTrue(addresses.is_public(address), address)

    def test_every_special_purpose_range_is_refused_end_to_end(self):
        """The first, middle and last address of each range; each IPv4 one also inside an
        IPv4-mapped and a NAT64 (64:ff9b::/96) address."""
        for network, name in SPECIAL.items():
            net = ipaddress.ip_network(network)
            for ip in (net[0], net[net.num_addresses // 2], net[-1]):
                forms = [ip] if ip.version == 6 else [
                    ip, ipaddress.IPv6Address(f"::ffff:{ip}"),
                    ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | int(ip))]
                for form in forms:
                    with self.subTest(network=network, name=name, address=str(form)):
                        self.assertFalse(addresses.is_public(str(form)))


if __name__ == "__main__":
    unittest.main()
