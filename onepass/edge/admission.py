"""Admission: the in-flight slots and the API-key check, both judged before a body is read.

Owns: how many requests are answered at once (and closing that door on SIGTERM, then waiting
for the busy ones), and comparing an Authorization header with the key in constant time.
Never: routes, reads bodies or logs keys.
In: a header value, take/give calls. Out: booleans, or AuthMissing / AuthInvalid.
"""
from __future__ import annotations

import hmac
import threading

from ..errors import AuthInvalid, AuthMissing


def authorized(key: str, authorization: str | None) -> bool:
    if not key:
        return True  # auth off: any Authorization header, or none, is accepted
    scheme, _, token = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(),
                                                              key.encode())


def check_auth(key: str, authorization: str | None) -> None:
    if authorized(key, authorization):
        return
    if not authorization:
        raise AuthMissing("missing API key: send Authorization: Bearer <key>")
    raise AuthInvalid("invalid API key")


class Slots:
    """Requests in flight, at most `limit`; closed on SIGTERM, after which none is taken and the
    drain waits for the busy ones."""

    def __init__(self, limit: int):
        self.limit, self.busy, self.closed = limit, 0, False
        self.changed = threading.Condition()

    def take(self) -> bool:
        with self.changed:
            if self.closed or self.busy >= self.limit:
                return False
            self.busy += 1
            return True

    def give(self) -> None:
        with self.changed:
            self.busy -= 1
            self.changed.notify_all()

    def close_and_wait(self, timeout_s: float) -> int:
        """Take nothing new; wait until no request is in flight, at most timeout_s. Returns how
        many are still in flight."""
        with self.changed:
            self.closed = True
            self.changed.wait_for(lambda: self.busy == 0, timeout_s)
            return self.busy
