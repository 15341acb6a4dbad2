"""A question too long for its read even with no state: its instructions halved, then every
option's description, until it fits (prompt/fitting.py calls this once nothing of the state is
left to cut).

Owns: the order of cutting and the bound on the counting (texts cut to max_chars first).
Never: cuts option keys, their order or the answer labels; counts tokens itself (`fits` does).
"""
from __future__ import annotations

from dataclasses import replace

from ..decision_model import Option, Question
from .state_parts import GAP


def shorten(q: Question, fits, max_chars: int) -> Question:
    """Halve the instructions, then every option description, until `fits`; option keys, their
    order and the answer labels stay. Returns the shortest tried if nothing fits. Texts longer
    than max_chars are cut to it first, so the counting is bounded by the budget."""
    q = replace(q, options=tuple(Option(o.key, o.text[:max_chars] + " " + GAP)
                                 if o.text and len(o.text) > max_chars else o for o in q.options))
    text = (q.instructions or "")[:max_chars]
    while text and not fits(replace(q, instructions=text + " " + GAP)):
        text = text[:len(text) // 2]
    q = replace(q, instructions=(text + " " + GAP) if text else None) \
        if text != (q.instructions or "") else q
    if fits(q):
        return q
    limit = max((len(o.text or "") for o in q.options), default=0)
    while limit:
        limit //= 2
        cut = tuple(Option(o.key, None if not o.text else
                           (o.text if len(o.text) <= limit else o.text[:limit] + " " + GAP)
                           if limit else None) for o in q.options)
        if fits(replace(q, options=cut)):
            return replace(q, options=cut)
    return replace(q, options=tuple(Option(o.key, None) for o in q.options))
