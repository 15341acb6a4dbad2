"""The question kinds, registered in one place: noul, choice, score, box, number.

Owns: the registry (name -> Kind) and the lookups every stage uses (a kind by name or by its
type on an API, the types telemetry counts, the start-up probe); an unknown kind raises
UnknownKind (the profile check turns that into a start-up error), never a fallback.
Adding a kind: one module beside these (a Kind subclass with its API adapters, see base.py and
adapters.py), its line in the registration below, and its profile keys (`<kind>_labels` and a
temperature, when it reads labels); docs/architecture.md works an example,
tests/live/test_core_live.py runs two.
"""
from __future__ import annotations

from . import box, choice, noul, number, score
from .base import Kind, Probe

KINDS: dict[str, Kind] = {}


class UnknownKind(LookupError):
    pass


def register(kind: Kind) -> None:
    if kind.name in KINDS:
        raise ValueError(f"question kind {kind.name!r} is registered twice")
    KINDS[kind.name] = kind


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


def probe(settings) -> Probe | None:
    """The start-up check of vLLM's structured outputs: the first registered kind's that
    offers one (None: no kind needs a constrained generation)."""
    return next((p for k in KINDS.values() if (p := k.probe(settings)) is not None), None)


def reading() -> tuple[Kind, ...]:
    """The kinds answered by label reads (each has labels or a temperature and a warm-up)."""
    return tuple(k for k in KINDS.values() if k.reads)


def named(api_type, api: str) -> Kind | None:
    """The kind a question's `type` names on one API; None when it names none (any JSON value
    may stand there; the adapter says so in its own words)."""
    known = by_api(api)
    return known[api_type] if isinstance(api_type, str) and api_type in known else None


def spoken(items, last: str = "and") -> str:
    """"a, b and c" (or "a, b or c"): how messages list kinds."""
    items = list(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}" if len(items) > 1 else "".join(items)


for _unit in (noul, choice, score, box, number):  # the registration, in the order prompts and lists use
    register(_unit.KIND)
