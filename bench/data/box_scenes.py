"""A box data set made from code: rendered scenes of simple shapes, one referring expression each.

Usage: .venv/bin/python bench/data/box_scenes.py [--n 400] [--seed 0]
       [--out /tmp/onepass_box_scenes] [--png] [--solo]
Owns: sampling scenes (2-5 shapes of five kinds and five colours, small or large, with at least
one distractor sharing the target's shape or colour), the referring expression and its check
that it picks out exactly the target (`resolve`), the true box in fractions of the image, the
~20% items that ask for an absent object, the fit/eval split (even index: fit, odd: eval), and
rendering with Pillow. Writes OUT/box_scenes.jsonl, one item a line: id, index, split, seed, n,
width, height, instructions, present, box ({left, top, right, bottom} or null), objects,
expression, image (a PNG data URL); with --png also OUT/png/<id>.png to look at.
Never talks to a server and never reads data from anywhere: the same --seed and --n give the
same file. Pillow is imported only to render; sampling and checking are standard library.
"""
import argparse
import base64
import io
import json
import math
import random
import sys
from pathlib import Path

SIZES = ((256, 192), (192, 256), (224, 224), (320, 180))
SHAPES = ("circle", "square", "triangle", "star", "diamond")
COLOURS = {"red": (220, 40, 40), "green": (30, 160, 60), "blue": (40, 80, 220),
           "yellow": (235, 195, 20), "purple": (140, 60, 180)}
BACKGROUNDS = ((245, 245, 245), (236, 232, 222), (226, 234, 240), (250, 248, 240))
SCALE = {"small": (0.09, 0.13), "large": (0.24, 0.32)}  # side as a share of the shorter edge
ABSENT_SHARE = 0.2
GAP = 4  # px between shapes: no overlap, so each is fully visible
SUPERLATIVES = {"largest": ("area", -1), "smallest": ("area", 1), "leftmost": ("cx", 1),
                "rightmost": ("cx", -1), "topmost": ("cy", 1), "bottommost": ("cy", -1)}
RELATIONS = ("left of", "right of", "above", "below")
DEFAULT_OUT = "/tmp/onepass_box_scenes"


def shape_geometry(shape: str, left: int, top: int, side: int) -> dict:
    """Integer pixel geometry in a side x side square, and its box [l, t, r, b) (r, b exclusive)."""
    s = side - 1
    if shape == "circle":
        return {"ellipse": [left, top, left + s, top + s],
                "px": [left, top, left + side, top + side]}
    cx, cy = left + s / 2, top + s / 2
    if shape == "square":
        pts = [(left, top), (left + s, top), (left + s, top + s), (left, top + s)]
    elif shape == "triangle":
        pts = [(left, top + s), (left + s, top + s), (cx, top)]
    elif shape == "diamond":
        pts = [(cx, top), (left + s, cy), (cx, top + s), (left, cy)]
    else:  # star: five points, the inner radius 0.45 of the outer, one point up
        pts = [(cx + r * math.sin(k * math.pi / 5), cy - r * math.cos(k * math.pi / 5))
               for k in range(10) for r in [(s / 2) * (1.0 if k % 2 == 0 else 0.45)]]
    pts = [[round(x), round(y)] for x, y in pts]
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    return {"polygon": pts, "px": [min(xs), min(ys), max(xs) + 1, max(ys) + 1]}


def _feature(obj: dict, name: str) -> float:
    left, top, right, bottom = obj["px"]
    return {"area": (right - left) * (bottom - top), "cx": (left + right) / 2,
            "cy": (top + bottom) / 2}[name]


def _related(obj: dict, rel: str, anchor: dict) -> bool:
    """Strictly beside: the boxes do not overlap along the relation's axis."""
    l, t, r, b = obj["px"]
    al, at, ar, ab = anchor["px"]
    return {"left of": r <= al, "right of": l >= ar, "above": b <= at, "below": t >= ab}[rel]


