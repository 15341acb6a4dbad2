"""vLLM's key on every route but /health and /metrics: an ASGI middleware serve.sh passes to
vLLM (`--middleware onepass_engine.guard.Guard`), beside vLLM's own check of VLLM_API_KEY.

Why: vLLM 0.32 checks its key only under /v1, /v2, /inference and /cohere
(vllm/entrypoints/serve/middleware/authenticate.py); /invocations (SageMaker's route: the same
completions and chat) and /generative_scoring answer without it, so any local process could
reach the model past the shim. This guard holds every path to the same key, except the two a
health check and a scrape need (neither runs the model nor reveals a prompt).
Standard library only (no starlette): vLLM loads it in its API server process, where engine/ is
on the path (the plugin's .pth), whether or not VLLM_PLUGINS loads the plugin.
Never: logs or answers with the key.
"""
from __future__ import annotations

import hashlib
import hmac
import os

OPEN = frozenset({"/health", "/metrics", "/metrics/"})  # answered without the key
BODY = b'{"error":"Unauthorized"}'  # vLLM's own 401 body


class Guard:
    def __init__(self, app, key: str | None = None):
        self.app = app
        key = os.environ.get("VLLM_API_KEY", "") if key is None else key
        # no key (vLLM started without one): nothing to hold the routes to
        self.digest = hashlib.sha256(key.encode()).digest() if key else None

    def allowed(self, scope) -> bool:
        root, path = scope.get("root_path", ""), scope.get("path", "")
        path = path[len(root):] if root and path.startswith(root) else path
        if self.digest is None or path in OPEN:
            return True
        headers = dict(scope.get("headers") or ())
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        given = hashlib.sha256(token.encode("latin-1")).digest()
        return scheme.lower() == "bearer" and hmac.compare_digest(given, self.digest)

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket") or self.allowed(scope):
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":  # closed before accept: the handshake is refused
            return await send({"type": "websocket.close", "code": 1008})
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(BODY)).encode())]})
        await send({"type": "http.response.body", "body": BODY})
