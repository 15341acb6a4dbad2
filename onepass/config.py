"""Configuration: flags, environment and serve_config.json merged once into frozen objects.

Owns: the table of every setting (type, default, meaning) and reading os.environ; the profile
file is read and checked by profile.py.
Never: changes after start-up; no other module reads os.environ.
In: argv, environ, the config file. Out: Settings (with its Profile) or ConfigError.
"""
from __future__ import annotations

import argparse
import math
import os
from dataclasses import field, make_dataclass

from . import kinds
from .edge import admission, real_client
from .body.limits import MAX_VALUES as MAX_JSON_VALUES

# The profile's names, importable from here as before (shim.py, tools and tests use them).
from .profile import (MAX_REPEAT, Calibration, ConfigError, Layout, Profile,  # noqa: F401
                      check_calibration, check_layout, expand_labels, load_profile)

EXIT_BAD_CONFIG = 3
# Every decision's deadline unless a client asks for a shorter one: far past a decision's usual
# seconds, with room for a thought decoded on a CPU, so that only work nobody still waits for
# is cut (docs/http-edge.md#deadlines).
DEFAULT_DEADLINE_S = 180.0


# name: (type, default, environment variable, meaning)
SETTINGS = {
    "config": (str, "serve_config.json", "ONEPASS_CONFIG", "path of the profile file"),
    "profile": (str, "", "ONEPASS_PROFILE", "profile name; empty = the file's default_profile"),
    "host": (str, "127.0.0.1", "ONEPASS_HOST", "address the shim listens on"),
    "port": (int, 8741, "ONEPASS_PORT", "port the shim listens on (0 = any free port)"),
    "vllm": (str, "http://127.0.0.1:8742", "ONEPASS_VLLM_URL", "base URL of the vLLM server"),
    # the state limit (8 MiB) and 4 MiB for questions and the rest; a vision profile's images
    # are allowed beside both (its max_images x max_bytes, as base64)
    "max_body_bytes": (int, 12 << 20, "ONEPASS_MAX_BODY_BYTES",
                       "largest request body on the wire, images aside"),
    "max_decoded_bytes": (int, 12 << 20, "ONEPASS_MAX_DECODED_BYTES",
                          "largest request body after gzip/zstd decoding, images aside"),
    "max_json_values": (int, MAX_JSON_VALUES, "ONEPASS_MAX_JSON_VALUES",
                        "values in a request's JSON (strings, numbers, objects, arrays), counted "
                        "before it is parsed; more: 413"),
    "body_budget_bytes": (int, 128 << 20, "ONEPASS_BODY_BUDGET_BYTES",
                          "bytes request bodies hold while read (claimed as they arrive), "
                          "decoded and parsed, every request together; a request waits for room"),
    "body_budget_per_source": (int, 0, "ONEPASS_BODY_BUDGET_PER_SOURCE",
                               "bytes of the body budget one address's requests hold together; "
                               "a body's first claim past it is a 529 at once (0 = a quarter of "
                               "body_budget_bytes; a request larger than it goes beside the "
                               "budget, one per address)"),
    "body_budget_wait_s": (float, 5.0, "ONEPASS_BODY_BUDGET_WAIT_S",
                           "longest wait for room in the body budget; then 529 with "
                           "retry-after-ms"),
    "max_questions": (int, 400, "ONEPASS_MAX_QUESTIONS", "most questions in one request"),
    "max_in_flight": (int, 64, "ONEPASS_MAX_IN_FLIGHT",
                      "requests answered at once (a slot is taken once the body is read); more "
                      "get 529 with retry-after-ms"),
    "max_in_flight_per_source": (int, 0, "ONEPASS_MAX_IN_FLIGHT_PER_SOURCE",
                                 "requests answered at once from one address; more get 529 "
                                 "(0 = a quarter of max_in_flight; behind a proxy the client's "
                                 "address when the proxy is in trusted_proxies)"),
    # the door to the engine (edge/door.py): the in-flight requests past what may run wait, and
    # a wait grown too long is refused (529) before any work, so an overload without deadlines
    # serves the fresh requests in time instead of every one late (docs/http-edge.md#the-queue)
    "max_running": (int, 32, "ONEPASS_MAX_RUNNING",
                    "most decisions the engine answers at once; the other in-flight ones wait at "
                    "the door, oldest first, newest first once the queue stands (0 = no door)"),
    "running_goal_s": (float, 2.0, "ONEPASS_RUNNING_GOAL_S",
                       "run only as many decisions at once as finish in about this time at the "
                       "engine's measured pace, up to max_running (0 = max_running always)"),
    "queue_target_s": (float, 0.5, "ONEPASS_QUEUE_TARGET_S",
                       "longest wait at the door while the queue stands (it has not been empty "
                       "for queue_interval_s); past it 529 with retry-after-ms (a decision's "
                       "expected time when longer)"),
    "queue_interval_s": (float, 2.0, "ONEPASS_QUEUE_INTERVAL_S",
                         "longest wait at the door while the queue does not stand; past it 529 "
                         "(twice a decision's expected time when longer)"),
    "max_reads": (int, 800, "ONEPASS_MAX_READS",
                  "calls of vLLM one request may need, every step counted: reads, box edges, "
                  "thoughts, the reads after them, generations (more: 422 before the first)"),
    "max_prompt_tokens": (int, 1 << 20, "ONEPASS_MAX_PROMPT_TOKENS",
                          "tokens of work one request may cost, priced before its first read: "
                          "the prompt tokens the engine computes for its label reads (a shared "
                          "head once), 64 a /tokenize call, 1 per 64 parts fitting ranks or "
                          "scans (more: 422; 0 = no token budget)"),
    "max_connections": (int, 256, "ONEPASS_MAX_CONNECTIONS",
                        "open client connections; past it the longest-idle (else the slowest "
                        "sending) one is closed, or the newcomer gets 529"),
    "max_connections_per_source": (int, 0, "ONEPASS_MAX_CONNECTIONS_PER_SOURCE",
                                   "open client connections from one address; past it its newest "
                                   "gets 503 (0 = a quarter of max_connections, at least 16)"),
    "trusted_proxies": (str, "", "ONEPASS_TRUSTED_PROXIES",
                        "proxies whose word names the client, comma-separated addresses or CIDR "
                        "blocks: from them a PROXY header (v1/v2) and X-Forwarded-For (its "
                        "rightmost entry not listed here) name the address every per-address "
                        "share keys on; empty = none (every client is its TCP peer)"),
    "allow_no_key": (str, "off", "ONEPASS_ALLOW_NO_KEY",
                     "on (or 1, or the bare flag): listen on an address other than loopback "
                     "without ONEPASS_API_KEY, auth off on purpose; off: such a start is refused"),
    "engine_timeout_s": (float, 60.0, "ONEPASS_ENGINE_TIMEOUT_S", "longest wait for one vLLM call"),
    # vLLM's heartbeat (backend/heartbeat.py): a hung but living vLLM takes /health to 503
    "engine_probe_interval_s": (float, 5.0, "ONEPASS_ENGINE_PROBE_INTERVAL_S",
                                "once ready, the pause between GET /health probes of vLLM"),
    "engine_probe_bound_s": (float, 10.0, "ONEPASS_ENGINE_PROBE_BOUND_S",
                             "longest wait for vLLM's answer to a probe; unanswered (or not "
                             "200), /health is 503 `unresponsive` until a probe is answered"),
    "request_timeout_s": (float, DEFAULT_DEADLINE_S, "ONEPASS_REQUEST_TIMEOUT_S",
                          "deadline of a whole decision from its first byte, 504 past it (0 = "
                          "none; a request's x-envoy-expected-rq-timeout-ms may set a shorter "
                          "one, never a longer)"),
    "engine_bytes_in_flight": (int, 256 << 20, "ONEPASS_ENGINE_BYTES_IN_FLIGHT",
                               "bytes of request bodies on their way to vLLM at once, every "
                               "request together (a larger body goes alone)"),
    "engine_bytes_per_request": (int, 64 << 20, "ONEPASS_ENGINE_BYTES_PER_REQUEST",
                                 "bytes of one request's bodies on their way to vLLM at once, "
                                 "within the cap for every request (a larger body goes alone)"),
    "engine_connections": (int, 32, "ONEPASS_ENGINE_CONNECTIONS",
                           "keep-alive connections to vLLM (and parallel reads)"),
    "engine_calls_per_request": (int, 0, "ONEPASS_ENGINE_CALLS_PER_REQUEST",
                                 "engine calls one request has running at once; its others "
                                 "wait, the requests taking turns (0 = half of "
                                 "engine_connections)"),
    "client_timeout_s": (float, 30.0, "ONEPASS_CLIENT_TIMEOUT_S",
                         "longest time for a client to send a whole request, head and body"),
    "keepalive_timeout_s": (float, 75.0, "ONEPASS_KEEPALIVE_TIMEOUT_S",
                            "an idle keep-alive connection is closed after this (keep it above "
                            "a load balancer's idle timeout)"),
    "drain_timeout_s": (float, 30.0, "ONEPASS_DRAIN_TIMEOUT_S",
                        "on SIGTERM, longest wait for the requests in flight before exiting"),
    "drain_refusal": (str, "503", "ONEPASS_DRAIN_REFUSAL",
                      "while draining, a new request gets 503 with retry-after-ms (503), or its "
                      "connection is closed unanswered (close: behind a balancer that retries "
                      "such a request elsewhere, and only such)"),
    "log_level": (str, "info", "ONEPASS_LOG_LEVEL", "debug, info, warning or error"),
    # reported only (onepass_build_info): the shim cannot ask vLLM, serve.sh passes its choice
    "vllm_dtype": (str, "unknown", "ONEPASS_VLLM_DTYPE", "the dtype vLLM serves in, as reported "
                   "by the onepass_build_info metric (serve.sh passes the one it chose)"),
    "vllm_scheduling": (str, "fcfs", "ONEPASS_VLLM_SCHEDULING",
                        "vLLM's --scheduling-policy (serve.sh passes the one it starts vLLM "
                        "with): priority (each generation call carries its request's body "
                        "bytes sent so far, its own included, as its priority, so vLLM's queue "
                        "serves the least-served request first) or fcfs (no priority: first "
                        "come, first served)"),
    "vllm_device": (str, "unknown", "ONEPASS_VLLM_DEVICE", "the device vLLM runs on (cpu or "
                    "gpu), as reported by onepass_build_info (serve.sh passes it)"),
    "image_links": (str, "public", "ONEPASS_IMAGE_LINKS",
                    "image links: public (fetch from public addresses only), off (refuse every "
                    "link), or all (private and loopback addresses too: trusted networks, tests)"),
    "image_links_http": (str, "false", "ONEPASS_IMAGE_LINKS_HTTP",
                         "true: image links may use plain http (default: https only)"),
    "image_link_ports": (str, "80,443", "ONEPASS_IMAGE_LINK_PORTS",
                         "the ports image links and their redirects may use, comma-separated "
                         "(another is refused before any lookup or connection)"),
    "image_fetch_timeout_s": (float, 5.0, "ONEPASS_IMAGE_FETCH_TIMEOUT_S",
                              "longest wait for each connect and read of an image link"),
    "try_page": (str, "on", "ONEPASS_TRY_PAGE",
                 "on: GET / and /try serve the try-it page (docs/try-page.md); off (or 0): "
                 "those routes are 404"),
}
# each question kind's own settings (kinds/: its caps and token budgets), after the table's
KIND_SETTINGS = {name: row for kind in kinds.KINDS.values() for name, row in kind.settings.items()}
SETTINGS.update(KIND_SETTINGS)
IMAGE_LINKS = ("public", "off", "all")
SCHEDULING = ("fcfs", "priority")  # vLLM's policies: a priority it does not schedule by is moot
DRAIN_REFUSALS = ("503", "close")
ON_OFF = {"on": "on", "1": "on", "true": "on", "off": "off", "0": "off", "false": "off"}
SECRET_ENV = "ONEPASS_API_KEY"  # read from the environment only, never from argv or the file
# The secrets, in the table's style without a flag: each read from its environment variable only
# (a flag would show it in `ps`), never in a repr, a log line, /health or an error.
# name: (environment variable, meaning)
SECRETS = {
    "api_key": (SECRET_ENV, "the key(s) a client must send as Authorization: Bearer (unset = "
                "auth off, on loopback only unless --allow-no-key; \"new,old\" during a rotation)"),
    "vllm_key": ("ONEPASS_VLLM_KEY", "the key vLLM requires, sent as Authorization: Bearer on "
                 "every call to it (serve.sh makes a fresh one at each start and gives it to vLLM "
                 "and the shim only; unset = a vLLM that requires none)"),
}
SWITCHES = ("allow_no_key",)  # a bare flag means on


