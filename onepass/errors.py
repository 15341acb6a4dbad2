"""The error catalogue: every failure the shim can answer with, as one exception family.

Owns: the exception classes, each with an HTTP status, a machine type and a message that names
the field, the limit and the value given.
Never: renders bodies (the adapters do, through server.render_error) or logs request content.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One validation finding; `loc` is the path inside the body, without the leading "body"."""
    loc: tuple[str | int, ...]
    msg: str
    type: str


class OnepassError(Exception):
    status = 500
    error_type = "internal_error"
    code = None  # OpenAI's machine code, where one applies (model_not_found, ...)

    def __init__(self, message: str, *, retry_after_ms: int | None = None):
        super().__init__(message)
        self.message = message
        self.retry_after_ms = retry_after_ms


class InvalidRequest(OnepassError):
    """The body is not a valid request. Carries every problem found, in body order."""
    status = 422
    error_type = "invalid_request_error"

    def __init__(self, problems: list[Problem]):
        super().__init__("; ".join(f"{'.'.join(map(str, p.loc))}: {p.msg}" for p in problems))
        self.problems = tuple(problems)


class OverBudget(InvalidRequest):
    """The engine plugin refused a two-way read longer than its one-step budget; the budget
    comes from the plugin's typed refusal (never from its message), so the pipeline can fit the
    question to it and read again."""

    def __init__(self, problems: list[Problem], budget_tokens: int):
        super().__init__(problems)
        self.budget_tokens = budget_tokens


class BadRequest(OnepassError):
    """A well-formed request this server cannot honour as asked (e.g. a two-way read without the
    engine plugin, or two different attention modes)."""
    status = 400
    error_type = "invalid_request_error"


class AuthMissing(OnepassError):
    """No bearer key (no Authorization header, or another scheme): 401 with RFC 6750's
    challenge, which names no error when no credentials came."""
    status = 401
    error_type = "authentication_error"
    challenge = 'Bearer realm="onepass"'  # sent as WWW-Authenticate


class AuthInvalid(OnepassError):
    status = 401
    error_type = "authentication_error"
    challenge = 'Bearer realm="onepass", error="invalid_token"'


class Forbidden(OnepassError):
    """Auth is off and the request is not local: a Host other than localhost or a loopback
    address (DNS rebinding), or an Origin of another site (a page's cross-site post)."""
    status = 403
    error_type = "permission_error"


class NotFound(OnepassError):
    status = 404
    error_type = "not_found"


class ModelNotFound(NotFound):
    """The request names a model this server does not serve."""
    code = "model_not_found"


class MethodNotAllowed(OnepassError):
    """A method the route does not serve (any method, TRACE and CONNECT included)."""
    status = 405
    error_type = "method_not_allowed"

    def __init__(self, message: str, allow: tuple = ()):
        super().__init__(message)
        self.allow = allow  # the route's methods, sent as the Allow header


class MalformedHttp(OnepassError):
    """The request's HTTP framing is broken or ambiguous (RFC 9112): answered once, and the
    connection is closed, since what follows on it cannot be trusted to be a new request."""
    status = 400
    error_type = "bad_request"


class HeaderTooLarge(MalformedHttp):
    status = 431
    error_type = "request_header_fields_too_large"


class TargetTooLong(MalformedHttp):
    status = 414
    error_type = "uri_too_long"


class RequestTimeout(OnepassError):
    """The client did not send its whole request (head and body) within the client timeout."""
    status = 408
    error_type = "request_timeout"


class PayloadTooLarge(OnepassError):
    status = 413
    error_type = "request_too_large"


class UnsupportedMediaType(OnepassError):
    status = 415
    error_type = "unsupported_media_type"


class Overloaded(OnepassError):
    """Too many requests in flight, or still warming up: clients retry after a pause."""
    status = 529
    error_type = "overloaded_error"


class SourceOverCap(OnepassError):
    """One client address holds its cap of open connections: its newest one is answered so and
    closed, and no other client's connection is closed for it."""
    status = 503
    error_type = "service_unavailable"


class ShuttingDown(OnepassError):
    """SIGTERM: the shim answers what is in flight and takes nothing new; clients retry
    elsewhere (behind a load balancer, another instance answers)."""
    status = 503
    error_type = "service_unavailable"


class NotReady(OnepassError):
    """The start-up guard failed; the reason stays until the shim is restarted."""
    status = 503
    error_type = "service_unavailable"


class EngineUnavailable(OnepassError):
    """vLLM cannot be reached or timed out."""
    status = 503
    error_type = "engine_unavailable"


class EngineFailed(OnepassError):
    """vLLM answered, but not with a usable result."""
    status = 502
    error_type = "engine_error"


class EngineRefused(EngineFailed):
    """vLLM refused a call with a 4xx of its own (not one the shim reads as a request's fault):
    what the call asked for is not served by this engine's configuration. At start-up it turns
    an optional capability off (backend/probes.py); under a request it is a 502 like any
    engine failure."""


class DeadlineExceeded(OnepassError):
    """The decision did not finish by its deadline (the server's --request-timeout-s or the
    request's x-envoy-expected-rq-timeout-ms): its work stopped; a retry may be sent."""
    status = 504
    error_type = "deadline_exceeded"

    def __init__(self, message: str = "the decision did not finish by its deadline; its work "
                 "stopped"):
        super().__init__(message)


class ClientClosed(OnepassError):
    """The client closed its connection while its decision ran: its work stops, nothing is
    sent, and the access log says 499 (nginx's "client closed request")."""
    status = 499
    error_type = "client_closed_request"

    def __init__(self, message: str = "the client closed the connection; its work stopped"):
        super().__init__(message)
