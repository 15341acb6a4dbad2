"""GET /openapi.json: an OpenAPI 3.1 document of every route, built from the schemas (schemas.py)
and this server's limits.

Owns: the paths, their status codes and which error shape each route answers with, the security
scheme, and the limits the document states (from Settings, so it says what this server does;
each kind states its own: kinds.stated_limits).
Never: checks requests against it (the adapters do) or changes a route's behaviour.
"""
from __future__ import annotations

from .. import kinds, tryit
from . import schemas as s

JSON = "application/json"
REQUEST_ID = {"x-typesafe-request-id": {"description": "the request's id (also x-request-id)",
                                        "schema": {"type": "string"}, "required": True}}
RETRY = {"retry-after-ms": {"description": "how long to wait before retrying",
                            "schema": {"type": "string"}}}
CHALLENGE = {"WWW-Authenticate": {
    "description": 'Bearer realm="onepass", with error="invalid_token" for a wrong key',
    "schema": {"type": "string"}, "required": True}}
NOT_LOCAL = ("auth is off and the caller is not local: a Host other than localhost, 127.0.0.1 "
             "or [::1] on a server bound to loopback, or an Origin of another site")
# status -> when, shared by both decision routes (each renders it in its own error shape)
DECISION_ERRORS = {
    "400": "malformed HTTP framing, or a well-formed request this server cannot honour as asked "
           "(two attention modes; two-way without the engine plugin)",
    "401": "a missing or wrong API key",
    "403": NOT_LOCAL,
    "404": "an unknown model",
    "408": "the request was not sent within the client timeout",
    "413": "a body over the size or JSON values limit, or a state too large to cut",
    "415": "an unsupported Content-Type or Content-Encoding",
    "422": "a validation error: every problem listed, up to 100, then a count of the rest",
    "502": "vLLM failing",
    "503": "vLLM unreachable or too slow; a failed start-up check; draining after SIGTERM; "
           "a new connection past its address's connection cap",
    "504": "the decision did not finish by its deadline (--request-timeout-s, or the "
           "request's x-envoy-expected-rq-timeout-ms); its work stopped",
    "529": "warming up, or the in-flight, connection or body memory limit",
}


def response(description: str, schema: dict | None, media: str = JSON, headers=None) -> dict:
    out = {"description": description, "headers": {**REQUEST_ID, **(headers or {})}}
    if schema is not None:
        out["content"] = {media: {"schema": schema}}
    return out


def auth_errors(shape: dict) -> dict:
    return {"401": response("a missing or wrong API key", shape, headers=CHALLENGE),
            "403": response(NOT_LOCAL, shape)}


def decision_route(operation_id: str, summary: str, request: dict, reply: dict,
                   validation: dict, error: dict, drop: tuple = ()) -> dict:
    responses = {"200": response("the answers", reply)}
    for status, when in DECISION_ERRORS.items():
        if status in drop:
            continue
        shape = validation if status == "422" else error
        extra = RETRY if status in ("503", "529") else CHALLENGE if status == "401" else None
        responses[status] = response(when, shape, headers=extra)
    return {"post": {"summary": summary, "operationId": operation_id,
                     "requestBody": {"required": True, "content": {JSON: {"schema": request}}},
                     "responses": responses}}


