"""Start-up guard: prove that vLLM serves what the profile describes before any answer.

Owns: the checks run once at start-up (served model name, tokenizer contract, the special
tokens neutralised in client text, the served tokenizer's added tokens among them
(added_tokens.py), and their neutral spelling, chat template
equivalence, single-token labels at the answer slot, label log-probs at full precision, whether
two-way reading is live and matches the profile's reference answers, whether vLLM constrains a
generation, the separator that batches token counts: token_counts.py) and the engine Facts
they yield.
Never: answers requests; a failed check is final until restart (GuardFailed with the reason).
In: an Engine and the settings (with the Profile). Out: Facts, a frozen value.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path

from .. import kinds
from ..decision_model import CAUSAL, TWO_WAY, Decision, Option, Question
from . import added_tokens, capabilities, set_probe, token_counts
from .engine import Engine
from .decoding import structured_engine
from ..prompt import neutral
from ..prompt.layout import LabelSet, layout, wrap_chat
from ..kinds.base import NAMED, YES_NO
from ..profile import Profile
from ..softmax import label_distribution

log = logging.getLogger("onepass")
SPECIALS_PER_CALL = 256  # special token strings sent in one /tokenize call
TWO_WAY_MIN_SHIFT = 1e-3  # nats; fp32 reruns of one read agree to ~1e-6, two-way moves 1-12
REFERENCE_TOLERANCE = 0.05  # probability, per label, where a probe states no tolerance


class GuardFailed(Exception):
    pass


@dataclass(frozen=True)
class Facts:
    """What start-up learnt about the engine, fixed for the server's life."""
    labels: LabelSet  # the profile's labels proven single tokens at the answer slot
    max_len: int  # the served context length, in tokens
    two_way: bool  # the engine plugin reads two-way
    structured: str  # "" when vLLM constrains a generation, else why not (box and number
    # questions are then refused with it)
    profile: Profile | None = None  # the profile as the guard proved it, the served
    # tokenizer's added tokens among its specials (None: the settings' own, no guard run)
    sets: bool = False  # the engine plugin reads a choice's options as a set (option_sets)
    separator: tuple | None = None  # (text, id) batching token counts (token_counts.separator)


def learn(engine: Engine, settings, root: Path) -> Facts:
    """Every start-up check, in order; Facts when all pass (GuardFailed, or the engine's
    errors, when one does not)."""
    labels, max_len, profile = run_guard(engine, settings.model, root)
    sets, problem = set_probe.sets_live(engine, profile, labels)
    if problem:
        raise GuardFailed(problem)
    return Facts(labels, max_len, two_way_live(engine, profile, labels),
                 structured_engine(engine, settings), profile, sets,
                 token_counts.separator(engine.ids, profile))


def check_served_model(engine: Engine, profile: Profile) -> int:
    """The context length vLLM serves the profile's model with (at most the profile's)."""
    cards = {m.get("id"): m for m in engine.served_models()}
    if profile.served_model_name not in cards:
        raise GuardFailed(f"vLLM serves {sorted(cards)}, not the profile's model "
                          f"{profile.served_model_name!r}")
    served = cards[profile.served_model_name].get("max_model_len")
    return min(profile.max_model_len, served) if isinstance(served, int) else \
        profile.max_model_len


def check_tokenizer_contract(engine: Engine, path: Path) -> dict:
    """The contract's probes give its ids; returns its special tokens (text -> id)."""
    contract = json.loads(path.read_text(encoding="utf-8"))
    for probe in contract["probes"]:
        got = engine.tokenize(prompt=probe["text"], add_special_tokens=False)
        if got != probe["ids"]:
            raise GuardFailed(f"tokenizer contract {path.name} broken: {probe['text']!r} gives "
                              f"{got}, the contract says {probe['ids']}")
    return contract.get("specials") or {}


def check_specials(engine: Engine, profile: Profile, contract: dict,
                   served: dict | None = None) -> None:
    """Client text is text (prompt/neutral.py), proven through vLLM's tokenizer: each special of
    the contract is its one id; each added token /tokenizer_info listed (`served`, text -> id:
    the served tokenizer's own) adds its id; each other string neutralised (a chat-template
    marker, an image token) that is one token adds its id; and the neutral spelling of all of
    them, written together, gives none of those ids. Strings go SPECIALS_PER_CALL to a
    /tokenize call."""
    def one(text: str) -> list[int]:
        return engine.tokenize(prompt=text, add_special_tokens=False)

    def ids_of(batch) -> list[int]:
        got = one("".join(batch))
        if len(got) == len(batch) and all(contract[s] == i for s, i in zip(batch, got)):
            return got
        for s in batch:  # which one (a seam between two may also have merged)
            if one(s) != [contract[s]]:
                raise GuardFailed(f"special token {s!r} gives {one(s)} through vLLM's "
                                  f"tokenizer, the tokenizer contract says [{contract[s]}]")
        return [contract[s] for s in batch]

    try:
        found = neutral.of(profile).strings
    except ValueError as e:  # a special of one character, or one holding the joiner
        raise GuardFailed(str(e)) from None
    listed = [s for s in found if s in contract]
    special = {i for ids in engine.map(ids_of, _batches(listed)) for i in ids}
    served = served or {}
    special |= {served[s] for s in found if s in served}
    others = [s for s in found if s not in contract and s not in served]
    special |= {ids[0] for ids in engine.map(one, others) if len(ids) == 1}
    spelled = [neutral.neutral("".join(batch), profile) for batch in _batches(found)]
    leaked = {i for ids in engine.map(one, spelled) for i in ids if i in special}
    if leaked:
        raise GuardFailed(f"client text spelled neutral still gives special token ids "
                          f"{sorted(leaked)[:8]}: neutral.JOINER does not work for this "
                          "tokenizer")


