"""The grounding model's training curve (tools/models/train_grounding.py's curve.tsv) as a PNG:
mean loss per example kind against step, log scale, drawn with Pillow."""
import math
from pathlib import Path

COLOURS = {"present": ((200, 40, 40), "red"), "edge": ((40, 140, 40), "green"),
           "box": ((40, 80, 220), "blue"), "aux": ((150, 60, 180), "purple"),
           "asked": ((230, 140, 20), "orange"), "read": ((20, 170, 170), "teal")}
MARKS = {"edges_open": "edges", "crowd": "crowd"}  # the gate's columns: a mark at each stage


def draw(tsv: Path, png: Path, kinds: tuple) -> None:
    """The training curve (mean loss per kind against step, log scale) as a PNG, with Pillow."""
    from PIL import Image, ImageDraw
    lines = tsv.read_text().splitlines()
    header, rows = lines[0].split("\t"), [line.split("\t") for line in lines[1:]]
    steps = [int(r[0]) for r in rows]
    kinds = [k for k in kinds if k in header]  # older curves lack later kinds
    series = {k: [float(r[header.index(k)]) for r in rows] for k in kinds}
    width, height, margin = 640, 360, 60
    image = Image.new("RGB", (width + 2 * margin, height + 2 * margin), "white")
    pen = ImageDraw.Draw(image)
    values = [v for vs in series.values() for v in vs if v == v and v > 0]
    low, high = math.log10(min(values)), math.log10(max(values))

    def point(step, loss):
        return (margin + width * step / max(steps),
                margin + height * (high - math.log10(max(loss, 1e-9))) / (high - low))
    pen.rectangle([margin, margin, margin + width, margin + height], outline="black")
    for exp in range(math.floor(low), math.ceil(high) + 1):
        for mult in (1, 2, 5):
            v = mult * 10 ** exp
            if 10 ** low <= v <= 10 ** high:
                y = point(0, v)[1]
                pen.line([margin, y, margin + width, y], fill=(225, 225, 225))
                pen.text((8, y - 6), f"{v:g}", fill="black")
    guess = math.log(10)  # a uniform guess over the ten bands: where an edge read that
    if low <= math.log10(guess) <= high:  # ignores the image sits
        y = point(0, guess)[1]
        for x in range(margin, margin + width, 12):
            pen.line([x, y, x + 6, y], fill=(120, 120, 120))
        pen.text((margin + width + 4, y - 6), "ln 10", fill=(120, 120, 120))
    for line, (column, word) in enumerate(MARKS.items()):  # the gate: where each stage began
        if column not in header:
            continue
        at = header.index(column)
        for before, row in zip(rows, rows[1:]):
            if row[at] != before[at]:
                x = point(int(row[0]), 1)[0]
                pen.line([x, margin, x, margin + height], fill=(190, 190, 190))
                pen.text((x + 3, margin + 4 + 12 * line), f"{row[at]} {word}",
                         fill=(120, 120, 120))
    for k, vs in series.items():
        pts = [point(s, v) for s, v in zip(steps, vs) if v == v]
        pen.line(pts, fill=COLOURS[k][0], width=2)
    pen.text((margin, 20), "train_grounding.py: mean cross-entropy per example kind (log scale) "
              "against step", fill="black")
    pen.text((margin, margin + height + 8), f"0 .. {max(steps)} steps;  " + "  ".join(
        f"{k}: {COLOURS[k][1]}" for k in kinds), fill="black")
    image.save(png)
