"""Profiles: a model's serving profile from serve_config.json, checked once at start-up.

Owns: Profile, Layout (prompt techniques), Calibration and Vision; reading and checking the
profile file (unknown keys are errors) and a request's kwargs.layout / kwargs.calibration against
the same ranges (check_layout, check_calibration). Label lists are read per registered question
kind with labels of its own (`<kind>_labels`), temperatures name exactly the reading kinds (a
kind the registry does not know fails here, at start-up), and each kind's own calibration
settings (its Tunings: a yes/no floor, a number's confidence fit) are Calibration's fields,
checked by the kind's own rule.
Never: changes after start-up, reads os.environ (config.py does) or answers requests.
In: the config file's path and a profile name. Out: (name, Profile) or ConfigError.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import MISSING, dataclass, field, fields, make_dataclass
from pathlib import Path

from . import kinds, reasoning, tokenizer_contract
from .kinds.base import finite
from .tokenizer_contract import Floor


class ConfigError(Exception):
    pass


ROOT = Path(__file__).resolve().parents[1]  # a tokenizer contract's path is relative to it


STATE_SELECTIONS = ("bm25", "head_tail")  # fitting.py: BM25 per question, or head and tail
PROBE_KEYS = {"state", "question", "reference", "one_way", "tolerance"}  # two_way_probes'
MAX_PRIOR_NATS = 50.0  # label_prior's bound: a prior beyond it would be a bug, not a fit
MAX_ORDERS = 8  # layout.orders' bound: an 8-option choice can be read in every cyclic order
MAX_REPEAT = 4  # layout.repeat's bound; a re-read doubles repeat up to it (serve.sh sizes
# vLLM's images per prompt by it: every copy of the state shows every image)


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
    both_directions: bool = False  # every listing also read backwards: a choice's orders each
    # reversed (with every cyclic order read, a reversed request reads the same prompts), a
    # score's levels also highest first; as reads of their own
    option_sets: bool = False  # a choice's options read as a set, in one read: labels bound by
    # the options' keys, every option at the same positions, seeing only the text before the
    # options and itself (the engine plugin's set read), so their order cannot matter
    compact_json: bool = True  # a JSON state as compact JSON, else indented
    state_selection: str = "bm25"  # a state too long for the context: what each question keeps


@dataclass(frozen=True)
class SharedCalibration:
    """Applied to label log-probs (readout.py); `fitted` says what was fitted on what data."""
    temperature: dict  # each reading kind (/ image: any kind, images sent) -> T
    reread_below: float = 0.0  # a re-read kind's confidence under this: read again (0 = off)
    fitted: dict | None = None
    # a kind with a prior (OwnLabels.prior) -> {option count: nats taken off the label log-prob
    # at each listing position (A, B, ... or yes, no)}: the model's measured preference
    label_prior: dict = field(default_factory=dict)


# The shared fields, then each registered kind's own (kinds' Tunings), defaults as they declare.
Calibration = make_dataclass("Calibration", [(name, object, field(default=t.default)) for name, t
                                             in kinds.calibration_settings().items()],
                             bases=(SharedCalibration,), frozen=True, namespace={
                                 "__module__": __name__, "__doc__": SharedCalibration.__doc__})


@dataclass(frozen=True)
class Vision:
    """A vision-language profile's image settings (images reach vLLM as data URLs only)."""
    placeholder: str  # what the model's chat template writes for an image part (`<image>`)
    reserved: tuple[str, ...]  # image token strings that client text may not carry as such
    tokens_per_image: int  # the most prompt tokens one image takes after vLLM's processor
    max_images: int = 4  # per request, every form counted
    max_bytes: int = 20 * 1024 * 1024  # per image, as sent or fetched
    max_pixels: int = 16_777_216  # per image, from its header: larger is refused (not decoded);
    # 4096 x 4096, 48 MiB as RGB once vLLM's processor decodes it (PIL refuses 179 MP)
    processor_kwargs: dict | None = None  # vLLM's --mm-processor-kwargs (the scaling cap)
    box: dict | None = None  # box questions: convention, confidence map, present temperature
    # (the box kind's check_profile checks it; None: this model is not asked for boxes)


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
    labels: dict  # kind -> its label candidates, in order, from `<kind>_labels` in the file
    # ("A-Z" / "AA-ZZ" style ranges expanded on load; start-up keeps the single-token ones)
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
    reasoning: object = None  # reasoning.Settings: how the model thinks first (None: never)
    head_dtype: str = "float32"  # "model": the lm_head in the served dtype (an opt-out that
    # needs a measurement in provenance); serve.sh runs it in fp32 otherwise
    specials: tuple[str, ...] = ()  # client text never carries these as such: the tokenizer
    # contract's specials, and the guard adds the served added tokens (backend/added_tokens.py)
    token_floor: Floor | None = None  # the contract's: the fewest tokens a text can be

    @property
    def names(self) -> tuple[str, ...]:
        """Every name a request may send: the concrete one, then its aliases."""
        return (self.model_name, *self.aliases)


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
    label_keys = kinds.label_keys()
    wanted = {f.name for f in fields(Profile) if f.default is MISSING} - {"labels"}
    optional = {f.name for f in fields(Profile)} - wanted - {"labels", "specials", "token_floor"}
    raw.pop("comment", None)
    _check_keys({k: v for k, v in raw.items() if k not in optional}, wanted | set(label_keys),
                f"{path} profile {name!r}")
    raw["labels"] = {kind: tuple(expand_labels(raw.pop(key))) for key, kind in label_keys.items()}
    try:
        raw["specials"], raw["token_floor"] = tokenizer_contract.read(raw["tokenizer_contract"],
                                                                      ROOT)
    except ValueError as e:
        raise ConfigError(f"{path} profile {name!r}: {e}") from None
    try:
        raw["layout"] = Layout(**raw["layout"])
        raw["calibration"] = Calibration(**raw["calibration"])
        if raw.get("vision") is not None:
            raw["vision"] = Vision(**{k: tuple(v) if k == "reserved" else v
                                      for k, v in raw["vision"].items()})
        if raw.get("reasoning") is not None:
            raw["reasoning"] = reasoning.settings(raw["reasoning"], path)
        profile = Profile(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})
    except (TypeError, ValueError) as e:
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
    labelled = kinds.labelled()
    if not all(k.own_labels.allow(p.labels[k.name]) for k in labelled):
        raise ConfigError(f"{where}: need " + ", ".join(f"{k.own_labels.needed} {k.name} labels"
                                                        for k in labelled))
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
    for kind in kinds.KINDS.values():  # each kind's own settings (a vision profile's box)
        try:
            kind.check_profile(p)
        except ValueError as e:
            raise ConfigError(f"{where}: {e}") from None
    if not all(isinstance(a, str) for a in p.vllm_args):
        raise ConfigError(f"{where}: vllm_args must be a list of strings")
    if p.attention_mode not in ("causal", "bidirectional") or type(p.trained_two_way) is not bool:
        raise ConfigError(f"{where}: attention_mode must be causal or bidirectional and "
                          f"trained_two_way true or false")
    if p.attention_mode == "bidirectional" and not p.trained_two_way:
        raise ConfigError(f"{where}: a model not trained for two-way reading cannot default to "
                          f"it (set trained_two_way only for models trained that way)")
    pair = lambda v: v is None or (isinstance(v, list) and len(v) == 2)  # noqa: E731
    for got in (pr if isinstance(pr, dict) else {} for pr in p.two_way_probes):
        if (not {"state", "question", "reference"} <= set(got) <= PROBE_KEYS
                or not (pair(got["reference"]) and pair(got.get("one_way")))
                or not (isinstance(t := got.get("tolerance", 0.5), (int, float)) and 0 < t < 1)):
            raise ConfigError(f"{where}: a two_way_probes entry needs state, question, reference "
                              f"(null or [P(yes), P(no)]), maybe one_way (so) and tolerance")


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
          and isinstance(layout.both_directions, bool) and isinstance(layout.option_sets, bool)
          and type(layout.repeat) is int and 1 <= layout.repeat <= MAX_REPEAT
          and type(layout.orders) is int and 1 <= layout.orders <= MAX_ORDERS
          and isinstance(layout.shrink, (int, float)) and 0 <= layout.shrink <= 1
          and layout.state_selection in STATE_SELECTIONS)
    if not ok:
        raise ConfigError(f"{where}: layout needs booleans, repeat 1-{MAX_REPEAT}, orders "
                          f"1-{MAX_ORDERS}, shrink 0-1, state_selection one of {', '.join(STATE_SELECTIONS)}; got {layout}")
    if layout.option_sets and (layout.repeat > 1 or layout.orders > 1):
        raise ConfigError(f"{where}: option_sets lists a choice's options once, as a set; it "
                          "takes repeat 1 and orders 1")