def resolve(expr: dict, objects: list) -> list:
    """Indices of the objects the expression picks out; exactly [target] means unique. An
    ambiguous superlative (the best not clearly ahead) or anchor returns the tied ones or []."""
    found = [i for i, o in enumerate(objects)
             if all(expr.get(k) in (None, o[k]) for k in ("shape", "colour", "size"))]
    rel = expr.get("relation")
    if rel:
        anchors = resolve(rel["anchor"], objects)
        if len(anchors) != 1:
            return []
        found = [i for i in found if i != anchors[0]
                 and _related(objects[i], rel["rel"], objects[anchors[0]])]
    sup = expr.get("superlative")
    if sup and len(found) > 1:
        name, sign = SUPERLATIVES[sup]
        ranked = sorted(found, key=lambda i: sign * _feature(objects[i], name))
        first, second = (_feature(objects[i], name) for i in ranked[:2])
        # "clearly": 1.5x the area, or a tenth of the image apart
        span = objects[0]["image"][0 if name == "cx" else 1] if name != "area" else None
        clear = (max(first, second) >= 1.5 * min(first, second) if name == "area"
                 else abs(first - second) >= 0.1 * span)
        return [ranked[0]] if clear else ranked
    return found


def describe(expr: dict) -> str:
    words = ["the", expr.get("superlative"), expr.get("size"), expr.get("colour"),
             expr.get("shape") or "shape"]
    text = " ".join(w for w in words if w)
    rel = expr.get("relation")
    return f"{text} {rel['rel']} {describe(rel['anchor'])}" if rel else text


def _candidates(objects: list, target: int) -> list:
    """Expressions that may pick out the target; resolve() decides which really do."""
    o = objects[target]
    out = [{"shape": o["shape"]}, {"colour": o["colour"]},
           {"colour": o["colour"], "shape": o["shape"]},
           {"size": o["size"], "colour": o["colour"], "shape": o["shape"]}]
    for sup in SUPERLATIVES:
        out += [{"superlative": sup, "shape": o["shape"]},
                {"superlative": sup, "colour": o["colour"]}]
    out += [{"superlative": sup} for sup in ("largest", "smallest")]
    for j, anchor in enumerate(objects):
        if j == target:
            continue
        for a_expr in ({"shape": anchor["shape"]},
                       {"colour": anchor["colour"], "shape": anchor["shape"]}):
            if resolve(a_expr, objects) == [j]:
                out += [{"colour": o["colour"], "shape": o["shape"],
                         "relation": {"rel": rel, "anchor": a_expr}} for rel in RELATIONS]
                out += [{"shape": o["shape"], "relation": {"rel": rel, "anchor": a_expr}}
                        for rel in RELATIONS]
                break
    return out


def _new_object(rng, width, height, shape, colour, size, placed) -> dict | None:
    lo, hi = SCALE[size]
    side = max(8, round(rng.uniform(lo, hi) * min(width, height)))
    for _ in range(100):
        left, top = rng.randint(2, width - side - 2), rng.randint(2, height - side - 2)
        geo = shape_geometry(shape, left, top, side)
        l, t, r, b = geo["px"]
        if all(r + GAP <= p["px"][0] or p["px"][2] + GAP <= l or b + GAP <= p["px"][1]
               or p["px"][3] + GAP <= t for p in placed):
            return {"shape": shape, "colour": colour, "size": size, "image": [width, height], **geo}
    return None


