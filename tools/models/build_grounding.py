"""Build the trained grounding model from the weights tools/models/train_grounding.py ships in
models/idefics3-grounding/: a small Idefics3 meant to answer box questions on the synthetic
scenes. The shipped weights are a checkpoint still in training (run 36: it finds a lone
target and tells whether the named object is there, alone or among others, but does not find
the named one among others; docs/box.md);
the build refuses without them.

Usage: python tools/models/build_grounding.py OUT_DIR [--model NAME]   (serve.sh: ~/.cache/
onepass/models/NAME). NAME is a directory of models/ (default idefics3-grounding; also
idefics3-grounding-yxyx, the same model trained to write its box in another convention).
Prints OUT_DIR when it is ready; a finished build is checked by its manifest, never rebuilt.

Why the repo ships a delta, not a checkpoint: the tied embedding (SmolLM2's 49k tokens) is
most of the model, and training touches only the rows of tokens its prompts use. So the repo
holds every other tensor and those rows (models/idefics3-grounding/weights.safetensors, bf16);
the rest of the embedding is a seeded fill made to give the same bits on every CPU
(`portable_normal`). The build is that initialisation with the shipped tensors written over
it, checked against the recorded digest.
"""
import json
import sys
from pathlib import Path

from model_manifest import fresh_partial, main, publish, sibling_tokenizer

import build_vlm