def check_calibration(c: Calibration, where: str) -> None:
    temps, names = c.temperature, {k.name for k in kinds.reading()}
    if (not isinstance(temps, dict) or not names <= set(temps)
            or not set(temps) <= names | {"image"}
            or not all(finite(t) and 1e-3 <= t <= 1e3 for t in temps.values())):
        # bounded: log-probs divided by it stay finite floats whatever number a request sends
        raise ConfigError(f"{where}: calibration.temperature needs "
                          f"{kinds.spoken(k.name for k in kinds.reading())}"
                          f" in [0.001, 1000] (and may have image: every answer about an image)")
    if not (finite(c.reread_below) and 0 <= c.reread_below <= 1):
        raise ConfigError(f"{where}: reread_below must be in [0, 1]")
    for name, tuning in kinds.calibration_settings().items():  # each kind's own, its own rule
        if not tuning.good(getattr(c, name)):
            raise ConfigError(f"{where}: {tuning.needs}")
    with_prior = [k.name for k in kinds.labelled() if k.own_labels.prior]
    if not (isinstance(c.label_prior, dict) and set(c.label_prior) <= set(with_prior)
            and all(isinstance(per_n, dict) and all(_prior_ok(n, v) for n, v in per_n.items())
                    for per_n in c.label_prior.values())):
        raise ConfigError(f"{where}: label_prior maps {kinds.spoken(with_prior, 'and/or')} to {{option count: "
                          f"that many numbers within ±{MAX_PRIOR_NATS}}} (nats per position)")


def _prior_ok(n, values) -> bool:
    """An option count written in ASCII digits (str.isdigit also takes "²" and "١", which
    int() refuses or reads as another count) of at most 3 (a choice has at most 255 options:
    int() of a 4,301-digit string raises), and that many bounded numbers."""
    return (isinstance(n, str) and n.isascii() and n.isdigit() and len(n) <= 3
            and isinstance(values, list) and len(values) == int(n)
            and all(finite(b) and abs(b) <= MAX_PRIOR_NATS for b in values))
