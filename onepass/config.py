"""Configuration: flags, environment and serve_config.json merged once into frozen objects.

Owns: the table of every setting (type, default, meaning), reading os.environ, checking the
profile file (unknown keys are errors).
Never: changes after start-up; no other module reads os.environ.
In: argv, environ, the config file. Out: Settings (with its Profile) or ConfigError.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
from dataclasses import MISSING, dataclass, field, fields, make_dataclass

EXIT_BAD_CONFIG = 3


class ConfigError(Exception):
    pass


# name: (type, default, environment variable, meaning)
SETTINGS = {
    "config": (str, "serve_config.json", "ONEPASS_CONFIG", "path of the profile file"),
    "profile": (str, "", "ONEPASS_PROFILE", "profile name; empty = the file's default_profile"),
    "host": (str, "127.0.0.1", "ONEPASS_HOST", "address the shim listens on"),
    "port": (int, 8741, "ONEPASS_PORT", "port the shim listens on (0 = any free port)"),
    "vllm": (str, "http://127.0.0.1:8742", "ONEPASS_VLLM_URL", "base URL of the vLLM server"),
    "max_body_bytes": (int, 32 << 20, "ONEPASS_MAX_BODY_BYTES", "largest request body on the wire"),
    "max_decoded_bytes": (int, 64 << 20, "ONEPASS_MAX_DECODED_BYTES",
                          "largest request body after gzip/zstd decoding"),
    "max_questions": (int, 400, "ONEPASS_MAX_QUESTIONS", "most questions in one request"),
    "max_in_flight": (int, 64, "ONEPASS_MAX_IN_FLIGHT",
                      "requests answered at once; more get 529 with retry-after-ms"),
    "max_reads": (int, 800, "ONEPASS_MAX_READS", "vLLM reads one request may need (more: 422)"),
    "max_connections": (int, 256, "ONEPASS_MAX_CONNECTIONS",
                        "open client connections; past it the longest-idle (else the slowest "
                        "sending) one is closed, or the newcomer gets 529"),
    "engine_timeout_s": (float, 60.0, "ONEPASS_ENGINE_TIMEOUT_S", "longest wait for one vLLM call"),
    "engine_connections": (int, 32, "ONEPASS_ENGINE_CONNECTIONS",
                           "keep-alive connections to vLLM (and parallel reads)"),
    "client_timeout_s": (float, 30.0, "ONEPASS_CLIENT_TIMEOUT_S",
                         "longest time for a client to send a whole request, head and body"),
    "keepalive_timeout_s": (float, 75.0, "ONEPASS_KEEPALIVE_TIMEOUT_S",
                            "an idle keep-alive connection is closed after this (keep it above "
                            "a load balancer's idle timeout)"),
    "drain_timeout_s": (float, 30.0, "ONEPASS_DRAIN_TIMEOUT_S",
                        "on SIGTERM, longest wait for the requests in flight before exiting"),
    "log_level": (str, "info", "ONEPASS_LOG_LEVEL", "debug, info, warning or error"),
    "image_links": (str, "public", "ONEPASS_IMAGE_LINKS",
                    "image links: public (fetch from public addresses only), off (refuse every "
                    "link), or all (private and loopback addresses too: trusted networks, tests)"),
    "image_links_http": (str, "false", "ONEPASS_IMAGE_LINKS_HTTP",
                         "true: image links may use plain http (default: https only)"),
    "image_fetch_timeout_s": (float, 5.0, "ONEPASS_IMAGE_FETCH_TIMEOUT_S",
                              "longest wait for each connect and read of an image link"),
}
IMAGE_LINKS = ("public", "off", "all")
SECRET_ENV = "ONEPASS_API_KEY"  # read from the environment only, never from argv or the file


STATE_SELECTIONS = ("bm25", "head_tail")
MAX_PRIOR_NATS = 50.0  # label_prior's bound: a prior beyond it would be a bug, not a fit
MAX_ORDERS = 8  # layout.orders' bound: an 8-option choice can be read in every cyclic order
MAX_REPEAT = 4  # layout.repeat's bound; a re-read doubles repeat up to it (serve.sh sizes
# vLLM's images per prompt by it: every copy of the state shows every image)  # fitting.py: BM25 per question, or head and tail


@dataclass(frozen=True)
class Layout:
    """Prompt techniques (layout.py); each is off unless a profile turns it on."""
    guard_line: bool = True  # the system line saying the record is data, not instructions
    question_first: bool = False  # the question (and options) before the record
    repeat: int = 1  # record and question written this many times in the user turn
    orders: int = 1  # choice options listed in up to this many rotated orders (at most one
    # per option: orders >= n reads every cyclic order of an n-option choice) ...
    orders_as_reads: bool = False  # ... in one prompt (own labels per copy) or one read each
    shrink: float = 0.0  # toward uniform, times the disagreement between the orders
    compact_json: bool = True  # a JSON state as compact JSON, else indented
    state_selection: str = "bm25"  # a state too long for the context: what each question keeps


@dataclass(frozen=True)
class Calibration:
    """Applied to label log-probs (readout.py); `fitted` says what was fitted on what data."""
    temperature: dict  # noul / choice / score (/ image: any kind, images sent) -> T
    noul_floor: float = 0.0  # 0, or in (0.5, 1): the chosen yes/no side reported at least this
    reread_below: float = 0.0  # choice/score confidence under this: read again (0 = off)
    fitted: dict | None = None
    # noul / choice -> {option count: nats taken off the label log-prob at each listing
    # position (A, B, ... or yes, no)}: the model's measured preference for a position
    label_prior: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Vision:
    """A vision-language profile's image settings (images reach vLLM as data URLs only)."""
    placeholder: str  # what the model's chat template writes for an image part (`<image>`)
    reserved: tuple[str, ...]  # image token strings that client text may not carry as such
    tokens_per_image: int  # the most prompt tokens one image takes after vLLM's processor
    max_images: int = 4  # per request, every form counted
    max_bytes: int = 20 * 1024 * 1024  # per image, as sent or fetched
    max_pixels: int = 50_000_000  # per image, from its header: larger is refused (not decoded)
    processor_kwargs: dict | None = None  # vLLM's --mm-processor-kwargs (the scaling cap)


