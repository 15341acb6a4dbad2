"""Read: the fitted label reads sent to vLLM, concurrently, for their label log-probs.

Owns: sending a record's fitted reads (backend/engine.py) and the one way back when the plugin
refuses a read for its one-step budget: the reads fitted again and read (engine_calls.py:
options read as a set that do not fit in one step become listings; a two-way read is fitted to
the budget the refusal taught).
Never: fits prompts itself or turns log-probs into probabilities (readout.py).
In: the record with its fitted reads. Out: the record with their results.
"""
from __future__ import annotations

from dataclasses import replace

from ..errors import OverBudget
from .record import Record


def read(r: Record) -> Record:
    """The read step."""
    if not r.reads.questions:
        return r
    calls = r.serving.calls
    try:
        return replace(r, results=tuple(calls.engine.read_all(list(r.fitted))))
    except OverBudget as refused:
        again = calls.after_refusal(r.reads, r.fitted, r.known, refused)
    fitted, selections, results = calls.read(again)
    return replace(r, fitted=tuple(fitted), selections=tuple(selections), results=tuple(results))
