"""Render: the request's Outcome in its API's shape.

Owns: nothing of its own: the route's adapter (api/systemone.py or api/decisions.py) renders.
Never: changes an answer.
In: the record with its final Outcome. Out: the record with its response document.
"""
from __future__ import annotations

from dataclasses import replace

from .record import Record


def render(r: Record) -> Record:
    """The render step."""
    return replace(r, response=r.adapter.render(r.outcome, r.decision, r.request.meta))