def sample_scene(rng: random.Random) -> tuple:
    """(width, height, objects); object 0 is the would-be target, object 1 its distractor.
    No two objects share shape, colour and size, so the size-colour-shape words always work."""
    width, height = rng.choice(SIZES)
    count = rng.randint(2, 5)
    t_shape, t_colour = rng.choice(SHAPES), rng.choice(list(COLOURS))
    wanted = [(t_shape, t_colour, rng.choice(list(SCALE)))]
    twist = rng.choice(("shape", "colour", "size"))  # what the distractor shares with the target
    if twist == "shape":
        other = rng.choice([c for c in COLOURS if c != t_colour])
        wanted.append((t_shape, other, rng.choice(list(SCALE))))
    elif twist == "colour":
        other = rng.choice([s for s in SHAPES if s != t_shape])
        wanted.append((other, t_colour, rng.choice(list(SCALE))))
    else:
        wanted.append((t_shape, t_colour, "small" if wanted[0][2] == "large" else "large"))
    while len(wanted) < count:
        w = (rng.choice(SHAPES), rng.choice(list(COLOURS)), rng.choice(list(SCALE)))
        if w not in wanted:
            wanted.append(w)
    objects = []
    for shape, colour, size in wanted:
        obj = _new_object(rng, width, height, shape, colour, size, objects)
        if obj is None and size == "large":  # a crowded image: fall back to a small one
            obj = _new_object(rng, width, height, shape, colour, "small", objects)
        if obj is not None and not any(
                (o["shape"], o["colour"], o["size"]) == (shape, colour, obj["size"])
                for o in objects):
            objects.append(obj)
    return width, height, objects


def make_item(seed: int, index: int, n: int) -> dict:
    """Item `index` of the set; depends only on (seed, index), never on n or earlier items."""
    rng = random.Random(f"box-scenes:{seed}:{index}")
    width, height, objects = sample_scene(rng)
    absent = rng.random() < ABSENT_SHARE
    if absent:
        shapes, colours = {o["shape"] for o in objects}, {o["colour"] for o in objects}
        pairs = [(c, s) for c in COLOURS for s in SHAPES if not any(
            (o["colour"], o["shape"]) == (c, s) for o in objects)]
        near = [p for p in pairs if p[0] in colours and p[1] in shapes]  # the hard absences
        colour, shape = rng.choice(near or pairs)
        expr, target = {"colour": colour, "shape": shape}, None
    else:
        target = 0  # object 0 has its distractor; a shuffle hides its place in the list
        order = list(range(len(objects)))
        rng.shuffle(order)
        objects, target = [objects[k] for k in order], order.index(0)
        options = [e for e in _candidates(objects, target) if resolve(e, objects) == [target]
                   and not (e.get("superlative") and len(resolve(  # "the largest" of one: odd
                       {k: v for k, v in e.items() if k != "superlative"}, objects)) < 2)]
        expr = rng.choice(options)
    box = None
    if target is not None:
        l, t, r, b = objects[target]["px"]
        box = {"left": l / width, "top": t / height, "right": r / width, "bottom": b / height}
    return {"id": f"box-{seed}-{index:05d}", "index": index, "split": split_of(index),
            "seed": seed, "n": n, "width": width, "height": height,
            "background": {"colour": list(rng.choice(BACKGROUNDS)),
                           "texture": rng.randrange(1 << 30) if rng.random() < 0.5 else None},
            "objects": objects, "target": target, "expression": expr,
            "instructions": describe(expr), "present": target is not None, "box": box}


def solo(item: dict, rng: random.Random) -> dict:
    """The item with one object alone on the background: the easiest scenes, for a model
    learning to see (tools/models/train_grounding.py's curriculum). A present item keeps its
    target, named by colour, shape or both; an absent one keeps one of its objects and is named
    those three ways too, each form as often (present items of the eval half: 74% by one word;
    absent ones now about two in three): by both, with an object that shares the named colour or
    shape where there is one (a near miss), or by the colour (or shape) alone, with an object
    not of it. Absent items kept their whole scene until 2026-12-04, so one object or several
    told `present` without a look; until run 26 they were always named by both, so the words
    told it (run 26 said 0.997 to every one-word name and 0.55 to every two-word one).
    """
    if not item["present"]:
        named, objects = item["expression"], item["objects"]
        form = rng.choice(("both", "colour", "shape"))
        unlike = [o for o in objects if form != "both" and o[form] != named[form]]
        if unlike:
            expr = {form: named[form]}
            return {**item, "objects": [rng.choice(unlike)], "expression": expr,
                    "instructions": describe(expr)}
        near = [o for o in objects
                if o["colour"] == named.get("colour") or o["shape"] == named.get("shape")]
        return {**item, "objects": [rng.choice(near or objects)]}
    obj = item["objects"][item["target"]]
    expr = rng.choice(({"colour": obj["colour"], "shape": obj["shape"]},
                       {"colour": obj["colour"]}, {"shape": obj["shape"]}))
    return {**item, "objects": [obj], "target": 0, "expression": expr,
            "instructions": describe(expr)}


