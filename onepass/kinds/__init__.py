"""The question kinds, registered in one place: noul, choice, score, box, number.

Owns: the registration of the built-in kinds, in the order prompts, lists and documents use.
The registry and its lookups (a kind by name, by its type on an API, by capability) are
registry.py's, and are used as `kinds.get(...)`, `kinds.shaped(...)` and so on.

Adding a kind: one module beside these and its line in the registration below; nothing outside
kinds/ names a kind (tests/unit/kinds/test_kind_names.py holds onepass to that). The module
defines a Kind subclass (base.py) with its adapters (adapters.py: `OnSystemOne(SystemOne)`, and
`OnDecisions(Decisions)` when /v1/decisions has the type) and overrides, of base.py's three
protocols, the hooks where it differs:
- Reading: `listings` and `answer` for a kind read from labels, with `own_labels` (an
  OwnLabels: how many the profile lists as `<kind>_labels`), `calibrate`, `rereads`;
  `options_are` (YES_NO, NAMED, LEVELS) lets callers that need such a question find it (the
  start-up probes, a box's present and edges), `as_set` says option_sets reads it as a set.
  `reads = False` for a kind whose reads, if any, are parts of an answer it combines.
- Generating: `plan` (its label reads and an optional constrained Generation), `combine`,
  `probe` (the start-up check of vLLM's structured outputs its generation needs), `thinks`.
- Serving: `limit` (its per-request cap, its option cap, its refusal on this server),
  `limits_text` (what /openapi.json says of them), `settings` (its server flags),
  `calibration` (its own calibration settings: name -> Tuning, checked with the profile's and a
  request's), `check_profile` (anything else of its own in a profile); its adapters give its
  fields, answers, schemas (each stating its own bounds) and warm-up questions on each API
  (`warmup_body`: its own body; optional `warmup_short`, `warmup` and `warmup_image`: its
  question in the shared text and image warm-up bodies).
Its profile keys: `<kind>_labels` when it has labels of its own and a `calibration.temperature`
entry when it is read from labels. The warm-up, /openapi.json, /metrics (answers counted by its
type) and the try-it page (/try/info) then offer it; tests/unit/kinds/test_toy_kind.py
registers a toy kind from a test and finds it in each, tests/live/test_core_live.py has a real
vLLM answer two.
"""
from __future__ import annotations

from . import box, choice, noul, number, score
from .registry import (KINDS, UnknownKind, by_api, calibration_settings, get, label_keys,
                       labelled, named, names, option_cap, probe, reading, register,
                       set_readers, shaped, spoken, stated_limits, types, unregister)

__all__ = ["KINDS", "UnknownKind", "by_api", "calibration_settings", "get", "label_keys",
           "labelled", "named", "names", "option_cap", "probe", "reading", "register",
           "set_readers", "shaped", "spoken", "stated_limits", "types", "unregister"]

for _unit in (noul, choice, score, box, number):  # the registration
    register(_unit.KIND)