# Settings: one field per row of the table, then the secrets (never in a repr, so never in a log
# line by accident) and the profile.
Settings = make_dataclass("Settings", [(name, row[0]) for name, row in SETTINGS.items()]
                          + [(name, str, field(repr=False)) for name in SECRETS]
                          + [("model", Profile)], frozen=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="shim.py", description="onepass: System One decisions from vLLM.",
        epilog=f"The API key is read from ${SECRET_ENV} only (unset or empty = auth off, on "
        "loopback only unless --allow-no-key; a comma separates two keys during a rotation), "
        f"vLLM's from ${SECRETS['vllm_key'][0]} only (serve.sh makes it).")
    for name, (kind, default, env, meaning) in SETTINGS.items():
        bare = {"nargs": "?", "const": "on"} if name in SWITCHES else {}
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=kind, default=None,
                            help=f"{meaning} (env {env}, default {default!r})", **bare)
    parser.add_argument("--check-config", action="store_true",
                        help="judge the settings, the profile file and the key against the "
                        "address, then exit: 0, or 3 saying what is wrong (serve.sh, before vLLM)")
    return parser.parse_args(argv)


def load(argv: list[str] | None = None, environ: dict | None = None) -> Settings:
    """Merge flags over environment over defaults, then read the profile file."""
    args, env = parse_args(argv), os.environ if environ is None else environ
    values = {}
    for name, (kind, default, var, _) in SETTINGS.items():
        raw = getattr(args, name)
        if raw is None and env.get(var):
            try:
                raw = kind(env[var])
            except ValueError:
                raise ConfigError(f"{var}={env[var]!r} is not a valid {kind.__name__}") from None
        values[name] = default if raw is None else raw
    for name in ("port", "max_body_bytes", "max_decoded_bytes", "max_questions", "max_in_flight",
                 "engine_connections", "engine_bytes_in_flight", "engine_bytes_per_request",
                 "max_reads", "max_connections", "engine_timeout_s", "client_timeout_s",
                 "max_json_values", "body_budget_bytes", "body_budget_wait_s",
                 "keepalive_timeout_s", "drain_timeout_s", "queue_target_s",
                 "queue_interval_s", "engine_probe_interval_s", "engine_probe_bound_s",
                 *KIND_SETTINGS):
        if not 0 < values[name] < math.inf and not (name == "port" and values[name] == 0):
            raise ConfigError(f"{name} must be positive and finite, got {values[name]}")
    if values["max_prompt_tokens"] < 0 or values["engine_calls_per_request"] < 0:
        raise ConfigError("max_prompt_tokens and engine_calls_per_request must be 0 (none, the "
                          "default share) or more")
    if values["max_running"] < 0 or not 0 <= values["running_goal_s"] < math.inf:
        raise ConfigError("max_running and running_goal_s must be 0 (none) or more")
    if not 0 <= values["request_timeout_s"] < math.inf:
        raise ConfigError(f"request_timeout_s must be 0 or positive, got "
                          f"{values['request_timeout_s']}")
    if values["image_links"] not in IMAGE_LINKS:
        raise ConfigError(f"image_links must be one of {', '.join(IMAGE_LINKS)}")
    if values["vllm_scheduling"] not in SCHEDULING:
        raise ConfigError(f"vllm_scheduling must be one of {', '.join(SCHEDULING)}")
    if values["drain_refusal"] not in DRAIN_REFUSALS:
        raise ConfigError(f"drain_refusal must be one of {', '.join(DRAIN_REFUSALS)}")
    values["try_page"] = ON_OFF.get(values["try_page"].lower(), values["try_page"])
    if values["try_page"] not in ("on", "off"):
        raise ConfigError("try_page must be on or off (1 or 0)")
    if values["image_links_http"] not in ("true", "false"):
        raise ConfigError("image_links_http must be true or false")
    if not 0 < values["image_fetch_timeout_s"] <= 60:
        raise ConfigError("image_fetch_timeout_s must be in (0, 60]")
    try:
        port_list(values["image_link_ports"])
    except ValueError:
        raise ConfigError("image_link_ports must be ports from 1 to 65535, comma-separated"
                          ) from None
    try:
        real_client.networks(values["trusted_proxies"])
    except ValueError as e:
        raise ConfigError(f"trusted_proxies: {e}") from None
    values["vllm"] = values["vllm"].rstrip("/")
    api_key = check_exposure(values, env.get(SECRET_ENV, ""))
    vllm_key = env.get(SECRETS["vllm_key"][0], "")
    if not (vllm_key.isascii() and vllm_key.isprintable()):  # a header carries no other
        raise ConfigError(f"{SECRETS['vllm_key'][0]} holds characters a header cannot carry")
    profile_name, profile = load_profile(values["config"], values["profile"])
    values["profile"] = profile_name
    return Settings(api_key=api_key, vllm_key=vllm_key, model=profile, **values)


