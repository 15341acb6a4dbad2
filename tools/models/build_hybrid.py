"""Build a tiny random-weight Qwen3-Next checkpoint (hybrid: Gated DeltaNet + full attention)
that vLLM 0.32.0 CPU can serve, to exercise hybrid-model code paths (mamba_cache_mode=align,
state-block-aligned prefill splits) without a real model.

Usage: python tools/models/build_hybrid.py OUT_DIR
       (docs use ~/.cache/onepass/models/qwen3-next-tiny)
Prints OUT_DIR when it is ready. The weights are random (fixed torch seed), so the model's
answers mean nothing; the tokenizer and chat template are SmolLM2's, copied byte for byte.
A finished build is recognised by its manifest (SHA256SUMS) and checked, never rebuilt.
"""
import shutil
from pathlib import Path

from model_manifest import fresh_partial, main, publish, sibling_tokenizer

SEED = 0
# The tokenizer comes from the embedded SmolLM2 built beside OUT_DIR (tools/models/build_model.py).
TOKENIZER_NAME = "smollm2-135m-instruct"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
# SmolLM2's special ids: <|im_start|> = 1, <|im_end|> = 2 (also its pad token).
BOS_ID, EOS_ID = 1, 2
# Two fresh builds here (2026-11-30, pinned torch/transformers) gave these bytes: a different
# digest means a different build, so it is refused rather than silently served.
EXPECTED = {"model.safetensors":
            "10a288c8a8be43ca4838c8b51c2cf80e704b2d5b5e2aad3bfc3a0f7846ac6176"}

# Small enough for a fast forward pass on 2 cores, shaped like the real thing where vLLM
# cares: layers GDN, full, GDN, full; every layer MoE (vLLM's Qwen3-Next requires it).
CONFIG = dict(
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=4,
    layer_types=["linear_attention", "full_attention"] * 2,
    full_attention_interval=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=64,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    linear_key_head_dim=64,
    linear_value_head_dim=64,
    linear_conv_kernel_dim=4,
    num_experts=4,
    num_experts_per_tok=2,
    moe_intermediate_size=128,
    shared_expert_intermediate_size=128,
    decoder_sparse_step=1,
    mlp_only_layers=[],
    max_position_embeddings=4096,
    tie_word_embeddings=False,
    bos_token_id=BOS_ID,
    eos_token_id=EOS_ID,
    pad_token_id=EOS_ID,
)


def vocab_size(tokenizer_dir: Path) -> int:
    """The tokenizer's full vocabulary (added tokens included), so every id has a row."""
    from transformers import AutoTokenizer
    return len(AutoTokenizer.from_pretrained(tokenizer_dir))


def save_model(tmp: Path, tokenizer_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen3NextConfig
    config = Qwen3NextConfig(vocab_size=vocab_size(tokenizer_dir), **CONFIG)
    config.architectures = ["Qwen3NextForCausalLM"]
    torch.manual_seed(SEED)  # the only source of randomness: the weight init
    # Initialise in fp32 and cast, so the bytes do not depend on bf16 init kernels.
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model = model.to(torch.bfloat16)  # the CPU GDN ops of vLLM require bf16
    model.config.dtype = torch.bfloat16
    model.save_pretrained(tmp)
    GenerationConfig(bos_token_id=BOS_ID, eos_token_id=EOS_ID,
                     pad_token_id=EOS_ID).save_pretrained(tmp)


def build(out: Path) -> None:
    tokenizer_dir = sibling_tokenizer(out, TOKENIZER_NAME, TOKENIZER_FILES, "build_hybrid")
    tmp = fresh_partial(out)
    save_model(tmp, tokenizer_dir)
    for name in TOKENIZER_FILES:
        shutil.copyfile(tokenizer_dir / name, tmp / name)
    publish(tmp, out, EXPECTED, "build_hybrid", "check the pinned torch/transformers versions")


if __name__ == "__main__":
    main(build, EXPECTED, "build_hybrid")