@dataclass(frozen=True)
class Profile:
    """One model's serving profile from serve_config.json."""
    served_model_name: str  # the name vLLM serves (sent to vLLM)
    model_name: str  # the concrete name answers carry
    aliases: tuple[str, ...]  # request names resolved to model_name (jev-latest, ...)
    description: str
    release_date: str
    chat_template: dict  # system / user / assistant: prompt text around each turn
    system_prompt: str
    noul_labels: tuple[str, str]
    choice_labels: tuple[str, ...]  # candidates, in order; start-up keeps the single-token ones
    score_labels: tuple[str, ...]  # "A-Z" / "AA-ZZ" style ranges are expanded on load
    layout: Layout
    calibration: Calibration
    max_model_len: int
    tokenizer_contract: str | None  # tokenizer/ file checked at start-up; None: not recorded yet
    trained_two_way: bool  # the model was trained to read two-way (bidirectional prefill)
    attention_mode: str  # the default mode; "bidirectional" only when trained_two_way
    two_way_probes: tuple  # {state, question, reference: [P(yes), P(no)] or null}, read at start
    provenance: dict  # which values were fitted or chosen from measurements, on what, and which not
    vision: Vision | None = None  # None: a text-only model (image requests get a 422)
    embedded: str | None = None  # the checkpoint serve.sh builds when no model is given
    vllm_args: tuple[str, ...] = ()  # the flags this profile needs from vLLM (serve.sh adds them)


