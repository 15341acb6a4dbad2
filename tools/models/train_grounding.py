"""Train a small Idefics3 grounding model from scratch on CPU, on onepass's own box prompts over
the synthetic scenes (bench/data/box_scenes.py), so box questions can be measured with a model
that sees.

Usage: .venv/bin/python tools/models/train_grounding.py [--steps 1500] [--batch 16]
         [--profile idefics3-tiny] [--seed 0] [--scene-seed 1000] [--ship DIR]
Writes DIR (default models/idefics3-grounding/): weights.safetensors (what build_grounding.py
builds the model from), curve.tsv (the training curve) and digests.json (the built model's
sha256, which the build then requires).
The architecture and processor are build_grounding.py's (Idefics3, as build_vlm.py: vLLM 0.32
CPU serves it). Examples come from tools/models/grounding_prompts.py:
the present read, one of the four edge reads (at random) and the box generation, exactly as
onepass lays them out for the profile, with the right label or JSON as target; OTHER_SHARE of
the scenes also ask for the box in another convention (OTHER_CONVENTIONS), so the model writes
the convention its prompt names. Training scenes use
--scene-seed (the eval set is seed 0, so no eval scene is trained on). The loss is
cross-entropy on the target tokens only, over the whole vocabulary (label reads and the box's
log-probs are read from the full distribution). Deterministic for a seed on one machine;
another CPU may round differently, so a retrained model gets its own digests.
Prints a line per --log-every steps (step, seconds, mean loss per example kind), as curve.tsv.
"""
from __future__ import annotations

import argparse
import base64
import io
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import build_grounding  # noqa: E402
import build_vlm  # noqa: E402
import grounding_prompts  # noqa: E402
import box_scenes  # noqa: E402  (grounding_prompts puts bench/data on the path)
from model_manifest import sha256  # noqa: E402

KINDS = ("present", "edge", "box", "box_other")
OTHER_CONVENTIONS = build_grounding.OTHER_CONVENTIONS
OTHER_SHARE = 0.3  # of the scenes also ask for the box in one of OTHER_CONVENTIONS


class Examples:
    """An endless, seeded stream of tokenized examples: (input ids, pixel values, pixel mask,
    number of target tokens, kind)."""

    def __init__(self, model_dir: Path, profile: str, scene_seed: int, seed: int):
        from transformers import AutoProcessor, AutoTokenizer
        self.tok = AutoTokenizer.from_pretrained(model_dir)
        self.processor = AutoProcessor.from_pretrained(model_dir)
        self.main = grounding_prompts.service(profile, self.tok)
        self.others = [grounding_prompts.service(profile, self.tok, c) for c in OTHER_CONVENTIONS]
        self.scene_seed, self.index, self.rng = scene_seed, 0, random.Random(seed)
        self.pool, self.used = [], set()

    def scene(self):
        from PIL import Image
        item = box_scenes.make_item(self.scene_seed, self.index, 0)
        self.index += 1
        image = box_scenes.render(item)
        url = box_scenes.data_url(image)
        rgb = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")
        asked = grounding_prompts.examples(*self.main, item, url)
        edges = [a for a in asked if a[2] == "edge"]  # one edge a scene: they cost the most
        asked = [a for a in asked if a[2] != "edge"] + self.rng.sample(edges, min(1, len(edges)))
        if self.rng.random() < OTHER_SHARE:
            other = self.rng.choice(self.others)
            asked += [(m, t, "box_other") for m, t, _ in
                      grounding_prompts.examples(*other, item, url, box_only=True)]
        for messages, target, kind in asked:
            prompt = self.tok.apply_chat_template(messages, tokenize=False,
                                                  add_generation_prompt=True)
            enc = self.processor(text=prompt, images=[rgb], return_tensors="pt")
            target_ids = self.tok.encode(target, add_special_tokens=False)
            if kind.startswith("box"):
                target_ids.append(build_vlm.EOS_ID)
            seq = enc["input_ids"][0].tolist() + target_ids
            self.used.update(seq)
            self.pool.append((seq, enc["pixel_values"][0], enc["pixel_attention_mask"][0],
                              len(target_ids), kind))

    def batch(self, n: int) -> list:
        while len(self.pool) < 4 * n:
            self.scene()
        self.rng.shuffle(self.pool)
        out, self.pool = self.pool[:n], self.pool[n:]
        return out