def port_list(text: str) -> tuple[int, ...]:
    """"80,443" -> (80, 443); ValueError unless every item is a port from 1 to 65535."""
    items = [item.strip() for item in text.split(",")]
    if not all(item.isascii() and item.isdigit() and 0 < int(item) < 65536 for item in items):
        raise ValueError(f"not a list of ports: {text[:40]!r}")
    return tuple(map(int, items))


def check_exposure(values: dict, api_key: str) -> str:
    """The key, once it holds one; no key on an address other than loopback only when
    allow_no_key says so (anything that reaches that address could use the model)."""
    for name in ("max_connections_per_source", "max_in_flight_per_source",
                 "body_budget_per_source"):
        if values[name] < 0:
            raise ConfigError(f"{name} must be 0 (the default share) or more")
    values["allow_no_key"] = ON_OFF.get(values["allow_no_key"].lower(), values["allow_no_key"])
    if values["allow_no_key"] not in ("on", "off"):
        raise ConfigError("allow_no_key must be on or off (1 or 0)")
    if api_key and not admission.keys(api_key):
        raise ConfigError(f"{SECRET_ENV} is set but holds no key (only commas and spaces)")
    if not api_key and values["allow_no_key"] == "off" and not admission.binds_loopback(
            values["host"]):
        raise ConfigError(
            f"refusing to listen on {values['host'] or 'every address'!r} (not loopback) with "
            f"auth off: set {SECRET_ENV}, or pass --allow-no-key (ONEPASS_ALLOW_NO_KEY=1) to "
            "serve without a key on purpose")
    return api_key