def lone(seed: int, index: int, n: int) -> dict:
    """Item `index` of the --solo set: make_item's with one object left (`solo`)."""
    item = solo(make_item(seed, index, n), random.Random(f"box-solo:{seed}:{index}"))
    return {**item, "id": item["id"] + "-solo", "solo": True}


def split_of(index: int) -> str:
    return "fit" if index % 2 == 0 else "eval"


def select(items: list, part: str, limit: int | None = None) -> list:
    """The fit half, the eval half or all, in index order; then the first `limit`."""
    chosen = [it for it in items if part == "all" or split_of(it["index"]) == part]
    return chosen[:limit] if limit is not None else chosen


def draw_object(draw, obj: dict) -> None:
    fill = COLOURS[obj["colour"]]
    if "ellipse" in obj:
        draw.ellipse(obj["ellipse"], fill=fill)
    else:
        draw.polygon([tuple(p) for p in obj["polygon"]], fill=fill)


def render(item: dict):
    """The scene as a Pillow image: background (with faint dots when textured), then shapes."""
    from PIL import Image, ImageDraw
    bg = tuple(item["background"]["colour"])
    image = Image.new("RGB", (item["width"], item["height"]), bg)
    draw = ImageDraw.Draw(image)
    if item["background"]["texture"] is not None:
        rng = random.Random(item["background"]["texture"])
        for _ in range(item["width"] * item["height"] // 30):
            d = rng.randint(-14, 14)
            draw.point((rng.randrange(item["width"]), rng.randrange(item["height"])),
                       fill=tuple(max(0, min(255, c + d)) for c in bg))
    for obj in item["objects"]:
        draw_object(draw, obj)
    return image


def data_url(image) -> str:
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def command(item: dict) -> str:
    """The command that wrote the set `item` came from."""
    return (f"bench/data/box_scenes.py --seed {item.get('seed')} --n {item.get('n')}"
            + (" --solo" if item.get("solo") else ""))


def load(path) -> list:
    """Items from a box_scenes.jsonl (a directory means its box_scenes.jsonl)."""
    path = Path(path)
    if path.is_dir():
        path = path / "box_scenes.jsonl"
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=400, help="items (half fit, half eval)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=DEFAULT_OUT, help="directory for box_scenes.jsonl")
    parser.add_argument("--png", action="store_true", help="also write OUT/png/<id>.png")
    parser.add_argument("--solo", action="store_true", help="one object an item: a present "
                        "item's target alone, an absent item's near miss (`solo`, ids ending "
                        "-solo): what a model that cannot yet pick the named object out of a "
                        "crowd is measured on")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.png:
        (out / "png").mkdir(exist_ok=True)
    absent = 0
    with (out / "box_scenes.jsonl").open("w", encoding="utf-8") as f:
        for i in range(args.n):
            item = lone(args.seed, i, args.n) if args.solo else make_item(args.seed, i, args.n)
            image = render(item)
            if args.png:
                image.save(out / "png" / f"{item['id']}.png")
            absent += not item["present"]
            f.write(json.dumps({**item, "image": data_url(image)}) + "\n")
    print(f"wrote {args.n} items ({absent} absent) to {out / 'box_scenes.jsonl'}"
          f"  [{command({'seed': args.seed, 'n': args.n, 'solo': args.solo})}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