def collate(batch):
    import torch
    longest = max(len(ids) for ids, *_ in batch)
    tiles = max(pv.shape[0] for _, pv, *_ in batch)
    ids = torch.full((len(batch), longest), build_vlm.EOS_ID, dtype=torch.long)
    mask = torch.zeros((len(batch), longest), dtype=torch.long)
    pv = torch.zeros((len(batch), tiles, *batch[0][1].shape[1:]))
    pm = torch.zeros((len(batch), tiles, *batch[0][2].shape[1:]), dtype=torch.bool)
    rows, cols, targets = [], [], []
    for b, (seq, pixels, pmask, n, _) in enumerate(batch):
        ids[b, :len(seq)] = torch.tensor(seq)
        mask[b, :len(seq)] = 1
        pv[b, :pixels.shape[0]] = pixels
        pm[b, :pmask.shape[0]] = pmask
        for j in range(len(seq) - n, len(seq)):
            rows.append(b)
            cols.append(j - 1)  # the hidden state before a token predicts it
            targets.append(seq[j])
    return ids, mask, pv, pm, torch.tensor(rows), torch.tensor(cols), torch.tensor(targets)


def losses(model, batch):
    """Mean cross-entropy over target tokens, and per kind (for the curve)."""
    import torch
    import torch.nn.functional as F
    ids, mask, pv, pm, rows, cols, targets = collate(batch)
    hidden = model.model(input_ids=ids, attention_mask=mask, pixel_values=pv,
                         pixel_attention_mask=pm).last_hidden_state
    logits = model.lm_head(hidden[rows, cols])
    each = F.cross_entropy(logits, targets, reduction="none")
    kind_of = torch.tensor([KINDS.index(k) for _, _, _, n, k in batch for _ in range(n)])
    per_kind = {k: float(each[kind_of == i].mean().detach()) for i, k in enumerate(KINDS)
                if bool((kind_of == i).any())}
    return each.mean(), per_kind


COLOURS = {"present": (200, 40, 40), "edge": (40, 140, 40), "box": (40, 80, 220),
           "box_other": (150, 60, 180)}