def _batches(strings: list) -> list:
    return [strings[i:i + SPECIALS_PER_CALL] for i in range(0, len(strings), SPECIALS_PER_CALL)]


def check_chat_template(engine: Engine, profile: Profile) -> None:
    """Our stdlib rendering of the chat turns must tokenize exactly like vLLM's template."""
    system, user = "System text.", "User text:\n{ \"a\": 1 }"
    ours = engine.tokenize(prompt=wrap_chat(profile, system, user), add_special_tokens=False)
    theirs = engine.tokenize(messages=[{"role": "system", "content": system},
                                       {"role": "user", "content": user}],
                             add_generation_prompt=True)
    _same(ours, theirs, "")
    if profile.vision is not None:  # image reads send the user turn as parts around the images
        split = user.index("{")
        parts = [{"type": "text", "text": user[:split]}, {"type": "text", "text": user[split:]}]
        theirs = engine.tokenize(messages=[{"role": "system", "content": system},
                                           {"role": "user", "content": parts}],
                                 add_generation_prompt=True)
        _same(ours, theirs, " for a user turn sent as parts (image requests)")


def _same(ours: list[int], theirs: list[int], where: str) -> None:
    if ours != theirs:
        raise GuardFailed("the profile's chat_template does not match the model's chat template"
                          f"{where} (ours {len(ours)} tokens, vLLM's {len(theirs)}; first "
                          "difference at "
                          f"{next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), 0)})")


def single_token_ids(engine: Engine, profile: Profile, labels) -> list[int | None]:
    """Each label's token id when it is one token right at the answer slot, else None."""
    slot = wrap_chat(profile, "s", "u")
    base = engine.tokenize(prompt=slot, add_special_tokens=False)

    def one(label: str):
        ids = engine.tokenize(prompt=slot + label, add_special_tokens=False)
        return ids[-1] if len(ids) == len(base) + 1 and ids[:-1] == base else None
    return engine.map(one, labels)


def verified_labels(engine: Engine, profile: Profile) -> LabelSet:
    """Each kind's labels with their token ids: every one a distinct single token for a kind
    that needs them all, else the distinct single-token ones (at least as many as it needs)."""
    labelled = kinds.labelled()
    wanted = [label for k in labelled for label in profile.labels[k.name]]
    ids = iter(single_token_ids(engine, profile, wanted))
    found = {k.name: list(zip(profile.labels[k.name], ids)) for k in labelled}
    strict = [k.name for k in labelled if k.own_labels.all_single]
    bad = [label for name in strict for label, i in found[name] if i is None]
    if bad or any(len({i for _, i in found[name]}) != len(found[name]) for name in strict):
        raise GuardFailed(f"{kinds.spoken(strict)} labels must be distinct single tokens; "
                          f"not: {bad}")
    kept = dict(found)
    for k in labelled:
        if not k.own_labels.all_single:
            kept[k.name], seen = [], set()
            for label, i in found[k.name]:
                if i is not None and i not in seen:
                    seen.add(i)
                    kept[k.name].append((label, i))
            if len(kept[k.name]) < k.own_labels.least:
                raise GuardFailed(f"fewer than {k.own_labels.least} {k.name} labels are single "
                                  "tokens for this tokenizer")
    return LabelSet(**kept)


def probe_reads(profile: Profile, labels: LabelSet, probe: dict):
    """The probe as a decision of one question of the registry's yes/no kind, laid out exactly
    like a request, in both modes."""
    question = Question(kinds.shaped(YES_NO).name, probe["question"],
                        (Option("true", None), Option("false", None)))
    return [layout(Decision("probe", probe["state"], (question,), mode), profile, labels)[0]
            for mode in (CAUSAL, TWO_WAY)]


def two_way_live(engine: Engine, profile: Profile, labels: LabelSet) -> bool:
    """True when every probe reads differently two-way (the plugin is live) and each reference
    answer is met within REFERENCE_TOLERANCE; otherwise two-way reading is off (stock vLLM
    ignores the flag; an engine that refuses it, reads only some probes two-way or misses a
    reference), and GuardFailed only when the profile reads two-way by default."""
    why = two_way_problem(engine, profile, labels)
    if why:
        problem = capabilities.off("two-way reading", why, profile.attention_mode == TWO_WAY)
        if problem:
            raise GuardFailed(problem)
    return not why