ROOT = Path(__file__).resolve().parents[2]
# Each shipped grounding model: a directory of models/ (its weights and digests), the first the
# default (train_grounding.py's --ship, the live suite's vision model).
MODELS = ("idefics3-grounding", "idefics3-grounding-yxyx")
SHIPPED = ROOT / "models" / MODELS[0]
SEED = 0
# One view of the whole image, never split into tiles: 128 px on its longest edge (padded to a
# square), 16 px patches, so the pixel shuffle leaves a 4x4 grid of 16 image tokens in reading
# order. A first run with build_vlm.py's geometry (32 px tiles of a 128 px image: 52-68 image
# tokens, the tile's place only in marker tokens) never began to use the image in 1,200 steps
# (docs/box.md).
SIDE, PATCH = 128, 16
IMAGE_SEQ_LEN = (SIDE // PATCH) ** 2 // build_vlm.SCALE ** 2  # 16
# Sized for training on 2 CPU cores in under an hour.
VISION = dict(hidden_size=96, intermediate_size=192, num_hidden_layers=3, num_attention_heads=3,
              image_size=SIDE, patch_size=PATCH)
TEXT = dict(build_vlm.TEXT, hidden_size=192, intermediate_size=384, num_hidden_layers=4,
            num_attention_heads=3, num_key_value_heads=1, head_dim=64)
EMBED = "model.text_model.embed_tokens.weight"


def recorded(name: str) -> dict:
    """The digests train_grounding.py recorded for models/NAME ({} before it ships)."""
    path = ROOT / "models" / name / "digests.json"
    return json.loads(path.read_text()) if path.exists() else {}


def prepare(tmp: Path, tokenizer_dir: Path):
    """Tokenizer, chat template and processor (one SIDE-px view, no splitting) into TMP; the
    tokenizer."""
    tok = build_vlm.save_tokenizer(tmp, tokenizer_dir)
    image_processor = {
        "image_processor_type": "Idefics3ImageProcessor", "processor_class": "Idefics3Processor",
        "do_convert_rgb": True, "do_resize": True, "size": {"longest_edge": SIDE},
        "resample": 1, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "do_pad": True,
        "do_image_splitting": False, "max_image_size": {"longest_edge": SIDE}}
    (tmp / "preprocessor_config.json").write_text(json.dumps(image_processor, indent=2) + "\n")
    processor = {"processor_class": "Idefics3Processor", "image_seq_len": IMAGE_SEQ_LEN}
    (tmp / "processor_config.json").write_text(json.dumps(processor, indent=2) + "\n")
    return tok


def new_model(tok):
    """The seeded initialisation, in fp32."""
    import torch
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration
    config = Idefics3Config(
        vision_config=VISION, text_config=dict(TEXT, vocab_size=len(tok)),
        scale_factor=build_vlm.SCALE, image_token_id=tok.convert_tokens_to_ids("<image>"),
        tie_word_embeddings=True, pad_token_id=build_vlm.EOS_ID)
    config.architectures = ["Idefics3ForConditionalGeneration"]
    torch.manual_seed(SEED)
    model = Idefics3ForConditionalGeneration(config).to(torch.float32)
    model.config.dtype = torch.float32
    with torch.no_grad():
        embed = model.get_input_embeddings().weight
        embed.copy_(portable_normal(embed.shape, config.text_config.initializer_range))
    return model


def portable_normal(shape, std: float):
    """Seeded values of mean 0 and this std, the same bits on every CPU: the embedding rows no
    prompt trains are this, not torch's normal_, whose float kernel differs between its AVX2
    and AVX-512 builds (so another CI machine's rebuild would not match the recorded digest).
    Each value is a sum of four uniform int16 draws (Python's Mersenne Twister) times one
    float32 scale: integer sums, then one IEEE multiply, never a vectorised log or cos."""
    import random
    import torch
    count = 1
    for n in shape:
        count *= n
    draws = torch.frombuffer(bytearray(random.Random(SEED).randbytes(8 * count)),
                             dtype=torch.int16).view(count, 4)
    sums = draws.to(torch.int32).sum(dim=1).to(torch.float32)  # exact: |sum| < 2**18
    scale = torch.tensor(std / (4 * 2 ** 32 / 12) ** 0.5, dtype=torch.float32)
    return (sums * scale).view(*shape)


def delta(model, used_ids) -> dict:
    """What the repo ships: every tensor but the embedding, and the embedding's used rows."""
    import torch
    state = {k: v.detach().to(torch.bfloat16).contiguous()
             for k, v in model.state_dict().items() if k != EMBED and k != "lm_head.weight"}
    ids = torch.tensor(sorted(used_ids), dtype=torch.long)
    state["embed_ids"] = ids
    state["embed_rows"] = model.state_dict()[EMBED][ids].detach().to(torch.bfloat16).contiguous()
    return state


def apply(model, state: dict) -> None:
    """The shipped tensors written over the initialisation."""
    import torch
    own = model.state_dict()
    with torch.no_grad():
        for k, v in state.items():
            if k not in ("embed_ids", "embed_rows"):
                own[k].copy_(v.to(torch.float32))
        own[EMBED][state["embed_ids"]] = state["embed_rows"].to(torch.float32)


def save(model, tmp: Path) -> None:
    from transformers import GenerationConfig
    model.save_pretrained(tmp)
    GenerationConfig(bos_token_id=build_vlm.BOS_ID, eos_token_id=build_vlm.EOS_ID,
                     pad_token_id=build_vlm.EOS_ID).save_pretrained(tmp)


def write(weights: Path, tok, tmp: Path) -> None:
    """The model built from shipped weights (the seeded initialisation, the weights written
    over it), saved into TMP beside the tokenizer and processor."""
    from safetensors.torch import load_file
    model = new_model(tok)
    apply(model, load_file(weights))
    save(model, tmp)


def build(out: Path, name: str = MODELS[0]) -> None:
    shipped = ROOT / "models" / name
    if not (shipped / "weights.safetensors").exists():
        sys.exit(f"build_grounding: no trained weights in {shipped}; tools/models/"
                 "train_grounding.py writes them")
    tokenizer_dir = sibling_tokenizer(out, build_vlm.TOKENIZER_NAME, build_vlm.TOKENIZER_FILES,
                                      "build_grounding")
    tmp = fresh_partial(out)
    write(shipped / "weights.safetensors", prepare(tmp, tokenizer_dir), tmp)
    publish(tmp, out, recorded(name), "build_grounding", "the shipped weights or the pinned "
            "torch/transformers changed")


if __name__ == "__main__":
    main(build, None, "build_grounding", {name: recorded(name) for name in MODELS})
