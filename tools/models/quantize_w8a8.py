"""An int8 copy of a built checkpoint for vLLM's CPU int8 path (W8A8: int8 weights with one
scale per output channel, int8 activations quantised per token at run time), in the
compressed-tensors format vLLM reads.

Usage: .venv/bin/python tools/models/quantize_w8a8.py MODEL_DIR OUT_DIR
(build_model.py --model NAME-w8a8 runs it on the built NAME, and checks the result's sha256.)
Every linear layer of the decoder blocks (attention q/k/v/o, MLP gate/up/down) is rounded to
int8 symmetrically per output row; embeddings, norms, biases and the lm_head stay as built.
vLLM's CPU build runs such layers through oneDNN (or its AMX kernels where the CPU has them).
Whether it is worth serving is measured, not assumed (docs/measured.md: the default model on a
CPU). Prints OUT_DIR.
"""
import json
import shutil
import sys
from pathlib import Path

LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
SCHEME = {"quant_method": "compressed-tensors", "format": "int-quantized",
          "quantization_status": "compressed", "ignore": ["lm_head"],
          "config_groups": {"group_0": {
              "targets": ["Linear"],
              "weights": {"num_bits": 8, "type": "int", "symmetric": True,
                          "strategy": "channel", "dynamic": False},
              "input_activations": {"num_bits": 8, "type": "int", "symmetric": True,
                                    "strategy": "token", "dynamic": True}}}}


def quantize(model_dir: Path, into: Path) -> None:
    """The int8 copy of MODEL_DIR's checkpoint written into the (empty) folder INTO."""
    import torch
    from safetensors.torch import load_file, save_file
    tensors = load_file(str(model_dir / "model.safetensors"))
    quantized = {}
    for name, t in tensors.items():
        if name.endswith(".weight") and name.split(".")[-2] in LINEAR:
            w = t.float()
            scale = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-8) / 127.0
            quantized[name] = torch.round(w / scale).clamp(-127, 127).to(torch.int8)
            quantized[name[:-len("weight")] + "weight_scale"] = scale.to(torch.float32)
        else:
            quantized[name] = t.contiguous()
    for f in model_dir.iterdir():
        if f.is_file() and f.name not in ("model.safetensors", "SHA256SUMS"):
            shutil.copy2(f, into / f.name)
    config = json.loads((model_dir / "config.json").read_text())
    config["quantization_config"] = SCHEME
    (into / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_file(quantized, str(into / "model.safetensors"), metadata={"format": "pt"})


if __name__ == "__main__":
    if len(sys.argv) != 3 or {"-h", "--help"} & set(sys.argv[1:]):
        sys.exit(print(__doc__))
    source, target = (Path(a).expanduser().resolve() for a in sys.argv[1:])
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    quantize(source, partial)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    print(target)
