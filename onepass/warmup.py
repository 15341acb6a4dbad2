"""Warm-up requests: every question type once, through the full request path, before ready.

Owns: the fixed warm-up bodies. Never: runs them (server.Service.warm_up does).
"""
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