# Settings: one field per row of the table, then the key (never in a repr, so never in a log line
# by accident) and the profile.
Settings = make_dataclass("Settings", [(name, row[0]) for name, row in SETTINGS.items()]
                          + [("api_key", str, field(repr=False)), ("model", Profile)], frozen=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="shim.py", description="onepass: System One decisions from vLLM.",
        epilog=f"The API key is read from ${SECRET_ENV} only (unset or empty = auth off).")
    for name, (kind, default, env, meaning) in SETTINGS.items():
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=kind, default=None,
                            help=f"{meaning} (env {env}, default {default!r})")
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
                 "engine_connections", "max_reads", "max_connections", "engine_timeout_s",
                 "client_timeout_s", "keepalive_timeout_s", "drain_timeout_s"):
        if not 0 < values[name] < math.inf and not (name == "port" and values[name] == 0):
            raise ConfigError(f"{name} must be positive and finite, got {values[name]}")
    if values["image_links"] not in IMAGE_LINKS:
        raise ConfigError(f"image_links must be one of {', '.join(IMAGE_LINKS)}")
    if values["image_links_http"] not in ("true", "false"):
        raise ConfigError("image_links_http must be true or false")
    if not 0 < values["image_fetch_timeout_s"] <= 60:
        raise ConfigError("image_fetch_timeout_s must be in (0, 60]")
    values["vllm"] = values["vllm"].rstrip("/")
    profile_name, profile = load_profile(values["config"], values["profile"])
    values["profile"] = profile_name
    return Settings(api_key=env.get(SECRET_ENV, ""), model=profile, **values)


def load_profile(path: str, name: str) -> tuple[str, Profile]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read {path}: {e}") from None
    _check_keys(doc, {"default_profile", "profiles"}, path)
    name = name or doc["default_profile"]
    if name not in doc["profiles"]:
        raise ConfigError(f"{path}: no profile {name!r}; known: {sorted(doc['profiles'])}")
    raw = dict(doc["profiles"][name])
    wanted = {f.name for f in fields(Profile) if f.default is MISSING}
    optional = {f.name for f in fields(Profile)} - wanted
    raw.pop("comment", None)
    _check_keys({k: v for k, v in raw.items() if k not in optional}, wanted,
                f"{path} profile {name!r}")
    for key in ("noul_labels", "choice_labels", "score_labels"):
        raw[key] = expand_labels(raw[key])
    try:
        raw["layout"] = Layout(**raw["layout"])
        raw["calibration"] = Calibration(**raw["calibration"])
        if raw.get("vision") is not None:
            raw["vision"] = Vision(**{k: tuple(v) if k == "reserved" else v
                                      for k, v in raw["vision"].items()})
        profile = Profile(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})
    except TypeError as e:
        raise ConfigError(f"{path} profile {name!r}: {e}") from None
    _check_profile(profile, f"{path} profile {name!r}")
    return name, profile


def expand_labels(specs) -> list[str]:
    """"A-Z" -> A..Z; "AA-ZZ" -> AA, AB, ..., ZZ (each position over its own range)."""
    if not isinstance(specs, list) or not all(isinstance(s, str) and s for s in specs):
        raise ConfigError(f"labels must be a list of non-empty strings, got {specs!r}")
    out = []
    for spec in specs:
        lo, sep, hi = spec.partition("-")
        if not sep or len(lo) != len(hi) or not lo or not (lo + hi).isalnum():
            out.append(spec)
            continue
        out.extend("".join(chars) for chars in itertools.product(
            *(map(chr, range(ord(a), ord(b) + 1)) for a, b in zip(lo, hi))))
    return out


def _check_keys(doc: dict, wanted: set, where: str) -> None:
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: expected an object")
    unknown, missing = set(doc) - wanted, wanted - set(doc)
    if unknown or missing:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}")


def _check_profile(p: Profile, where: str) -> None:
    if set(p.chat_template) != {"system", "user", "assistant"}:
        raise ConfigError(f"{where}: chat_template needs exactly system, user and assistant")
    if not all("{content}" in p.chat_template[k] for k in ("system", "user")):
        raise ConfigError(f"{where}: chat_template system and user need a {{content}} slot")
    if len(p.noul_labels) != 2 or len(p.score_labels) < 10 or len(p.choice_labels) < 2:
        raise ConfigError(f"{where}: need 2 noul labels, 10 score labels, 2+ choice labels")
    if not isinstance(p.provenance, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in p.provenance.items()):
        raise ConfigError(f"{where}: provenance must be an object of setting -> where it came from")
    if p.tokenizer_contract is not None and not isinstance(p.tokenizer_contract, str):
        raise ConfigError(f"{where}: tokenizer_contract must be a path under tokenizer/ or null")
    if p.max_model_len < 16:
        raise ConfigError(f"{where}: max_model_len must be >= 16")
    check_layout(p.layout, where)
    check_calibration(p.calibration, where)
    if p.vision is not None:
        _check_vision(p.vision, where)
    if not all(isinstance(a, str) for a in p.vllm_args):
        raise ConfigError(f"{where}: vllm_args must be a list of strings")
    if p.attention_mode not in ("causal", "bidirectional") or not isinstance(p.trained_two_way,
                                                                            bool):
        raise ConfigError(f"{where}: attention_mode must be causal or bidirectional and "
                          f"trained_two_way true or false")
    if p.attention_mode == "bidirectional" and not p.trained_two_way:
        raise ConfigError(f"{where}: a model not trained for two-way reading cannot default to "
                          f"it (set trained_two_way only for models trained that way)")
    for probe in p.two_way_probes:
        ref = probe.get("reference") if isinstance(probe, dict) else None
        if (not isinstance(probe, dict) or set(probe) != {"state", "question", "reference"}
                or not (ref is None or (isinstance(ref, list) and len(ref) == 2))):
            raise ConfigError(f"{where}: each two_way_probes entry needs state, question and "
                              f"reference (null or [P(yes), P(no)])")


