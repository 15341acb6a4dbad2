"""Request records for the steps' unit tests (onepass/steps/record.py): a Record at the step a
test starts from, with the Serving its steps read (the unit profile, the stdlib settings).
"""
from __future__ import annotations

from types import SimpleNamespace

from onepass import config
from onepass.steps.record import Record, Serving
from tests.support.unit_profile import LABELS, PROFILE

SETTINGS = config.load(["--port", "0"], environ={})


def serving(calls=None, settings=SETTINGS, profile=PROFILE, labels=LABELS) -> Serving:
    """What the server brings: `calls` (steps.engine_calls.EngineCalls or a stand-in) and its
    facts, else just the labels."""
    facts = getattr(calls, "facts", None) or SimpleNamespace(labels=labels)
    return Serving(profile, settings, facts, calls)


def record(decision, calls=None, settings=SETTINGS, **fields) -> Record:
    """A Record as resolve and images leave it (its Decision), with any later fields given."""
    return Record(serving(calls, settings), decision=decision, **fields)
