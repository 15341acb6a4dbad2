"""A box's confidence: the calibrated P(IoU >= 0.5) of the box a mode made, hybrid's pick, and
`present` tempered.

Owns: the map a vision profile's `vision.box.confidence` holds (one {a, b[, feature]} for every
mode, or one per MAPPED mode) and its check, the number each map reads (map_input), the map
applied (confidence: base.logistic of a x + b), which of two boxes a hybrid question answers,
and `present` with the profile's present temperature and bias (tempered).
Never: reads or generates (kinds/box.py plans and combines), fits a map
(bench/fit/fit_box_calibration.py does, on the box scenes' fit half).
"""
from __future__ import annotations

import math

from .base import finite, logistic

# The modes that make a box, each with its own confidence feature: the generation's digit
# tokens' mean log-prob, the edge reads' mean top-band log-prob. The two are on different
# scales, so one {a, b} map fits both only by chance: a profile may map each.
MAPPED = ("generate", "edges")
# What a map reads (its optional "feature"): the box's mean log-prob as above, or the log of
# its area as a share of the image. A model trained to split an edge between two bands reads
# a precise edge with a low log-prob, so the log-prob does not rank hits; size does (small
# boxes miss IoU 0.5 by a band's width, large ones do not). docs/box.md, "Calibration".
FEATURES = ("logprob", "log_area")
MIN_AREA = 1e-6  # a degenerate (zero-width) box's area, so its log stays finite


def check_maps(conf) -> None:
    """`vision.box.confidence`: one map for every mode or one for each MAPPED mode, each with
    numbers a and b and optionally a feature (ValueError names both forms)."""
    maps = ([conf.get(m) for m in MAPPED] if isinstance(conf, dict) and set(conf) == set(MAPPED)
            else [conf])
    if not all(isinstance(m, dict) and {"a", "b"} <= set(m) <= {"a", "b", "feature"}
               and m.get("feature", "logprob") in FEATURES
               and all(finite(m[k]) and abs(m[k]) <= 1e3 for k in "ab") for m in maps):
        raise ValueError("vision.box.confidence needs numbers a and b within ±1000 (and "
                         f"optionally a feature: {' or '.join(FEATURES)}), for every mode "
                         f"({{\"a\": 1, \"b\": 0}}) or for each of {', '.join(MAPPED)} "
                         "({\"generate\": {\"a\": 1, \"b\": 0}, \"edges\": ...})")


def mode_map(conf: dict, mode: str) -> dict:
    """The {a, b} map for a box made in `mode` (generate or edges): the profile's own for that
    mode, or its one map for every mode."""
    return conf[mode] if mode in conf else conf


def map_input(conf_map: dict, mean_logprob, fractions):
    """The number `conf_map` reads (its "feature", FEATURES): the box's mean log-prob, or the
    log of the box's area as a share of the image. None without a box or a log-prob."""
    if mean_logprob is None or fractions is None:
        return None
    if conf_map.get("feature", "logprob") == "logprob":
        return mean_logprob
    left, top, right, bottom = fractions
    return math.log(max((right - left) * (bottom - top), MIN_AREA))


def confidence(x, settings: dict) -> float:
    """The calibrated P(IoU >= 0.5): a logistic map (mode_map's) of the box's feature
    (map_input's: the coordinate tokens' or the edge reads' mean log-prob, or the box's log
    area), fitted per profile and mode (bench/fit/fit_box_calibration.py). 0 without one."""
    if x is None:
        return 0.0
    z = settings["a"] * x + settings["b"]
    return logistic(z)


def hybrid(generated: float | None, edges: float | None) -> str:
    """Which mode's box a hybrid question answers, from each box's calibrated confidence (None:
    that mode found no box): the more confident one, the generated one on a tie (or when
    neither was found). With a map per mode the two confidences are comparable, so the pick
    follows whichever mode is likelier right on this item, not a fixed preference for one."""
    if edges is None or (generated is not None and generated >= edges):
        return "generate"
    return "edges"


def tempered(p_yes: float, temperature: float, bias: float = 0.0) -> float:
    """`present` with the profile's present temperature and bias on top of the noul read's own:
    sigmoid(logit(p) / T + bias), exact at 0 and 1. The bias moves where yes begins, which a
    temperature cannot: a model trained on as many misnamed questions as named ones leans to
    no where most named objects are there."""
    if p_yes <= 0.0 or p_yes >= 1.0 or (temperature == 1.0 and bias == 0.0):
        return p_yes
    z = math.log(p_yes / (1.0 - p_yes)) / temperature + bias
    return logistic(z)
