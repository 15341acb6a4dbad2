"""Warm-up requests: every question type once, through the full request path, before ready.

Owns: the fixed warm-up bodies. Never: runs them (server.Service.warm_up does).
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


def warmup_bodies(two_way: bool) -> tuple[dict, ...]:
    """Every question type in the default mode; with two-way live, both modes explicitly too
    (on a GPU the two-way kernel variant compiles on first use: not on a client's clock)."""
    if not two_way:
        return WARMUP_BODIES
    last = WARMUP_BODIES[-1]
    return WARMUP_BODIES + tuple({**last, "attention_mode": mode}
                                 for mode in ("bidirectional", "causal"))
