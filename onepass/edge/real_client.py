"""Who the client is behind a trusted proxy: every per-address share (connections, body budget
and its lane, in-flight slots, the door) keys on the address this module names.

Owns: the trusted proxies (--trusted-proxies: addresses and CIDR blocks) and the rule. A peer
that is not trusted is the client, whatever it sends: its X-Forwarded-For is ignored (and a
PROXY header from it refused: connections.py). Behind a trusted peer, the client is the address
its PROXY header names (else the peer itself), and while that address is trusted too, the
X-Forwarded-For entries from the right: the rightmost entry that is not a trusted proxy. An
entry that is no IP address stops the walk at the proxy that sent it. Nothing trusted (the
default): every client is its TCP peer.
Never: reads sockets or headers (connections.py hands it their values).
In: addresses as text, X-Forwarded-For values. Out: the client's address as text.
"""
from __future__ import annotations

import ipaddress


def address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An address as proxies write one (`192.0.2.1`, `192.0.2.1:443`, `2001:db8::1`,
    `[2001:db8::1]:443`); IPv4 mapped into IPv6 as IPv4. None when it is none of these."""
    text = text.strip()
    if text.startswith("["):
        text, bracket, port = text[1:].partition("]")
        if not bracket or port and not (port[:1] == ":" and port[1:].isdigit()):
            return None
    elif text.count(":") == 1:  # IPv4 with a port (IPv6 has two colons at least)
        text, _, port = text.partition(":")
        if not port.isdigit():
            return None
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = getattr(found, "ipv4_mapped", None)
    return mapped or found


def networks(spec: str) -> tuple:
    """`10.0.0.0/8, 127.0.0.1, ::1` as networks; ValueError naming an item that is none."""
    found = []
    for item in (i.strip() for i in spec.split(",")):
        if not item:
            continue
        try:
            found.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f"{item[:60]!r} is not an IP address or CIDR block") from None
    return tuple(found)


class Trust:
    """The trusted proxies; empty, nothing is trusted."""

    def __init__(self, spec: str = ""):
        self.networks = networks(spec)

    def __bool__(self) -> bool:
        return bool(self.networks)

    def trusts(self, text: str) -> bool:
        found = address(text) if self.networks else None
        return found is not None and any(found in net for net in self.networks)

    def client(self, base: str, forwarded: list[str]) -> str:
        """The request's client: `base` (the peer, or the client its trusted peer's PROXY
        header names), or while that is a trusted proxy, the X-Forwarded-For values' entries
        walked from the right, up to the first that is not a trusted proxy (all trusted: the
        leftmost)."""
        client = base
        if not self.trusts(base):
            return client
        entries = [e for value in forwarded for e in value.split(",")]
        for entry in reversed(entries):
            found = address(entry)
            if found is None:
                break  # not an address: the proxy that sent it is the client known
            client = str(found)
            if not self.trusts(client):
                break
        return client
