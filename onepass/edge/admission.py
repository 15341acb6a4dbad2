"""Admission: who may ask (the API key; with auth off, local callers only), judged before a
body is read (slots.py holds the in-flight slots).

Owns: comparing an Authorization header with the key(s) in constant time, and what counts as
local: a loopback bind address, a local Host value, a same-origin Origin.
Never: routes, reads bodies or logs keys.
In: header values, the bind address. Out: booleans, a refusal's reason, or
AuthMissing / AuthInvalid.
"""
from __future__ import annotations

import hmac
import ipaddress
import re
import socket

from ..errors import AuthInvalid, AuthMissing

LOCAL_NAMES = ("localhost",)  # with 127.0.0.0/8 and ::1: the Host values a local caller sends
HOST = re.compile(r"(?:\[([0-9a-fA-F:.]+)\]|([^:\[\]]+))(?::[0-9]{1,5})?")  # [v6] or name, :port


def keys(key: str) -> list[bytes]:
    """The accepted keys: ONEPASS_API_KEY, a comma between two during a rotation."""
    return [k.strip().encode() for k in key.split(",") if k.strip()]


def authorized(key: str, authorization: str | None) -> bool:
    wanted = keys(key)
    if not wanted:
        return True  # auth off: any Authorization header, or none, is accepted
    scheme, _, token = (authorization or "").partition(" ")
    # every key compared, with no early exit: the time does not tell which one came close
    matched = [hmac.compare_digest(token.strip().encode(), k) for k in wanted]
    return scheme.lower() == "bearer" and any(matched)


def check_auth(key: str, authorization: str | None) -> None:
    if authorized(key, authorization):
        return
    if (authorization or "").partition(" ")[0].lower() != "bearer":
        raise AuthMissing("missing API key: send Authorization: Bearer <key>")
    raise AuthInvalid("invalid API key")


def binds_loopback(host: str) -> bool:
    """Whether every address `host` resolves to is loopback (127.0.0.0/8, ::1). The wildcard
    addresses (0.0.0.0, ::, "") and a name that does not resolve are not."""
    if not host:
        return False
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return False
    return bool(found) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in found)


def local_host(value: str) -> bool:
    """A Host value a local caller sends: localhost, a 127.0.0.0/8 address or [::1], with any
    port. A name that merely resolves to loopback is what DNS rebinding sends: not local."""
    match = HOST.fullmatch(value)
    if not match:
        return False
    bracketed, name = match.groups()
    if name is not None and name.lower() in LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(bracketed or name)
    except ValueError:
        return False
    return address.is_loopback and (address.version == 6) == (bracketed is not None)


def same_origin(origin: str, host: str) -> bool:
    """The Origin's scheme://host:port is this server's as the client named it (the Host),
    over http or, behind a TLS proxy, https. "null" and any other site are not."""
    return bool(host) and origin.lower() in (f"http://{host.lower()}", f"https://{host.lower()}")


def foreign(headers, loopback: bool) -> str | None:
    """With auth off: why this request is not a local one, or None. Bound to loopback the Host
    must be local (against DNS rebinding); anywhere, an Origin must be this server's (against a
    page elsewhere posting a form here). No Host (HTTP/1.0) and no Origin are tools, not pages."""
    host, origin = headers.get("Host"), headers.get("Origin")
    if loopback and host is not None and not local_host(host):
        return (f"auth is off on this server, so it answers local callers only: Host "
                f"{host[:100]!r} is not localhost, 127.0.0.1 or [::1] (set ONEPASS_API_KEY to "
                "serve other hosts)")
    if origin is not None and not same_origin(origin, host or ""):
        return (f"auth is off on this server, so it answers its own pages only: Origin "
                f"{origin[:100]!r} is another site's (set ONEPASS_API_KEY to serve it)")
    return None
