"""The box prompts onepass sends to vLLM, recorded from onepass itself, with their right answers:
the training examples of the grounding model (tools/models/train_grounding.py).

Why recorded, not rewritten: the model must learn the exact turns it will be served (system
prompt, state layout, image slot, the present, edge and generation questions, the convention's
words). A real onepass Service lays out a hybrid box request for a scene (bench/data/
box_scenes.py); its engine's HTTP call is swapped for a recorder that keeps each request body as
vLLM would receive it and answers with nothing useful. Nothing here is served or tested: the
recorder stands in for vLLM only to capture prompts.

Each scene gives up to six examples, (messages, image, target text, kind):
  present  the present read's chat, target the noul label ("Yes" or "No");
  edge     one per edge (present scenes only), target the score label of the band that holds
           the edge (the same bands onepass reads: kinds/box.py edge_questions);
  box      the generation's chat, target the JSON the schema allows, in the profile's convention
           (`{"box":null}` when the target is absent), then the end of turn.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "data"))

from onepass import config  # noqa: E402
from onepass.backend import probes, wire  # noqa: E402
from onepass.kinds import box_geometry  # noqa: E402
from onepass.kinds.base import MAX_LEVELS  # noqa: E402
from onepass.server import ADAPTERS, Service  # noqa: E402

from grounding_targets import band  # noqa: E402  (tools/models, this file's folder)

EDGE_FIELDS = ("left", "top", "right", "bottom")


class Recorder:
    """onepass's engine calls, answered by a local tokenizer (/tokenize) or recorded (reads and
    generations, which get a placeholder answer)."""

    def __init__(self, tokenizer):
        self.tok, self.bodies = tokenizer, []

    def call(self, method, path, body=None):
        doc = json.loads(b"".join(wire.pieces(body))) if body is not None else None
        if path.endswith("/tokenize"):
            if "messages" in doc:
                ids = self.tok.apply_chat_template(doc["messages"], tokenize=True,
                                                   add_generation_prompt=True)
                ids = ids["input_ids"] if isinstance(ids, dict) else ids
            else:
                ids = self.tok.encode(doc["prompt"], add_special_tokens=False)
            return 200, {"tokens": list(ids)}
        self.bodies.append(doc)
        usage = {"prompt_tokens": 64, "prompt_tokens_details": {"cached_tokens": 0}}
        if "logprob_token_ids" in doc:
            top = [{"token": f"token_id:{t}", "logprob": -1.0} for t in doc["logprob_token_ids"]]
            return 200, {"choices": [{"logprobs": {"content": [{"top_logprobs": top}]}}],
                         "usage": usage}
        return 200, {"choices": [{"message": {"content": '{"box":null}'}, "finish_reason": "stop",
                                  "logprobs": {"content": []}}], "usage": usage}


def service(profile: str, tokenizer) -> tuple[Service, Recorder]:
    """A onepass Service for `profile` whose engine calls go to a Recorder (labels checked
    through the tokenizer, as the start-up guard would)."""
    settings = config.load(["--profile", profile, "--vllm", "http://127.0.0.1:9"], environ={})
    svc, rec = Service(settings, ROOT), Recorder(tokenizer)
    svc.engine.call = rec.call
    labels = probes.verified_labels(svc.engine, svc.profile)
    svc.start(probes.Facts(labels, svc.profile.max_model_len, False, ""))
    return svc, rec


def box_text(item: dict, conv, resized_size) -> str:
    """The generation's right answer in the convention: integers, no spaces (the engine runs
    with disable_any_whitespace), null when the target is absent."""
    if item["box"] is None:
        return '{"box":null}'
    size = (item["width"], item["height"])
    frac = [item["box"][k] for k in EDGE_FIELDS]
    if conv.units == "grid":
        scale_x = scale_y = conv.scale
    elif conv.units == "resized_pixels":
        scale_x, scale_y = resized_size
    else:
        scale_x, scale_y = size
    xyxy = [round(frac[0] * scale_x), round(frac[1] * scale_y), round(frac[2] * scale_x),
            round(frac[3] * scale_y)]
    most = conv.most(size)
    xyxy = [min(most, max(0, v)) for v in xyxy]
    vals = xyxy if conv.order == "xyxy" else [xyxy[1], xyxy[0], xyxy[3], xyxy[2]]
    return '{"box":[' + ",".join(str(v) for v in vals) + "]}"


def edge_of(messages: list) -> str:
    """The edge a read asks, from its words: the engine's calls reach the recorder in their own
    order, not EDGE_FIELDS' (zipping the two mislabelled 32 of 166 present scenes)."""
    return edge_named(str(messages[-1]["content"]))


def edge_named(text: str) -> str:
    """The edge the first "the <edge> edge" in `text` names: the question's, not one the
    target's description may name later."""
    found = {text.find(f"the {edge} edge"): edge for edge in EDGE_FIELDS}
    return found[min(at for at in found if at >= 0)]


def band_tokens(svc: Service, tok) -> list[int]:
    """The token id of each edge band's score label (the labels edge reads are read over)."""
    score = svc.pipeline.facts.labels.score
    ids = [tok.encode(score[b][0], add_special_tokens=False)
           for b in range(min(MAX_LEVELS, len(score)))]
    if any(len(one) != 1 for one in ids):
        raise ValueError(f"a soft edge target needs one-token score labels; they are {ids}")
    return [one[0] for one in ids]


def examples(svc: Service, rec: Recorder, item: dict, image_url: str) -> list[tuple]:
    """The scene's examples: (messages, target text, kind), as onepass asks them."""
    body = {"model": svc.profile.model_name, "state": {"photo": image_url},
            "questions": {"q": {"type": "box", "instructions": item["instructions"],
                                "box": {"mode": "hybrid"}}}}
    rec.bodies.clear()
    svc.pipeline.decide(ADAPTERS["/v1/systemone"], json.dumps(body).encode(),
               {"Content-Type": "application/json"})
    reads = [b for b in rec.bodies if "logprob_token_ids" in b]
    gens = [b for b in rec.bodies if "logprob_token_ids" not in b]
    profile = svc.pipeline.settings.model
    labels = svc.pipeline.facts.labels
    levels = min(MAX_LEVELS, len(labels.score))
    yes, no = (label for label, _ in labels.noul)
    out = [(reads[0]["messages"], yes if item["present"] else no, "present")]
    if item["present"]:
        asked = {edge_of(read["messages"]): read for read in reads[1:5]}
        for edge in EDGE_FIELDS:
            out.append((asked[edge]["messages"], labels.score[band(item["box"][edge], levels)][0],
                        "edge"))
    conv = box_geometry.convention(profile.vision.box["convention"])
    size = (item["width"], item["height"])
    resized = box_geometry.resized(conv, size)
    out.append((gens[0]["messages"], box_text(item, conv, resized), "box"))
    return out
