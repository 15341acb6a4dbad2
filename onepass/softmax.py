"""Label log-probs made a distribution over the labels alone: the one piece of arithmetic the
readout step and the start-up probes share.

Owns: the softmax over the labels (with a temperature), and refusing a read with no finite
label log-probability as an engine failure rather than a NaN.
Never: knows options, listings or calibration (steps/readout.py does).
"""
from __future__ import annotations

import math

from .errors import EngineFailed


def label_distribution(logprobs, temperature: float = 1.0) -> list[float]:
    """Softmax of logprob / temperature over the labels only (exact up to float rounding)."""
    scaled = [lp / temperature for lp in logprobs]
    if not scaled or any(math.isnan(x) for x in scaled) or max(scaled) == -math.inf:
        raise EngineFailed("vLLM returned no finite log-probability for any label")
    top = max(scaled)
    weights = [math.exp(x - top) for x in scaled]  # -inf becomes 0.0
    total = math.fsum(weights)
    return [w / total for w in weights]
