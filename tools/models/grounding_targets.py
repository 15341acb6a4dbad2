"""The dense targets that teach the grounding model's vision tower to see before its language side
must use what it sees (tools/models/train_grounding.py).

Why: trained on the answers alone, a from-scratch Idefics3 sat for thousands of steps on a
plateau where the image was unused (docs/box.md, runs A-C: even "is there a red shape?" stayed
at chance). With a linear head on each image token (the connector's output, where the language
model first sees the image) that must name what lies under the token, the answer loss started
to fall within a few hundred steps (a one-shape probe, 2026-12-03: 2.15 -> 0.74 nats in 450
steps, against no movement in 800 without it).

Per image token (a 4 x 4 grid of 32 px cells over the processor's 128 x 128 view, into which
Idefics3's processor squeezes the whole image whatever its aspect: no padding), the object
covering most of the cell, or none: its colour, shape and size, and its box's edges as
fractions of the image, each edge as the two digits a 0-1000 grid writes first (tenths and
hundredths). A token with no object names only "none"; its edge targets are ignored.
"""
from __future__ import annotations

import math

CELLS, CELL = 4, 32  # build_grounding: a 128 px view, 16 px patches, pixel shuffle by 2
COLOURS = ("red", "green", "blue", "yellow", "purple")
SHAPES = ("circle", "square", "triangle", "star", "diamond")
SIZES = ("small", "large")
# head outputs: colour (none + 5), shape (none + 5), size (none + 2), then 4 edges x 2 digits
GROUPS = ((1 + len(COLOURS)),) + ((1 + len(SHAPES)),) + ((1 + len(SIZES)),) + (10,) * 8
WIDTH = sum(GROUPS)
ASKED = (2, 10)  # asked_targets: the target's tokens (no, yes), the asked edge's tenth
# read_targets: the colour and shape named (none + 5 each), then whether each colour and shape
# is in the image (no, yes)
READ = (1 + len(COLOURS), 1 + len(SHAPES)) + (2,) * (len(COLOURS) + len(SHAPES))
IGNORE = -100


def cell_owners(item: dict, side: int = CELLS * CELL) -> list:
    """Per image token, in reading order, the index of the object covering most of its cell, or
    None."""
    width, height = item["width"], item["height"]
    sx, sy = side / width, side / height  # the processor stretches the image to side x side
    owners = []
    for cy in range(CELLS):
        for cx in range(CELLS):
            best, best_area = None, 0.0
            for k, obj in enumerate(item["objects"]):
                l, t, r, b = (v * s for v, s in zip(obj["px"], (sx, sy, sx, sy)))
                area = (max(0.0, min(r, cx * CELL + CELL) - max(l, cx * CELL))
                        * max(0.0, min(b, cy * CELL + CELL) - max(t, cy * CELL)))
                if area > best_area:
                    best, best_area = k, area
            owners.append(best)
    return owners


def cell_targets(item: dict) -> list[list[int]]:
    """One row of len(GROUPS) class indices per image token, in reading order."""
    return [_row(None if k is None else item["objects"][k], item["width"], item["height"])
            for k in cell_owners(item)]


def asked_targets(item: dict, edge: str | None) -> list[list[int]]:
    """Per image token, what the question asks of it (ASKED): is its object the question's
    target (0/1), and, when an edge is asked, that edge's tenth on the target's tokens
    (IGNORE elsewhere). Learnt a layer before the answer, where the image tokens have read the
    question above them (a question-first layout) but the answer has not read them yet."""
    target = item["target"] if item["present"] else None
    tenth = None if edge is None or target is None else band(item["box"][edge], ASKED[1])
    return [[int(k is not None and k == target),
             tenth if (tenth is not None and k == target) else IGNORE]
            for k in cell_owners(item)]


def read_targets(item: dict) -> list[int]:
    """What the question's last prompt token must hold a layer before the answer (READ): the
    colour and the shape its words name (0: not named), and for each colour and shape whether
    an object of it is in the image. Why (--read-weight): `present` is an equality between what
    is named and what is seen; with misnamed pairs alone it stayed at chance (runs 28, 29), so
    both sides are taught where the answer can compare them."""
    expr, objects = item["expression"], item["objects"]
    named = [1 + COLOURS.index(expr["colour"]) if expr.get("colour") else 0,
             1 + SHAPES.index(expr["shape"]) if expr.get("shape") else 0]
    return named + [int(any(o["colour"] == c for o in objects)) for c in COLOURS] + [
        int(any(o["shape"] == s for o in objects)) for s in SHAPES]


