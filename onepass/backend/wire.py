"""A request body for vLLM as byte pieces, and the bytes in flight to vLLM.

Owns: writing a body whose image parts are sent from the one bytes object each Image holds (its
data URL is encoded once per request and never copied into a body: a read of 4 images written 4
times costs its prompt text, not 16 data URLs), and the server's cap on the bytes of bodies
being sent to vLLM at once (Gate).
Never: builds the body's fields (engine.py, generation.py do) or decides what to send.
"""
from __future__ import annotations

import json
import re
import secrets
import threading
import time

from .. import telemetry
from ..errors import EngineUnavailable


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


class Gate:
    """The bytes of request bodies in flight to vLLM, at most `most` at once (a body larger
    than that alone still goes, by itself); a sender waits at most `wait_s`."""

    def __init__(self, most: int, wait_s: float):
        self.most, self.wait_s, self.used = most, wait_s, 0
        self._cond = threading.Condition()

    def take(self, n: int) -> None:
        ends = time.monotonic() + self.wait_s
        with self._cond:
            while self.used and self.used + n > self.most:
                left = ends - time.monotonic()
                if left <= 0:
                    telemetry.engine_error("timeout")
                    raise EngineUnavailable(f"more than {self.most} bytes were on their way to "
                                            f"vLLM for {self.wait_s} s", retry_after_ms=1000)
                self._cond.wait(left)
            self.used += n

    def give(self, n: int) -> None:
        with self._cond:
            self.used -= n
            self._cond.notify_all()
