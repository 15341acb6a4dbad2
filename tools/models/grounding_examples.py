"""The grounding model's training examples (tools/models/train_grounding.py): an endless, seeded
stream of scenes asked as onepass asks them, tokenized, with every target a step needs.

Owns: which scene comes next and how it is cut down (the curriculum's crowd stage or lone
target, grounding_curriculum.py), which of its questions are asked (the open edges, the kinds
--only keeps, a misnamed `present` beside a present scene), and each example's targets: the
answer tokens (a soft edge's two bands), the image tokens' dense and asked targets, and the read
targets (grounding_targets.py). Never trains or writes anything.
"""
from __future__ import annotations

import base64
import io
import random
from pathlib import Path

import build_vlm
from grounding_curriculum import (CROWD_STAGES, crowd, misnamed, mixed_stage, probe, share,
                                  short)
import grounding_prompts
import grounding_targets
import box_scenes  # grounding_prompts puts bench/data on the path


class Examples:
    """An endless, seeded stream of tokenized examples: (input ids, pixel values, pixel mask,
    number of target tokens, kind, the image tokens' dense targets, their asked targets, the
    soft edge target or None, the read targets)."""

    def __init__(self, model_dir: Path, profile: str, scene_seed: int, seed: int):
        from transformers import AutoProcessor, AutoTokenizer
        self.tok = AutoTokenizer.from_pretrained(model_dir)
        self.processor = AutoProcessor.from_pretrained(model_dir)
        self.main = grounding_prompts.service(profile, self.tok)
        self.scene_seed, self.index, self.rng = scene_seed, 0, random.Random(seed)
        self.pool, self.used = [], set()
        self.progress = 0.0  # of the clock: the curriculum's shares follow it
        self.open = 1  # edges asked (the gate)
        self.crowd = None  # --start onepass: the gate's crowd stage (CROWD_STAGES index)
        self.rewords = True  # probe and short may reword onepass's prompts (--start probe)
        self.only = None  # --only: the example kinds kept (the others are never asked)
        self.soft = None  # --soft-edges: the score labels' token ids, each band's
        self.misname = 0.0  # --misname: the share of present scenes also asked misnamed
        self.mix = None  # --mix: the share of lone scenes, the rest up to the crowd stage

    def scene(self):
        from PIL import Image
        item = box_scenes.make_item(self.scene_seed, self.index, 0)
        self.index += 1
        if self.crowd is not None:
            stage = (self.crowd if self.mix is None
                     else mixed_stage(self.crowd, self.mix, self.rng))
            item = crowd(item, stage, self.rng)
        elif self.rng.random() < share("solo", self.progress):
            item = box_scenes.solo(item, self.rng)
        image = box_scenes.render(item)
        url = box_scenes.data_url(image)
        rgb = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")
        asked = grounding_prompts.examples(*self.main, item, url)
        edges = [a for a in asked if a[2] == "edge"][:self.open]  # left first
        four = self.rng.random() < share("four_edges", self.progress)
        others = [a for a in asked if a[2] != "edge" and (
            self.only and a[2] in self.only or self.rng.random() < share("others", self.progress))]
        asked = others + (edges if four else self.rng.sample(edges, min(1, len(edges))))
        asked = [a + (item,) for a in asked if not self.only or a[2] in self.only]
        other = (misnamed(item, self.rng) if item["present"] and self.misname
                 and (not self.only or "present" in self.only)
                 and self.rng.random() < self.misname else None)
        if other is not None:  # the same image, asked `present` of words that miss
            asked.append(grounding_prompts.examples(*self.main, other, url)[0] + (other,))
        cells = grounding_targets.cell_targets(item)
        for messages, target, kind, source in asked:
            edge = grounding_prompts.edge_of(messages) if kind == "edge" else None
            wanted = grounding_targets.asked_targets(source, edge)
            read = grounding_targets.read_targets(source)
            if self.rewords and edge and self.rng.random() < share("probe", self.progress):
                messages = probe(edge)
            elif self.rewords and self.rng.random() < share("short", self.progress):
                messages = short(messages, kind)
            prompt = self.tok.apply_chat_template(messages, tokenize=False,
                                                  add_generation_prompt=True)
            enc = self.processor(text=prompt, images=[rgb], return_tensors="pt")
            target_ids = self.tok.encode(target, add_special_tokens=False)
            if kind == "box":
                target_ids.append(build_vlm.EOS_ID)
            soft = None
            if edge and self.soft:  # the label's one token spread over two bands
                soft = [(self.soft[b], w) for b, w in grounding_targets.soft_bands(
                    item["box"][edge], len(self.soft))]
            seq = enc["input_ids"][0].tolist() + target_ids
            self.used.update(seq)
            self.pool.append((seq, enc["pixel_values"][0], enc["pixel_attention_mask"][0],
                              len(target_ids), kind, cells, wanted, soft, read))

    def widen(self) -> bool:
        """The gate's next stage: another edge asked, then the next crowd stage (more of the
        scene's other objects); True once everything is in and the clock may start."""
        if self.open < len(grounding_prompts.EDGE_FIELDS):
            self.open += 1
        elif self.crowd is not None and self.crowd < len(CROWD_STAGES) - 1:
            self.crowd += 1
        return (self.open == len(grounding_prompts.EDGE_FIELDS)
                and self.crowd in (None, len(CROWD_STAGES) - 1))

    def batch(self, n: int) -> list:
        while len(self.pool) < 4 * n:
            self.scene()
        self.rng.shuffle(self.pool)
        out, self.pool = self.pool[:n], self.pool[n:]
        return out
