"""A request body for vLLM as byte pieces, and the bytes in flight to vLLM.

Owns: writing a body whose image parts are sent from the one bytes object each Image holds (its
data URL is encoded once per request and never copied into a body: a read of 4 images written 4
times costs its prompt text, not 16 data URLs), and the caps on the bytes of bodies being sent
to vLLM at once (Gate): one per server, and one per request (REQUEST, set while a request is
answered, so that one request's many image bodies cannot take the whole server's cap).
Also an image read's chat turns (messages), and a body's vLLM priority written into its pieces
(prioritised). Never: builds the body's other fields (engine.py, decoding.py do) or decides
what to send.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import re
import secrets
import threading
import time

from .. import telemetry
from ..errors import EngineFailed, EngineUnavailable


def pieces(doc: dict) -> list[bytes]:
    """The JSON body as pieces: an object with `data_url_bytes` (an Image) anywhere in `doc`
    is written as its data URL, from those bytes."""
    images, tag = [], secrets.token_hex(8)  # a slot name no client text can guess

    def slot(value):
        if not hasattr(value, "data_url_bytes"):
            raise TypeError(f"{type(value).__name__} is not JSON")
        images.append(value)
        return f"onepass-slot-{tag}-{len(images) - 1}"
    text = json.dumps(doc, default=slot)
    if not images:
        return [text.encode()]
    out = []
    for i, part in enumerate(re.split(f"onepass-slot-{tag}-([0-9]+)", text)):
        out.append(part.encode() if i % 2 == 0 else images[int(part)].data_url_bytes)
    return out


def prioritised(payload: list[bytes], priority: int) -> list[bytes]:
    """The body's pieces with `"priority": priority` first in its object (vLLM's field; the
    body never carries one already), written into the pieces rather than dumping them again."""
    first = payload[0]
    rest = b"" if first[1:2] == b"}" else b","
    return [b'{"priority": %d%s' % (priority, rest) + first[1:]] + payload[1:]


class Gate:
    """The bytes of request bodies in flight to vLLM, at most `most` at once (a body larger
    than that alone still goes, by itself); a sender waits at most `wait_s`. `whose` names
    the bodies counted, for the 503's message."""

    def __init__(self, most: int, wait_s: float, whose: str = "every request"):
        self.most, self.wait_s, self.used, self.whose = most, wait_s, 0, whose
        self._cond = threading.Condition()

    def take(self, n: int) -> None:
        ends = time.monotonic() + self.wait_s
        with self._cond:
            while self.used and self.used + n > self.most:
                left = ends - time.monotonic()
                if left <= 0:
                    telemetry.engine_error("timeout")
                    raise EngineUnavailable(f"more than {self.most} bytes of {self.whose} "
                                            f"were on their way to vLLM for {self.wait_s} s",
                                            retry_after_ms=1000)
                self._cond.wait(left)
            self.used += n

    def give(self, n: int) -> None:
        with self._cond:
            self.used -= n
            self._cond.notify_all()

    @contextlib.contextmanager
    def held(self, n: int):
        self.take(n)
        try:
            yield
        finally:
            self.give(n)


# The Gate of the request being answered (None outside one: start-up probes). A context variable,
# not a thread-local: the engine runs a request's calls on its pool's threads, each in a copy of
# the submitter's context (Engine.submit), so they see the request's Gate.
REQUEST: contextvars.ContextVar[Gate | None] = contextvars.ContextVar("onepass_request_gate",
                                                                     default=None)


@contextlib.contextmanager
def request(most: int, wait_s: float):
    """Bodies sent within the block count against a Gate of their own, of `most` bytes."""
    token = REQUEST.set(Gate(most, wait_s, "this request"))
    try:
        yield
    finally:
        REQUEST.reset(token)


@contextlib.contextmanager
def sending(server: Gate, n: int):
    """n bytes counted in flight: the request's Gate first, then the server's, so a body
    waiting for its own request's room holds none of the server's."""
    mine = REQUEST.get()
    with (mine.held(n) if mine else contextlib.nullcontext()), server.held(n):
        yield


def messages(read, image_slot: str) -> list[dict]:
    """An image read's turns for the model's own chat template (the start-up guard checked
    that it renders what the layout wrote): each image slot becomes an image part."""
    system, user = read.chat
    pieces = user.split(image_slot)
    if len(pieces) != len(read.images) + 1:
        raise EngineFailed("an image read's slots do not match its images")
    content = [{"type": "text", "text": pieces[0]}]
    for url, text in zip(read.images, pieces[1:]):  # an Image: written by pieces()
        content += [{"type": "image_url", "image_url": {"url": url}},
                    {"type": "text", "text": text}]
    return [{"role": "system", "content": system},
            {"role": "user", "content": [c for c in content
                                         if c["type"] != "text" or c["text"]]}]
