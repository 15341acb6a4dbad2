"""The registry of question kinds (name -> Kind) and every lookup the rest of onepass makes: a
kind by name or by its type on an API, the kinds by capability (the reading ones, those with
labels of their own, one whose options have a given shape, those that read options as a set),
and what the registered kinds add up to (the types telemetry counts, the start-up probe, the
option cap, the limits /openapi.json states, the calibration settings).

Owns: KINDS and those lookups; an unknown kind raises UnknownKind (the profile check turns that
into a start-up error), never a fallback.
Never: imports a kind (kinds/__init__.py registers the built-in ones) or knows one by name.
"""
from __future__ import annotations

from .base import MAX_OPTIONS, Kind, Probe, Tuning

KINDS: dict[str, Kind] = {}


class UnknownKind(LookupError):
    pass


def register(kind: Kind) -> None:
    """Add a kind; its name and its calibration settings' names must be new."""
    if kind.name in KINDS:
        raise ValueError(f"question kind {kind.name!r} is registered twice")
    taken = set(kind.calibration) & set(calibration_settings())
    if taken:
        raise ValueError(f"question kind {kind.name!r} names calibration settings another "
                         f"kind has: {sorted(taken)}")
    KINDS[kind.name] = kind


def unregister(name: str) -> None:
    """Remove a kind (a test's, once it is done with it)."""
    KINDS.pop(name, None)


def get(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise UnknownKind(f"no question kind {name!r} is registered (known: "
                          f"{', '.join(KINDS)})") from None


def names() -> tuple[str, ...]:
    return tuple(KINDS)


def by_api(api: str) -> dict[str, Kind]:
    """The kinds by their `type` on one API ("systemone" or "decisions": the Kind's adapter
    attribute), each kind that has an adapter there."""
    return {getattr(k, api).type: k for k in KINDS.values() if getattr(k, api) is not None}


def types() -> tuple[str, ...]:
    """Every answer type on either API, each once: the System One types in registration
    order, then the Decisions types not among them (telemetry counts answers by these)."""
    return tuple(dict.fromkeys([*by_api("systemone"), *by_api("decisions")]))


def named(api_type, api: str) -> Kind | None:
    """The kind a question's `type` names on one API; None when it names none (any JSON value
    may stand there; the adapter says so in its own words)."""
    known = by_api(api)
    return known[api_type] if isinstance(api_type, str) and api_type in known else None


# -- by capability -------------------------------------------------------------------------
def reading() -> tuple[Kind, ...]:
    """The kinds answered by their own label reads (each has a temperature and a warm-up)."""
    return tuple(k for k in KINDS.values() if k.reads)


def labelled() -> tuple[Kind, ...]:
    """The kinds with labels of their own in the profile."""
    return tuple(k for k in KINDS.values() if k.own_labels is not None)


def label_keys() -> dict[str, str]:
    """Each labelled kind's profile key (`<kind>_labels`) -> its name."""
    return {f"{k.name}_labels": k.name for k in labelled()}


def shaped(shape: str) -> Kind:
    """The first registered kind whose options have `shape` (base.YES_NO, NAMED, LEVELS): the
    kind a caller builds such a question of (a start-up probe, a box's present and edges)."""
    found = next((k for k in KINDS.values() if k.options_are == shape), None)
    if found is None:
        raise UnknownKind(f"no registered question kind reads {shape}")
    return found


def set_readers() -> tuple[Kind, ...]:
    """The kinds that read their options as a set when the layout asks (option_sets)."""
    return tuple(k for k in KINDS.values() if k.as_set)


# -- what the registered kinds add up to ---------------------------------------------------
def probe(settings) -> Probe | None:
    """The start-up check of vLLM's structured outputs: the first registered kind's that
    offers one (None: no kind needs a constrained generation)."""
    return next((p for k in KINDS.values() if (p := k.probe(settings)) is not None), None)


def option_cap(settings, facts) -> int:
    """The most options one question may list on this server: the contracts' cap, lowered by
    each kind whose labels cap its options (Limit.options)."""
    caps = (k.limit(settings, facts).options for k in KINDS.values())
    return min([MAX_OPTIONS, *(c for c in caps if c is not None)])


def stated_limits(settings) -> list[str]:
    """What each kind says of its limits in /openapi.json's description, in registration order."""
    return [text for k in KINDS.values() if (text := k.limits_text(settings))]


def calibration_settings() -> dict[str, Tuning]:
    """Every kind's own calibration settings: name -> Tuning."""
    return {name: t for k in KINDS.values() for name, t in k.calibration.items()}


def spoken(items, last: str = "and") -> str:
    """"a, b and c" (or "a, b or c"): how messages list kinds."""
    items = list(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}" if len(items) > 1 else "".join(items)
