"""The response's x_ extensions both APIs add: what was done beyond one plain read per question.

Owns: x_effort_used (the re-read, reasoning, option sets read as listings, states cut to fit)
and x_thoughts (each thought's text, only when the request asked for a trace).
Never: decides any of it (the steps record it in decision.Effort) or names a question itself:
the adapter's `key(i)` does.
In: a decision.Effort and the request's question count. Out: the extensions' JSON.
"""
from __future__ import annotations

from ..decision_model import Effort
from ..decision_model import REREAD_FIRST_WEIGHT


def effort_used(effort: Effort, count: int, key) -> dict | None:
    """The response extension saying what was done beyond one plain read per question: the
    re-read (when on), the questions whose options were read as a listing although asked as a
    set, and, per question whose state was cut to fit, what it kept; `key(i)`
    names question i in the adapter's terms. None when there is nothing to say."""
    out = {}
    if effort.reread_below:
        out["reread"] = {"below": effort.reread_below,
                         "first_weight": round(REREAD_FIRST_WEIGHT, 4),
                         "questions": effort.rereads}
    spent = effort.reasoning
    if spent is not None and spent.mode != "off":
        thought = {t.question: t for t in spent.thoughts}
        out["reasoning"] = {"mode": spent.mode, "token_cap": spent.cap, "questions": [
            {**key(i), "thought": i in thought, "tokens": thought[i].tokens if i in thought
             else 0, "cut": thought[i].cut if i in thought else False}
            for i in range(count)]}
    if effort.listed:  # asked as option sets, read as listings: the options exceed one step
        out["options_listed"] = [key(i) for i in effort.listed]
    if effort.selections:
        out["state_selection"] = [{**key(s.question), "kept_tokens": s.kept_tokens,
                                   "total_tokens": s.total_tokens, "method": s.method}
                                  for s in effort.selections]
    return out or None


def traced_thoughts(effort: Effort, key) -> list | None:
    """Each thought's text, when the request asked for a trace (never otherwise)."""
    spent = effort.reasoning
    if spent is None or not spent.trace:
        return None
    return [{**key(t.question), "text": t.text} for t in spent.thoughts]


def extensions(effort: Effort, count: int, key) -> dict:
    """The response's x_ extensions that apply: x_effort_used (effort_used) and x_thoughts
    (traced_thoughts), in that order, for a request of `count` questions; `key(i)` names
    question i in the adapter's terms."""
    out = {}
    used = effort_used(effort, count, key)
    if used:
        out["x_effort_used"] = used
    thoughts = traced_thoughts(effort, key)
    if thoughts is not None:
        out["x_thoughts"] = thoughts
    return out
