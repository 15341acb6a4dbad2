"""Warm-up requests: every question type once through each API's full request path, before ready.

Owns: the fixed warm-up bodies, each with its route. Never: runs them (server.Service.warm_up does).
"""
from __future__ import annotations

STATE = "Order 4471: the customer was charged twice and asks for one charge to be refunded."

WARMUP_BODIES = (
    {"model": "jev-latest", "state": STATE,
     "questions": {"refund": {"type": "noul", "instructions": "Is the customer asking for money back?"}}},
    {"model": "jev-latest", "state": STATE,
     "questions": {"team": {"type": "choice", "instructions": "Which team should handle it?",
                            "criteria": {"billing": "Payments and refunds", "tech": None,
                                         "sales": "Pricing and upgrades"}}}},
    {"model": "jev-latest", "state": {"ticket": STATE, "plan": "pro"},
     "questions": {"anger": {"type": "score", "instructions": "How angry is the customer?",
                             "criteria": ["Calm", "Annoyed", "Furious"]}}},
    {"model": "jev-latest", "state": [STATE, "Second message: still waiting."],
     "questions": {"refund": {"type": "noul", "criteria": {"true": "asks for a refund"}},
                   "team": {"type": "choice", "criteria": {"billing": None, "tech": None}},
                   "anger": {"type": "score", "criteria": ["Calm", "Annoyed", "Furious"]}}},
)


# /v1/decisions: message input with parts, and a typed (boolean) choice.
DECISIONS_BODY = {
    "model": "jev-latest",
    "input": [{"role": "user", "content": [{"type": "input_text", "text": STATE},
                                           {"type": "input_json", "data": {"order": 4471}}]}],
    "questions": [{"type": "predicate", "name": "refund", "instructions": "A refund is asked for."},
                  {"type": "choice", "instructions": "Refund approved?",
                   "choices": [{"value": True}, {"value": False}]},
                  {"type": "score", "instructions": "How angry?",
                   "levels": [{"label": "calm"}, {"label": "furious"}]}]}


def warmup_bodies(two_way: bool) -> tuple[tuple[str, dict], ...]:
    """(route, body): every question type in the default mode on both APIs; with two-way live,
    both modes explicitly too (on a GPU the two-way kernel variant compiles on first use: not on
    a client's clock)."""
    bodies = tuple(("/v1/systemone", b) for b in WARMUP_BODIES) + (("/v1/decisions",
                                                                    DECISIONS_BODY),)
    if not two_way:
        return bodies
    last = WARMUP_BODIES[-1]
    return bodies + tuple(("/v1/systemone", {**last, "attention_mode": mode})
                          for mode in ("bidirectional", "causal"))
