"""Images: the request's images fetched and checked into its Decision.

Owns: nothing of its own: images/inputs.py fetches links and checks every image's bytes under
the server's image policy, its buffers claimed on the body's hold.
Never: lays out prompts (prompt/) or decodes pixels.
In: the record with its Request and Decision. Out: the record's Decision with its images.
"""
from __future__ import annotations

from dataclasses import replace

from ..images import inputs
from .record import Record


def images(r: Record) -> Record:
    """The images step."""
    return replace(r, decision=replace(r.decision, images=inputs.resolve(
        r.request.images, r.serving.image_policy, r.hold)))
