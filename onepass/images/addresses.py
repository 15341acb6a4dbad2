"""Which addresses an image link may reach: public ones, judged from an explicit table.

Owns: IANA's IPv4 and IPv6 special-purpose ranges, multicast and cloud addresses as refused
networks, listed here rather than read from Python's is_global / is_private (3.11 and 3.13 give
different answers: 192.0.0.9, 2001:3::/32, IPv4-mapped forms); IPv6 only from global unicast;
the IPv4 inside an IPv4-mapped or NAT64 address judged as IPv4. In: an address string as
getaddrinfo gives it (an IPv6 zone id allowed). Out: allowed or not.
"""
from __future__ import annotations

import ipaddress

# IANA's IPv4 special-purpose registry (its globally reachable anycast entries too: no image is
# served there), multicast, and Azure's wire server, the one cloud address outside them.
BLOCKED_V4 = tuple(map(ipaddress.IPv4Network, (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
    "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24",
    "192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24",
    "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "168.63.129.16/32")))
# IPv6: global unicast only, less the special-purpose blocks inside it (IETF assignments with
# Teredo, documentation, 6to4, AS112); everything else (loopback, unique and link- or
# site-local, multicast, discard, local-use NAT64, unassigned) lies outside 2000::/3.
GLOBAL_V6 = ipaddress.IPv6Network("2000::/3")
BLOCKED_V6 = tuple(map(ipaddress.IPv6Network, (
    "2001::/23", "2001:db8::/32", "2002::/16", "2620:4f:8000::/48", "3fff::/20")))
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # the well-known prefix: an IPv4 address inside


def is_public(address: str) -> bool:
    """True only for a globally routable unicast address outside every special-purpose range
    (IPv4-mapped and NAT64 addresses judged by the IPv4 address inside)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if ip.version == 4:
        return not any(ip in net for net in BLOCKED_V4)
    if ip.ipv4_mapped:
        return is_public(str(ip.ipv4_mapped))  # ::ffff:a.b.c.d is a.b.c.d on the wire
    if ip in NAT64:
        return is_public(str(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)))
    return ip in GLOBAL_V6 and not any(ip in net for net in BLOCKED_V6)


def is_unicast(address: str) -> bool:
    """The `all` setting: any unicast address, private and loopback included (trusted networks
    and tests only)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    return not (ip.is_multicast or ip.is_unspecified)
