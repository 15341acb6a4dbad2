"""What start-up does with an optional engine capability (two-way reading, option sets) that
its probe did not prove: off, with a warning that names why, and fatal only for a profile that
needs it. A profile on an engine that lacks an extra still starts and serves everything else.

Owns: that rule, and which engine answers to a probe count as the capability refused (vLLM's own
4xx, such as the engine plugin's refusal of set reads on vLLM's V2 model runner, or a probe
over the engine's one-step budget), as against the engine failing.
Never: runs a probe (probes.py and set_probe.py do).
"""
from __future__ import annotations

import logging

from ..errors import EngineRefused, InvalidRequest

log = logging.getLogger("onepass")
REFUSED = (EngineRefused, InvalidRequest)  # a probe's call refused by this engine's setup


def off(capability: str, why: str, needed: bool) -> str:
    """The guard's problem when the profile needs `capability` (the server does not start),
    else "" once the log says the capability is off and why."""
    if needed:
        return f"this profile needs {capability}, but {why}"
    log.warning("%s off on this server: %s", capability, why)
    return ""