def document(settings) -> dict:
    """The document for this server's settings (limits as configured)."""
    nq = settings.max_questions
    systemone = decision_route(
        "systemone", "decisions in TypeSafe's System One contract",
        s.systemone_request(nq), s.systemone_response(), s.VALIDATION, s.DETAIL)
    # /v1/decisions renders validation as 400 in OpenAI's envelope
    decisions = decision_route(
        "decisions", "decisions in OpenAI's Decisions contract",
        s.decisions_request(nq), s.decisions_response(), s.OPENAI_ERROR, s.OPENAI_ERROR,
        drop=("422",))
    each = "".join(f"{said}, " for said in kinds.stated_limits(settings))
    get = {
        "/health": {"get": {
            "summary": "readiness: 200 once warm-up has answered every question type",
            "operationId": "health", "security": [],
            "parameters": [{"name": "live", "in": "query", "required": False,
                            "schema": {"type": "string"},
                            "description": "1: liveness (200 as soon as the shim is up)"}],
            "responses": {"200": response("ready (or live)", s.HEALTH),
                          "503": response("warming, failed, draining or unresponsive",
                                          s.HEALTH)}}},
        "/v1/models": {"get": {
            "summary": "the concrete model name and its aliases", "operationId": "models",
            "responses": {"200": response("the models", s.MODELS), **auth_errors(s.DETAIL),
                          "503": response("draining after SIGTERM", s.DETAIL, headers=RETRY)}}},
        "/metrics": {"get": {
            "summary": "Prometheus metrics, text exposition format 0.0.4 (docs/metrics.md)",
            "operationId": "metrics",
            "responses": {"200": response("the metrics", {"type": "string"},
                                        "text/plain; version=0.0.4; charset=utf-8"),
                          **auth_errors(s.DETAIL)}}},
        "/openapi.json": {"get": {
            "summary": "this document", "operationId": "openapi",
            "responses": {"200": response("the OpenAPI document", {"type": "object"}),
                          **auth_errors(s.DETAIL)}}},
        **try_page(),
    }
    for item in get.values():  # HEAD wherever GET (RFC 9110): its status and headers, no body
        got = item["get"]
        item["head"] = {**{k: v for k, v in got.items() if k in ("security",)},
                        "summary": f"{got['summary']} (status and headers only)",
                        "operationId": got["operationId"] + "_head",
                        "responses": {code: {"description": r["description"]}
                                      for code, r in got["responses"].items()}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "onepass", "version": "1",
                 "description": "Typed decisions from one forward pass on vLLM: TypeSafe's System "
                 f"One and OpenAI's Decisions APIs. Limits: {nq} questions per request, "
                 f"{settings.max_reads} calls of the model (every step counted), "
                 f"{settings.max_prompt_tokens or 'no limit of'} tokens of work, {each}"
                 f"{settings.max_body_bytes} bytes per body "
                 f"({settings.max_decoded_bytes} decoded; a vision profile's images beside), "
                 f"{settings.max_json_values} JSON values (docs/http-edge.md#limits)."},
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}, {}],  # {}: the key is required only when one is set
        "components": {"securitySchemes": {"bearer": {
            "type": "http", "scheme": "bearer",
            "description": "required when the server has ONEPASS_API_KEY set (without it "
            "the server listens on loopback only, unless started with --allow-no-key)"}}},
        "paths": {"/v1/systemone": systemone, "/systemone": alias(systemone, "systemone_alias"),
                  "/v1/decisions": decisions, "/decisions": alias(decisions, "decisions_alias"),
                  **get},
    }


def try_page() -> dict:
    """The try-it page's routes (docs/try-page.md): public, 404 when the page is off."""
    off = {"403": response(NOT_LOCAL, s.DETAIL),
           "404": response("the try-it page is off on this server (--try-page off)", s.DETAIL)}
    files = {"/": ("the try-it page", "try_root", "text/html"),
             "/try": ("the try-it page", "try_page", "text/html"),
             "/try/app.js": ("the try-it page's script", "try_script", "text/javascript"),
             **{f"/try/{name}": (f"the try-it page's script module {name}",
                                 f"try_script_{name.removesuffix('.js')}", "text/javascript")
                for name in tryit.MODULES if name != "app.js"},
             "/try/style.css": ("the try-it page's style sheet", "try_style", "text/css")}
    routes = {path: {"get": {"summary": summary, "operationId": op, "security": [],
                             "responses": {"200": response(summary, {"type": "string"}, ctype),
                                           **off}}}
              for path, (summary, op, ctype) in files.items()}
    routes["/try/info"] = {"get": {
        "summary": "what the try-it page offers here: whether a key is needed; with the key (or "
        "auth off) the served question types, vision, attention modes and limits",
        "operationId": "try_info", "security": [{"bearer": []}, {}],
        "responses": {"200": response("the page's info", {"type": "object"}), **off}}}
    return routes


def alias(route: dict, operation_id: str) -> dict:
    return {"post": {**route["post"], "operationId": operation_id}}
