"""A generation streamed from vLLM and stopped at a wall-clock deadline (a request's
`kwargs.reasoning.budget_ms`): what was written by then is kept, the connection is closed, and
vLLM aborts the rest.

Owns: the streamed exchange (server-sent events on its own connection, never a pooled one: it
may be cut mid-body) and collecting text, token log-probs and the prompt count from its chunks.
Never: builds the request (decoding.py does) or decides the deadline (steps/think.py does).
"""
from __future__ import annotations

import http.client
import json
import socket
import time

from . import wire
from .. import inflight, telemetry
from ..decision_model import Generated
from ..errors import EngineFailed, EngineUnavailable

MIN_WAIT_S = 0.05  # a socket timeout is never zero (that would make the socket non-blocking)


def generate(engine, read, route: str, request: dict, kind: str, deadline: float):
    """A decision.Generated as generation.generate gives, cut at `deadline`
    (time.monotonic()). A prompt count vLLM did not send before the cut is counted by the
    tokenizer (text only: image tokens are then missing from it)."""
    payload = engine.queued(route, wire.pieces({**request, "stream": True,
                                                "stream_options": {"include_usage": True}}))
    with wire.sending(engine.gate, sum(map(len, payload))):  # counted as Engine.call counts
        text, tokens, cut, prompt_tokens = _stream(engine, route, payload, kind, deadline)
    if prompt_tokens is None:  # counted after the gate is given back: it sends bodies too
        prompt_tokens = engine.count([read.prompt])[0]
    return Generated(text, tokens, cut, prompt_tokens)


def _stream(engine, route: str, payload: list, kind: str, deadline: float):
    """(text, tokens, cut, prompt tokens or None): the exchange itself."""
    # One vLLM call, however long the budget: the engine timeout bounds it. The budget cuts
    # (what was written is kept); the engine timeout fails (503), as for any call.
    call_ends = time.monotonic() + engine.timeout_s
    budget_first = deadline <= call_ends
    ends = min(deadline, call_ends)
    conn = http.client.HTTPConnection(engine.host, engine.port,
                                      timeout=max(MIN_WAIT_S, ends - time.monotonic()))
    text, tokens, finish, prompt_tokens, cut = [], [], None, None, False
    call = inflight.check()  # a request whose client left starts nothing new
    try:
        with inflight.flying(call, conn):  # cut when the client leaves
            conn.request("POST", engine.prefix + route, body=payload, headers={
                "Content-Type": "application/json",
                "Content-Length": str(sum(map(len, payload))), **engine.auth,
                **inflight.headers(call)})
            response = conn.getresponse()
            if response.status != 200:
                raise EngineFailed(f"vLLM answered {route} with HTTP {response.status}")
            for line in response:
                if time.monotonic() >= ends:
                    if not budget_first:
                        raise TimeoutError
                    cut = True
                    break
                conn.sock.settimeout(max(MIN_WAIT_S, ends - time.monotonic()))
                if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if chunk.get("usage"):
                    prompt_tokens = int(chunk["usage"]["prompt_tokens"])
                for choice in chunk.get("choices") or ():
                    piece, pairs = _piece(choice, kind)
                    text.append(piece)
                    tokens += pairs
                    finish = choice.get("finish_reason") or finish
            inflight.check()  # a stream cut by the client's leaving ends like a finished one
    except (socket.timeout, TimeoutError):
        if not budget_first:  # vLLM stalled past the engine timeout: not a thought cut short
            telemetry.engine_error("timeout")
            raise EngineUnavailable(f"vLLM did not finish a generation within "
                                    f"{engine.timeout_s} s", retry_after_ms=1000) from None
        cut = True  # the budget's deadline passed while vLLM was still writing
    except (OSError, http.client.HTTPException) as e:
        if call is not None and call.gone.is_set():
            raise call.why() from None  # cut on purpose: vLLM aborts the request
        raise EngineUnavailable(f"vLLM is unreachable at {engine.host}:{engine.port} "
                                f"({type(e).__name__})", retry_after_ms=1000) from None
    except (ValueError, KeyError, TypeError) as e:
        raise EngineFailed(f"vLLM's streamed generation is not what it should be ({e!r})") from None
    finally:
        conn.close()  # closing mid-stream makes vLLM abort the request
    return "".join(text), tokens, cut or finish == "length", prompt_tokens


def _piece(choice: dict, kind: str) -> tuple[str, list]:
    """One chunk's text and (token, log-prob) pairs, from the chat or the text route."""
    if kind == "message":
        piece = (choice.get("delta") or {}).get("content") or ""
        content = (choice.get("logprobs") or {}).get("content") or ()
        return piece, [(e["token"], float(e["logprob"])) for e in content]
    lp = choice.get("logprobs") or {}
    return choice.get("text") or "", [(t, float(v)) for t, v in
                                      zip(lp.get("tokens") or (), lp.get("token_logprobs") or ())]
