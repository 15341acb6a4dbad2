"""GET /v1/models and the unknown-model message: the names this server answers to.

Owns: the model list in both clients' shapes at once: System One's `models` (typesafe-sdk's
`models.list()` reads it) beside OpenAI's list object (`object`, `data`; the openai client's
`models.list()` reads that); each client ignores the other's keys. And the message of a request
naming another model, which names the served ones.
Never: resolves a request's model (pipeline.py does).
"""
from __future__ import annotations

import calendar
import datetime

OWNER = "onepass"
SHOWN_NAME = 100  # characters of a client's unknown model name echoed back


def document(profile) -> dict:
    return {"models": [{"name": name, "description": profile.description,
                        "release_date": profile.release_date} for name in profile.names],
            "object": "list",
            "data": [{"id": name, "object": "model", "created": _unix(profile.release_date),
                      "owned_by": OWNER} for name in profile.names]}


def unknown(name: str, profile) -> str:
    """Keeps the contract's `Unknown model: <name>` and says what would have worked."""
    shown = name if len(name) <= SHOWN_NAME else name[:SHOWN_NAME] + "..."
    return (f"Unknown model: {shown}; this server serves {', '.join(profile.names)} "
            "(listed by GET /v1/models)")


def _unix(day: str) -> int:
    """OpenAI's `created` (Unix seconds) from the profile's YYYY-MM-DD; 0 when it is not one."""
    try:
        return calendar.timegm(datetime.date.fromisoformat(day).timetuple())
    except (TypeError, ValueError):
        return 0