def band(fraction: float, levels: int) -> int:
    """The band (0..levels-1) of `levels` equal bands across the image that holds `fraction`."""
    return min(levels - 1, max(0, int(fraction * levels)))


def soft_bands(fraction: float, levels: int) -> list[tuple[int, float]]:
    """The edge read's soft target (train_grounding --soft-edges): the two bands whose centres
    bracket `fraction`, weighted so that the expected centre is `fraction` itself (nearer the
    border than the outer centre: the border band alone). Why: onepass places an edge at the
    expected band centre (kinds/box.py edges_box), so a model sure of one band can only say its
    centre; snapped to their band centres, the --solo eval boxes themselves reach Acc@0.5 0.593
    (docs/box.md), under the issue's 0.7."""
    x = min(max(fraction * levels - 0.5, 0.0), levels - 1.0)
    k = min(int(x), levels - 2) if levels > 1 else 0
    upper = x - k
    return [(b, w) for b, w in ((k, 1.0 - upper), (k + 1, upper)) if w > 0 and b < levels]


def _row(obj: dict | None, width: int, height: int) -> list[int]:
    if obj is None:
        return [0, 0, 0] + [IGNORE] * 8
    l, t, r, b = obj["px"]
    digits = []
    for frac in (l / width, t / height, r / width, b / height):
        hundredths = min(99, math.floor(frac * 100))
        digits += [hundredths // 10, hundredths % 10]
    return [1 + COLOURS.index(obj["colour"]), 1 + SHAPES.index(obj["shape"]),
            1 + SIZES.index(obj["size"])] + digits


def loss(head, image_states, targets, groups=GROUPS):
    """The groups' cross-entropies summed (each group at full weight: a probe that averaged
    them, the edges at a tenth of the weight, never left the plateau): image_states
    (B, tokens, D), targets (B, tokens, len(groups)) long."""
    import torch.nn.functional as F
    logits, total, start = head(image_states), 0.0, 0
    for g, n in enumerate(groups):
        part, want = logits[..., start:start + n].reshape(-1, n), targets[..., g].reshape(-1)
        if bool((want != IGNORE).any()):  # a batch may ask no edge: no NaN for an empty group
            total = total + F.cross_entropy(part, want, ignore_index=IGNORE)
        start += n
    return total


def sincos_positions(weight) -> None:
    """A 2-D sine-cosine code in the vision tower's position embedding (x in the first half,
    y in the second), so where a patch is reads linearly from the start; trained from there."""
    import torch
    n, dim = weight.shape
    side, quarter = int(round(n ** 0.5)), dim // 4
    freqs = 1.0 / (100 ** (torch.arange(quarter) / quarter))
    ys, xs = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")

    def code(v):
        angles = v.flatten()[:, None].float() * freqs[None]
        return torch.cat([angles.sin(), angles.cos()], 1)
    with torch.no_grad():
        weight.zero_()
        weight[:, :4 * quarter] = torch.cat([code(xs), code(ys)], 1)


# The heads are never served, but a run ships them beside its weights so that the next run's
# --init goes on with them: restarted at random, their first gradients went into a trained
# model (run 22's first two tries: the dense loss at 14.5 and 15.3 nats in their first 50
# steps, where run 21 had ended at 11.9; train_grounding.py --heads-first trains them alone).
def head_tensors(heads) -> dict:
    """The heads' parameters as one flat dict of tensors (for safetensors)."""
    return {f"{i}.{k}": v.detach().contiguous() for i, head in enumerate(heads)
            for k, v in head.state_dict().items()}


def load_heads(heads, tensors: dict) -> None:
    """Each head a run shipped; a head it did not ship (a later kind) keeps its seeded start."""
    for i, head in enumerate(heads):
        if all(f"{i}.{k}" in tensors for k in head.state_dict()):
            head.load_state_dict({k: tensors[f"{i}.{k}"] for k in head.state_dict()})