def draw_curve(tsv: Path, png: Path) -> None:
    """The training curve (mean loss per kind against step, log scale) as a PNG, with Pillow."""
    from PIL import Image, ImageDraw
    rows = [line.split("\t") for line in tsv.read_text().splitlines()[1:]]
    steps = [int(r[0]) for r in rows]
    series = {k: [float(r[2 + i]) for r in rows] for i, k in enumerate(KINDS)}
    width, height, margin = 640, 360, 60
    image = Image.new("RGB", (width + 2 * margin, height + 2 * margin), "white")
    draw = ImageDraw.Draw(image)
    values = [v for vs in series.values() for v in vs if v == v and v > 0]
    low, high = math.log10(min(values)), math.log10(max(values))

    def point(step, loss):
        return (margin + width * step / max(steps),
                margin + height * (high - math.log10(max(loss, 1e-9))) / (high - low))
    draw.rectangle([margin, margin, margin + width, margin + height], outline="black")
    for exp in range(math.floor(low), math.ceil(high) + 1):
        for mult in (1, 2, 5):
            v = mult * 10 ** exp
            if 10 ** low <= v <= 10 ** high:
                y = point(0, v)[1]
                draw.line([margin, y, margin + width, y], fill=(225, 225, 225))
                draw.text((8, y - 6), f"{v:g}", fill="black")
    for k, vs in series.items():
        pts = [point(s, v) for s, v in zip(steps, vs) if v == v]
        draw.line(pts, fill=COLOURS[k], width=2)
    draw.text((margin, 20), "train_grounding.py: mean cross-entropy per example kind (log scale) "
              "against step", fill="black")
    draw.text((margin, margin + height + 8), f"0 .. {max(steps)} steps;  " + "  ".join(
        f"{k}: {'red green blue purple'.split()[i]}" for i, k in enumerate(KINDS)), fill="black")
    image.save(png)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: the machine "
                        "is shared; 2 threads on 2 busy cores ran 4x slower here)")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--profile", default="idefics3-tiny", help="the vision profile whose "
                        "prompts are learnt (idefics3-tiny's layout, labels and convention)")
    parser.add_argument("--seed", type=int, default=0, help="the data stream's order")
    parser.add_argument("--scene-seed", type=int, default=1000)
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--save-every", type=int, default=500)
    parser.add_argument("--ship", default=str(build_grounding.SHIPPED),
                        help="where the weights (and the curve, digests) are written")
    parser.add_argument("--tokenizer", default=str(Path.home() / ".cache/onepass/models/"
                                                   f"{build_vlm.TOKENIZER_NAME}"))
    parser.add_argument("--png", default="", help="also draw the curve here (--steps 0: only "
                        "draw the curve already in --ship)")
    args = parser.parse_args(argv)
    ship = Path(args.ship)
    if args.steps == 0:
        draw_curve(ship / "curve.tsv", Path(args.png))
        return 0
    import torch
    from safetensors.torch import load_file, save_file
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    ship.mkdir(parents=True, exist_ok=True)
    files = Path(tempfile.mkdtemp(prefix="grounding-"))  # tokenizer, processor, then the build
    tok = build_grounding.prepare(files, Path(args.tokenizer))
    data = Examples(files, args.profile, args.scene_seed, args.seed)
    model = build_grounding.new_model(tok)
    model.train()
    embed = model.get_input_embeddings().weight
    seen_rows = torch.zeros(embed.shape[0], dtype=torch.bool)
    # rows of tokens no prompt has used stay at their seeded values: the repo ships only the
    # used rows (build_grounding.py), so nothing else may move them
    embed.register_hook(lambda g: g * seen_rows[:, None].to(g.dtype))
    rest = [p for p in model.parameters() if p is not embed]
    opt = torch.optim.AdamW([{"params": rest, "weight_decay": 0.01},
                             {"params": [embed], "weight_decay": 0.0}], lr=args.lr)
    warm = max(1, args.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (
        1 + math.cos(math.pi * min(1.0, s / args.steps))))
    curve = open(ship / "curve.tsv", "w")
    curve.write("step\tseconds\t" + "\t".join(KINDS) + "\n")
    started, seen = time.time(), {k: [] for k in KINDS}
    for step in range(1, args.steps + 1):
        batch = data.batch(args.batch)
        seen_rows[torch.tensor(sorted(data.used))] = True
        loss, per_kind = losses(model, batch)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        for k, v in per_kind.items():
            seen[k].append(v)
        if step % args.log_every == 0 or step == args.steps:
            means = [sum(v) / len(v) if v else float("nan") for v in seen.values()]
            line = f"{step}\t{time.time() - started:.0f}\t" + "\t".join(f"{m:.4f}" for m in means)
            print(line, flush=True)
            curve.write(line + "\n")
            curve.flush()
            seen = {k: [] for k in KINDS}
        if step % args.save_every == 0:  # a look at it served while training goes on
            save_file(build_grounding.delta(model, data.used), ship / "weights.safetensors")
    save_file(build_grounding.delta(model, data.used), ship / "weights.safetensors")
    # the digests of the model build_grounding.py makes from what was just shipped
    model = build_grounding.new_model(tok)
    build_grounding.apply(model, load_file(ship / "weights.safetensors"))
    build_grounding.save(model, files)
    digests = {name: sha256(files / name) for name in ("model.safetensors", "tokenizer.json")}
    (ship / "digests.json").write_text(json.dumps(digests, indent=2) + "\n")
    if args.png:
        draw_curve(ship / "curve.tsv", Path(args.png))
    print(f"train_grounding: {args.steps} steps in {time.time() - started:.0f} s; shipped "
          f"{ship / 'weights.safetensors'} ({len(data.used)} embedding rows trained)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