def _check_vision(v: Vision, where: str) -> None:
    ints = (v.tokens_per_image, v.max_images, v.max_bytes, v.max_pixels)
    if not (isinstance(v.placeholder, str) and v.placeholder and v.placeholder in v.reserved
            and all(isinstance(r, str) and r for r in v.reserved)
            and all(type(n) is int and n > 0 for n in ints)
            and (v.processor_kwargs is None or isinstance(v.processor_kwargs, dict))):
        raise ConfigError(f"{where}: vision needs a placeholder listed in reserved, positive "
                          f"tokens_per_image, max_images, max_bytes and max_pixels; got {v}")


def check_layout(layout: Layout, where: str) -> None:
    """Types and ranges of the prompt techniques (also used for per-request overrides)."""
    ok = (isinstance(layout.guard_line, bool) and isinstance(layout.question_first, bool)
          and isinstance(layout.orders_as_reads, bool) and isinstance(layout.compact_json, bool)
          and type(layout.repeat) is int and 1 <= layout.repeat <= MAX_REPEAT
          and type(layout.orders) is int and 1 <= layout.orders <= MAX_ORDERS
          and isinstance(layout.shrink, (int, float)) and 0 <= layout.shrink <= 1
          and layout.state_selection in STATE_SELECTIONS)
    if not ok:
        raise ConfigError(f"{where}: layout needs booleans, repeat 1-{MAX_REPEAT}, orders "
                          f"1-{MAX_ORDERS}, shrink 0-1, state_selection one of {', '.join(STATE_SELECTIONS)}; got {layout}")


def check_calibration(c: Calibration, where: str) -> None:
    temps = c.temperature
    if (not isinstance(temps, dict) or not {"noul", "choice", "score"} <= set(temps)
            or not set(temps) <= {"noul", "choice", "score", "image"}
            or not all(_number(t) and 1e-3 <= t <= 1e3 for t in temps.values())):
        # bounded: log-probs divided by it stay finite floats whatever number a request sends
        raise ConfigError(f"{where}: calibration.temperature needs noul, choice and score in "
                          f"[0.001, 1000] (and may have image: every answer about an image)")
    if not (_number(c.noul_floor) and (c.noul_floor == 0 or 0.5 < c.noul_floor < 1)
            and _number(c.reread_below) and 0 <= c.reread_below <= 1):
        raise ConfigError(f"{where}: noul_floor must be 0 (off) or in (0.5, 1), reread_below in [0, 1]")
    if not (isinstance(c.label_prior, dict) and set(c.label_prior) <= {"noul", "choice"}
            and all(isinstance(per_n, dict) and all(_prior_ok(n, v) for n, v in per_n.items())
                    for per_n in c.label_prior.values())):
        raise ConfigError(f"{where}: label_prior maps noul and/or choice to {{option count: "
                          f"that many numbers within ±{MAX_PRIOR_NATS}}} (nats per position)")


def _prior_ok(n, values) -> bool:
    return (isinstance(n, str) and n.isdigit() and isinstance(values, list)
            and len(values) == int(n) and all(_number(b) and abs(b) <= MAX_PRIOR_NATS
                                              for b in values))


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
