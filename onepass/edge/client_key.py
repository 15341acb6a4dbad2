"""The address one connection and each of its requests are counted under (the connection table,
and through the request's call the body budget, the slots and the door).

Owns: per connection, its TCP peer and its base client (the peer, or the client a trusted
peer's PROXY header names: read at the connection's start, refused from any other peer); per
request, its client (the base, or behind a trusted base its X-Forwarded-For's: real_client.py)
and moving the connection's count in the table to it, and back to the base between requests,
so a proxy's idle connection counts against no client; the access log's client and peer.
Never: reads a request's head or body (connections.py does).
"""
from __future__ import annotations

from . import proxy_protocol
from ..errors import MalformedHttp


class ClientKey:
    def __init__(self, server, sock, peer: str):
        self.trust, self.table, self.sock = server.trust, server.table, sock
        self.peer = self.base = peer
        self.greeted = False  # a PROXY header comes before the first request only

    def greet(self, rfile, deadline: float) -> None:
        """A PROXY header at the connection's start: read from a trusted peer (the client it
        names is the connection's from then on: SourceOverCap past that client's cap), refused
        from any other (MalformedHttp: 400, closed)."""
        if self.greeted:
            return
        self.greeted = True
        version = proxy_protocol.announced(rfile, self.sock, deadline)
        if version is None:
            return
        if not self.trust.trusts(self.peer):
            raise MalformedHttp(f"a PROXY protocol header from {self.peer}, which is not a "
                                "trusted proxy: send none, or list the proxy's address in the "
                                "server's --trusted-proxies")
        client = proxy_protocol.read(rfile, version)
        if client is not None:
            self.base = client  # its client, refused or not
            self.count_as(client)

    def of_request(self, fields) -> str:
        """The client of the request whose head has `fields`, the connection counted as its
        (SourceOverCap past its cap)."""
        client = self.trust.client(self.base, fields.all("x-forwarded-for"))
        self.count_as(client)
        return client

    def between(self) -> None:
        """Between requests the connection is its base's again (never past a cap: a base that
        is not trusted is the only one its requests ever had)."""
        self.table.move(self.sock, self.base, capped=False)

    def count_as(self, client: str) -> None:
        if not self.table.move(self.sock, client, not self.trust.trusts(client)):
            raise self.table.over_cap(client)

    def logged(self, client: str) -> dict:
        """The access log's client (the request's, else the connection's) and the peer when it
        is another (a proxy)."""
        client = client or self.base
        return {"client": client, **({"peer": self.peer} if self.peer != client else {})}
