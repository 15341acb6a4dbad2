"""What a kind gives each API: its /v1/systemone adapter (SystemOne) and, when that API has its
type, its /v1/decisions adapter (Decisions).

Owns: the two adapter bases (each hook one API's adapter calls for a question of the kind: its
`type`, the fields it takes, its options from the question as sent, its answer as rendered,
its JSON Schemas for /openapi.json, each stating the kind's own bounds, its warm-up) and the
checks several kinds' hooks share (criteria, entries, unknown fields, descriptions).
Never: knows a kind's decision path (base.Kind does) or an API's request-wide fields (api/ does).
A kind module defines `OnSystemOne(SystemOne)` (and `OnDecisions(Decisions)` when /v1/decisions
has the type) and sets instances of them on its Kind: `systemone = OnSystemOne()`.
"""
from __future__ import annotations

from ..decision_model import Answer, Option, Question
from .schema_parts import NAME, const, obj


class SystemOne:
    """A kind on /v1/systemone. Subclasses set `type` and override what differs; `options`,
    `answer` and `warmup_body` are required. The default schemas state the `type` and the keys
    only: override them to say what the fields hold."""
    type: str  # the question's and the answer's `type`
    keys: frozenset = frozenset({"type", "instructions", "criteria"})  # the fields it takes
    warmup_short: tuple = ()  # (question id, question) in the mixed warm-up body
    warmup_image: tuple = ()  # (question id, question about `[image 1]`): the image warm-up's

    def options(self, criteria, loc, check, max_options: int,
                instructions=None) -> list[Option]:
        """The options from the question's `criteria`, every problem into `check`."""
        raise NotImplementedError

    def params(self, q: dict, loc, check, kwargs):
        """The kind's own question data (Question.params) from the question as sent and the
        request's `kwargs`, every problem into `check` (None by default)."""
        return None

    def check_images(self, count: int, loc, check) -> None:
        """What the kind needs of the request's images (`count` of them), into `check`."""

    def legend(self, raw: dict):
        """What the answer echoes of the question as sent (None: nothing)."""
        return None

    def answer(self, q: Question, a: Answer, legend) -> dict:
        """The answer as this API renders it."""
        raise NotImplementedError

    def warmup_body(self, state, image_url: str = "") -> dict:
        """A body (state and questions) asking this kind alone, run before ready wherever the
        kind is served; `image_url`: a small picture (a data URL) for a kind that needs one."""
        raise NotImplementedError

    def question_schema(self) -> dict:
        """The question's JSON Schema (one of /openapi.json's question shapes)."""
        return obj({"type": const(self.type), **{k: {} for k in sorted(self.keys - {"type"})}},
                   ["type"])

    def answer_schema(self) -> dict:
        """The answer's JSON Schema (one of /openapi.json's answer shapes)."""
        return obj({"type": const(self.type)}, ["type"], extra=True)


class Decisions:
    """A kind on /v1/decisions (OpenAI's Decisions contract). Subclasses set `type` and override
    `options` and `answer`; the default schemas state the `type`, name and instructions only."""
    type: str
    keys: frozenset = frozenset({"type", "name", "instructions"})
    warmup: dict | None = None  # its question in the /v1/decisions warm-up body
    warmup_image: dict | None = None  # its question about the input's image: the image warm-up's

    def options(self, raw: dict, loc, check, max_choices: int) -> tuple[tuple, list[Option]]:
        """(typed values kept for the answer, options) from the question as sent."""
        raise NotImplementedError

    def answer(self, name, values, a: Answer) -> dict:
        """The answer as this API renders it (`values`: what options() kept)."""
        raise NotImplementedError

    def question_schema(self, common: dict) -> dict:
        """The question's JSON Schema; `common`: the fields every question of this API takes
        (name, instructions), as the document states them."""
        own = {k: {} for k in sorted(self.keys - {"type", *common})}
        return obj({"type": const(self.type), **common, **own}, ["type", "instructions"])

    def answer_schema(self) -> dict:
        return obj({"type": const(self.type), "name": NAME}, ["type", "name"], extra=True)


# -- the checks several kinds' hooks share -------------------------------------------------
def is_criteria(criteria, kind, loc, check, what: str) -> bool:
    """Required System One criteria of the right JSON type; otherwise one problem, and False."""
    if isinstance(criteria, kind):
        return True
    if criteria is None:
        check.add(loc, "Field required", "missing")
    else:
        check.add(loc, what, "dict_type" if kind is dict else "list_type")
    return False


def entries(raw, loc, check, low: int, high: int, what: str) -> list:
    """A /v1/decisions array of low..high objects (choices, levels); [] with a problem else."""
    if not isinstance(raw, list):
        check.add(loc, f"{what} must be an array", "invalid_type" if raw is not None else "missing")
        return []
    if not low <= len(raw) <= high:
        check.add(loc, f"{what} must contain between {low} and {high} items.", "array_length")
        return []
    good = True
    for j, entry in enumerate(raw):
        if not isinstance(entry, dict):
            check.add(loc + (j,), f"each of {what} must be an object", "invalid_type")
            good = False
    return raw if good else []


def unknown_fields(entry: dict, allowed: set, loc, check) -> None:
    for extra in sorted(set(entry) - allowed):
        check.add(loc + (extra,), f"Unknown parameter: '{extra}'.", "unknown_parameter")


def described(entry: dict, loc, check) -> None:
    """A /v1/decisions entry's optional description must be a string."""
    description = entry.get("description")
    if description is not None and not isinstance(description, str):
        check.add(loc + ("description",), "description must be a string", "invalid_type")