def two_way_problem(engine: Engine, profile: Profile, labels: LabelSet) -> str:
    """Why two-way reading is not live on this engine for this profile ("" when it is)."""
    if not profile.two_way_probes:
        return "the profile has no two-way probes to prove it with"
    shifted = []
    for probe in profile.two_way_probes:
        try:
            one_way, two_way = engine.map(engine.read, probe_reads(profile, labels, probe))
        except capabilities.REFUSED as e:
            return f"vLLM refused the probe's two-way read: {e.message}"
        shift = max(abs(a - b) for a, b in zip(one_way.label_logprobs, two_way.label_logprobs))
        shifted.append(shift > TWO_WAY_MIN_SHIFT)
        if shifted[-1] and probe["reference"] is not None:
            got = label_distribution(two_way.label_logprobs)  # uncalibrated, like the reference
            tolerance = probe.get("tolerance", REFERENCE_TOLERANCE)  # its dtypes' spread too
            if max(abs(g - r) for g, r in zip(got, probe["reference"])) > tolerance:
                return (f"two-way probe {probe['question']!r} read {got}, the profile's "
                        f"reference is {probe['reference']} (tolerance {tolerance})")
    if not any(shifted):
        return ("vLLM answers two-way probes exactly like one-way ones: the onepass engine "
                "plugin is not loaded (see serve.sh and engine/)")
    if not all(shifted):
        return f"two-way reading changed only {sum(shifted)} of {len(shifted)} probes"
    return ""


HALF_GRID = 2.0 ** -11  # bf16 and fp16 logits of magnitude >= 0.5 are multiples of this
GRID_SLACK = 2e-5  # nats: fp32 log-softmax rounding around an exact difference of logits
PRECISION_PROBES = ("The parcel arrived two days late and the box was torn.",
                    "Order 1182: three chairs, one table, delivery on Friday.",
                    "The patient reports a mild headache since this morning.")


def on_half_grid(logprobs) -> bool:
    """Whether every difference between these label log-probs is a multiple of HALF_GRID: the
    mark of logits computed in bf16/fp16 (a difference of fp32 logits lands there by chance
    with probability ~0.04, so a dozen differences all on it do not happen by chance)."""
    first = logprobs[0]
    return all(abs(d - round(d / HALF_GRID) * HALF_GRID) <= GRID_SLACK
               for d in (v - first for v in logprobs[1:]))


def check_full_precision(engine: Engine, profile: Profile, labels: LabelSet) -> None:
    """Label log-probs must come from fp32 logits (serve.sh runs the lm_head in fp32 wherever
    the model is served in bf16/fp16): read a few prompts' labels of a question with named
    options and refuse to serve when every difference lies on the half-precision grid. A
    profile with head_dtype "model" has opted out with a measurement; it is not checked."""
    if profile.head_dtype == "model":
        return
    kind = kinds.shaped(NAMED)
    colours = ("red", "green", "blue", "black", "white")[:max(2, len(getattr(labels, kind.name)))]
    options = tuple(Option(k, None) for k in colours)  # no more than the server has labels for
    question = Question(kind.name, "Which colour fits the record best?", options)
    listing = replace(profile.layout, option_sets=False)  # the head's dtype, not a set read
    reads = [layout(Decision("probe", state, (question,), layout=listing), profile, labels)[0]
             for state in PRECISION_PROBES]
    results = engine.map(engine.read, reads)
    if all(on_half_grid(r.label_logprobs) for r in results):
        raise GuardFailed("label log-probs lie on the bf16/fp16 grid (every difference a "
                          f"multiple of 2^-11 nat over {len(results)} probes): the lm_head runs "
                          "in half precision. Serve with --hf-overrides "
                          "'{\"head_dtype\": \"float32\"}' (serve.sh does), or set the "
                          "profile's head_dtype to \"model\" with a measurement")


def run_guard(engine: Engine, profile: Profile, root: Path) -> tuple[LabelSet, int, Profile]:
    """The verified labels, the context length to fit prompts into, and the profile with the
    served tokenizer's added tokens among its specials (the one to serve)."""
    max_len = check_served_model(engine, profile)
    contract = {}
    if profile.tokenizer_contract:
        contract = check_tokenizer_contract(engine, root / profile.tokenizer_contract)
    else:  # the chat-template and label checks below still run through the model's tokenizer
        log.warning("profile has no tokenizer contract yet: write one with "
                    "tools/models/tokenizer_contract.py; tokenizer drift is not checked")
    try:  # client text is text for every added token vLLM's tokenizer has (fail closed)
        served = added_tokens.served(engine, profile)
    except ValueError as e:
        raise GuardFailed(str(e)) from None
    profile = replace(profile, specials=tuple(dict.fromkeys((*profile.specials, *served))))
    check_specials(engine, profile, contract, served)
    check_chat_template(engine, profile)
    labels = verified_labels(engine, profile)
    check_full_precision(engine, profile, labels)
    return labels, max_len, profile
