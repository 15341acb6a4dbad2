"""Box conventions: how a model writes a box, and the one conversion to fractions of the image.

Owns: Convention (a vision profile's `vision.box.convention`), its check, to_fractions, the
edges mode's box from its four band distributions (edges_box), and Box (the answer's record).
Never: talks to vLLM or knows an API's field names (kinds/box.py renders the answer).
Pure functions only, so every convention is tested with a known box (tests/unit/kinds/test_box.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

UNITS = ("grid", "resized_pixels", "original_pixels")
ORDERS = ("xyxy", "yxyx")
WHOLE = (0.0, 0.0, 1.0, 1.0)  # left, top, right, bottom: the answer when nothing was found


@dataclass(frozen=True)
class Convention:
    units: str  # grid: on a scale x scale grid; *_pixels: absolute pixels of that image
    order: str  # xyxy: left, top, right, bottom; yxyx: top, left, bottom, right
    scale: int = 0  # the grid size (1000, 1024); 0 for pixel units
    resize: tuple = ()  # resized_pixels: the processor's (factor, min_pixels, max_pixels)

    def most(self, image_size) -> int:
        """The largest coordinate the generation may write (its JSON schema's maximum)."""
        return self.scale if self.units == "grid" else max(image_size)


@dataclass(frozen=True)
class Box:
    """A box answer (the box kind's Answer.payload): edges as fractions of the original image
    (WHOLE when not found)."""
    left: float
    top: float
    right: float
    bottom: float
    confidence: float  # calibrated P(IoU >= 0.5); 0 when not found
    present: float  # P(the named object is visible), read like a noul
    found: bool
    mode: str  # the mode that produced the box (hybrid: the one answered)
    logprob: float | None = None  # the confidence feature before calibration (None: no box)
    raw: tuple | None = None  # the numbers the model wrote, in its convention (generate only)


def convention(raw) -> Convention:
    """A profile's convention object, checked (ValueError says what is wrong)."""
    if not isinstance(raw, dict) or not set(raw) <= {"units", "order", "scale", "resize"}:
        raise ValueError(f"convention takes units, order, scale and resize; got {raw!r}")
    units, order, scale = raw.get("units"), raw.get("order"), raw.get("scale", 0)
    if units not in UNITS or order not in ORDERS:
        raise ValueError(f"convention units must be one of {', '.join(UNITS)} and order one of "
                         f"{', '.join(ORDERS)}; got {units!r}, {order!r}")
    grid = units == "grid"
    if type(scale) is not int or (grid and scale < 2) or (not grid and scale != 0):
        raise ValueError(f"a grid convention needs an integer scale >= 2 (1000, 1024), pixel "
                         f"units none; got {scale!r}")
    resize = raw.get("resize")
    if (units == "resized_pixels") != (resize is not None):
        raise ValueError("resize (the processor's factor, min_pixels and max_pixels) goes with "
                         "resized_pixels units, and only with them")
    if resize is not None:
        keys = ("factor", "min_pixels", "max_pixels")
        if not (isinstance(resize, dict) and set(resize) == set(keys)
                and all(type(resize[k]) is int and resize[k] > 0 for k in keys)
                and resize["min_pixels"] <= resize["max_pixels"]):
            raise ValueError(f"resize needs positive integers {', '.join(keys)}, "
                             f"min_pixels <= max_pixels; got {resize!r}")
        resize = tuple(resize[k] for k in keys)
    return Convention(units, order, scale, resize or ())


def resized(conv: Convention, size) -> tuple[int, int]:
    """(width, height) of the image as the model saw it. resized_pixels models (Qwen2.5-VL's
    processor) round each side to a multiple of `factor`, then scale both by one ratio into
    [min_pixels, max_pixels]; other conventions do not need it (the size as sent)."""
    if not conv.resize:
        return tuple(size)
    factor, low, high = conv.resize
    w, h = size
    bar_w, bar_h = (max(factor, round(n / factor) * factor) for n in (w, h))
    if bar_w * bar_h > high:
        beta = math.sqrt(w * h / high)
        bar_w, bar_h = (max(factor, math.floor(n / beta / factor) * factor) for n in (w, h))
    elif bar_w * bar_h < low:
        beta = math.sqrt(low / (w * h))
        bar_w, bar_h = (math.ceil(n * beta / factor) * factor for n in (w, h))
    return bar_w, bar_h


def to_fractions(raw, conv: Convention, image_size, resized_size):
    """Four numbers in the model's order -> (left, top, right, bottom) as fractions of the
    original image, clipped to it, reversed edges put in order; None when no box is left (all
    outside the image, zero area, or not four finite numbers).

    image_size and resized_size are (width, height) of the image as sent and as the model saw
    it. vLLM's processors resize by stretching the whole image, which keeps fractions: so
    resized pixels divide by the resized size, original pixels by the original size.
    """
    if (not isinstance(raw, (list, tuple)) or len(raw) != 4
            or not all(_finite(v) for v in raw)):
        return None
    a, b, c, d = (float(v) for v in raw)
    x0, y0, x1, y1 = (a, b, c, d) if conv.order == "xyxy" else (b, a, d, c)
    if conv.units == "grid":
        w = h = float(conv.scale)
    else:
        w, h = (float(n) for n in (resized_size if conv.units == "resized_pixels"
                                   else image_size))
        if w <= 0 or h <= 0:
            return None
    left, right = sorted((_clip(x0 / w), _clip(x1 / w)))
    top, bottom = sorted((_clip(y0 / h), _clip(y1 / h)))
    if left >= right or top >= bottom:  # nothing of the box lies inside the image
        return None
    return left, top, right, bottom


def edges_box(distributions) -> tuple[tuple, float]:
    """(left, top, right, bottom as fractions, confidence feature) from the four edges'
    distributions over equal bands: each edge at the expected band's centre; the feature is
    the mean log of each edge's top band probability (the same scale as a generation's)."""
    coords, feature = [], 0.0
    for probs in distributions:
        n = len(probs)
        coords.append(math.fsum((k + 0.5) * p for k, p in enumerate(probs)) / n)
        feature += math.log(max(max(probs), 1e-300)) / len(distributions)
    left, right = sorted(coords[0::2])
    top, bottom = sorted(coords[1::2])
    return (left, top, right, bottom), feature


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < float("inf")


def _clip(f: float) -> float:
    return min(1.0, max(0.0, f))
