"""Build a tiny random-weight Idefics3 (SmolVLM-style) vision-language checkpoint that vLLM 0.32.0
CPU can serve with images, to exercise the image path (data URLs through /v1/chat/completions,
image placeholders, the vision tower and the connector) without a real model.

Usage: python tools/models/build_vlm.py OUT_DIR   (docs use ~/.cache/onepass/models/idefics3-tiny)
Prints OUT_DIR when it is ready. The weights are random (fixed torch seed), so the model's
answers mean nothing. A finished build is recognised by its manifest (SHA256SUMS) and checked,
never rebuilt.

Why Idefics3: its vLLM module and its HF processor import and run without torchvision (the
processor falls back to the PIL/numpy `Idefics3ImageProcessorPil`, which vLLM's idefics3 module
handles), while LLaVA, Qwen2-VL, Gemma 3, InternVL and most others need torchvision, which does
not load beside the CPU torch. Its text model is Llama, so SmolLM2's tokenizer fits: it is copied
from the embedded SmolLM2 built beside OUT_DIR (tools/models/build_model.py), with Idefics3's image
tokens added as special tokens, and a ChatML chat template that places `<image>` where the
message's image parts are.

Image geometry: the vision tower sees 32x32 tiles in 8x8 patches (16 patches), and the connector's
pixel shuffle (scale factor 2) makes 4 tokens per tile. An image is resized so that its longest
edge is 64 px and split into up to 2x2 tiles plus one 32x32 global view, so one image costs at
most 5 * 4 = 20 `<image>` tokens (plus the tile markers around them).
"""
import json
import sys
from pathlib import Path

from model_manifest import fresh_partial, main, publish, sibling_tokenizer

SEED = 0
TOKENIZER_NAME = "smollm2-135m-instruct"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
# SmolLM2's special ids: <|im_start|> = 1, <|im_end|> = 2 (also its pad token).
BOS_ID, EOS_ID = 1, 2
# Fresh builds here (pinned torch/transformers) gave these bytes: a different digest means a
# different build, so it is refused rather than silently served. Three fresh builds here
# (2026-11-30, torch 2.13.0+cpu, transformers 5.19.0) gave these bytes. The tokenizer's digest
# also depends on SmolLM2's tokenizer (tools/models/build_model.py).
EXPECTED = {
    "model.safetensors": "bf64a676fe9b6d55017ba3d9f75cc470a7270c2a341f2f76cad5f9fe9da66429",
    "tokenizer.json": "d2536cb8a4e0fe18d8de1b3fb942ee3b20fcbce21fce13579be0bc82a8b0dada",
}

TILE = 32          # vision image_size: the side of one tile, in pixels
PATCH = 8          # vision patch_size
SCALE = 2          # connector pixel-shuffle factor
LONGEST = 2 * TILE  # images are resized to this longest edge, then split into TILE tiles
IMAGE_SEQ_LEN = (TILE // PATCH) ** 2 // SCALE ** 2  # <image> tokens per tile: 4

# Idefics3's processor looks these up by name; all must be single tokens in the tokenizer.
IMAGE_TOKENS = (["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"]
                + [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)])

VISION = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
              image_size=TILE, patch_size=PATCH)
TEXT = dict(model_type="llama", hidden_size=128, intermediate_size=256, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=1, head_dim=64,
            max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=True,
            bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=EOS_ID)

# ChatML like SmolLM2's, but a message's content may also be a list of parts (OpenAI style):
# text parts are written as they are, image parts as Idefics3's `<image>` placeholder, in order.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful AI assistant.<|im_end|>\\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'text' %}{{ part['text'] }}"
    "{% elif part['type'] in ('image', 'image_url') %}{{ '<image>' }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def save_tokenizer(tmp: Path, tokenizer_dir: Path):
    from transformers import AddedToken, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    n = len(tok)
    tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in IMAGE_TOKENS],
                   special_tokens=True)
    if len(tok) != n + len(IMAGE_TOKENS):
        sys.exit(f"build_vlm: expected {len(IMAGE_TOKENS)} new tokens, got {len(tok) - n}")
    tok.save_pretrained(tmp)
    (tmp / "chat_template.jinja").write_text(CHAT_TEMPLATE)
    return tok


def save_processor(tmp: Path, tok) -> None:
    """preprocessor_config.json and processor_config.json, written as plain JSON so they do not
    depend on which image-processor backend (PIL or torchvision) this machine has."""
    image_processor = {
        "image_processor_type": "Idefics3ImageProcessor",
        "processor_class": "Idefics3Processor",
        "do_convert_rgb": True, "do_resize": True, "size": {"longest_edge": LONGEST},
        "resample": 1,  # LANCZOS
        "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "do_pad": True,
        "do_image_splitting": True, "max_image_size": {"longest_edge": TILE},
    }
    (tmp / "preprocessor_config.json").write_text(json.dumps(image_processor, indent=2) + "\n")
    processor = {"processor_class": "Idefics3Processor", "image_seq_len": IMAGE_SEQ_LEN}
    (tmp / "processor_config.json").write_text(json.dumps(processor, indent=2) + "\n")


def save_model(tmp: Path, tok) -> None:
    import torch
    from transformers import GenerationConfig, Idefics3Config, Idefics3ForConditionalGeneration
    config = Idefics3Config(
        vision_config=VISION, text_config=dict(TEXT, vocab_size=len(tok)), scale_factor=SCALE,
        image_token_id=tok.convert_tokens_to_ids("<image>"), tie_word_embeddings=True,
        pad_token_id=EOS_ID)
    config.architectures = ["Idefics3ForConditionalGeneration"]
    torch.manual_seed(SEED)  # the only source of randomness: the weight init
    model = Idefics3ForConditionalGeneration(config).to(torch.float32)
    model.config.dtype = torch.float32
    model.save_pretrained(tmp)
    GenerationConfig(bos_token_id=BOS_ID, eos_token_id=EOS_ID,
                     pad_token_id=EOS_ID).save_pretrained(tmp)
    params = sum(p.numel() for p in model.parameters())
    print(f"build_vlm: Idefics3 {params / 1e6:.1f} M parameters, vocab {len(tok)}, "
          f"{IMAGE_SEQ_LEN} image tokens per {TILE}px tile", file=sys.stderr)


def build(out: Path) -> None:
    tokenizer_dir = sibling_tokenizer(out, TOKENIZER_NAME, TOKENIZER_FILES, "build_vlm")
    tmp = fresh_partial(out)
    tok = save_tokenizer(tmp, tokenizer_dir)
    save_processor(tmp, tok)
    save_model(tmp, tok)
    publish(tmp, out, EXPECTED, "build_vlm", "check the pinned torch/transformers versions")


if __name__ == "__main__":
    main(build, EXPECTED, "build_vlm")
