"""Reads: the fitted label reads sent to vLLM, concurrently, for their label log-probs.

Owns: sending a Split's fitted reads (backend/engine.py) and the one way back when the plugin
refuses a read for its one-step budget: the reads fitted again and read (reader.py: options read
as a set that do not fit in one step become listings; a two-way read is fitted to the budget the
refusal taught).
Never: fits prompts itself or turns log-probs into probabilities (readout.py).
In: a Split with its fitted reads. Out: the Split with their results.
"""
from __future__ import annotations

from dataclasses import replace

from ..errors import OverBudget
from .fit import Split


def read(s: Split, reader) -> Split:
    if not s.reads.questions:
        return s
    try:
        return replace(s, results=tuple(reader.engine.read_all(list(s.fitted))))
    except OverBudget as refused:
        again = reader.after_refusal(s.reads, s.fitted, s.known, refused)
    fitted, selections, results = reader.read(again)
    return replace(s, fitted=tuple(fitted), selections=tuple(selections), results=tuple(results))
