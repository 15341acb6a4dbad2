"""How closely vLLM's two-way reads (engine plugin) match HF transformers with a full mask.

Usage: .venv/bin/python bench/measure/two_way_accuracy.py
Starts vLLM CPU with the plugin for the embedded SmolLM2 (fp32, then bf16) and for the tiny
random-weight Qwen3-Next hybrid (bf16; tools/models/build_hybrid.py), reads
tests/support/engine_calls.py's prompts and labels one-way and two-way, and compares with
tests/support/hf_reference.py (the same token ids; two-way = an all-zero additive mask, the
hybrid's GDN layers causal). Prints, per model, the largest label log-prob differences in nats.
"""
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the live suite's helpers (tests/support/)
from tests.support import hf_reference  # noqa: E402
from tests.support.engine_calls import (LABELS, PROMPTS, complete, label_logprobs,  # noqa: E402
                                        tokenize)
from tests.support.live_stack import (CACHE, CPU_ARGS, SMOLLM2, VLLM_TEST_ARGS,  # noqa: E402
                                      start_vllm)

HYBRID_ARGS = ("--dtype", "bfloat16", "--enforce-eager", "--max-model-len", "2048",
               "--enable-prefix-caching", *VLLM_TEST_ARGS)
MODELS = (("SmolLM2-135M-Instruct", SMOLLM2, "float32", (*CPU_ARGS, *VLLM_TEST_ARGS)),
          ("SmolLM2-135M-Instruct", SMOLLM2, "bfloat16",
           ("--dtype", "bfloat16", "--enforce-eager", "--max-model-len", "4096",
            *VLLM_TEST_ARGS)),
          ("tiny Qwen3-Next (random)", CACHE / "models" / "qwen3-next-tiny", "bfloat16",
           HYBRID_ARGS))


def gap(a, b) -> float:
    return max(abs(x - y) for x, y in zip(a, b))


def measure(url: str, model: Path, dtype: str) -> dict:
    """Per prompt: (over all six label ids, over Yes/No only)."""
    rows = {"two-way vs HF full mask": [], "one-way vs HF causal": [], "two-way vs one-way": []}
    for prompt in PROMPTS:
        ids = tokenize(url, prompt)
        two = label_logprobs(complete(url, ids, "bidirectional")[2])
        one = label_logprobs(complete(url, ids)[2])
        ref2 = hf_reference.next_token_logprobs(str(model), ids, LABELS, dtype, True)
        ref1 = hf_reference.next_token_logprobs(str(model), ids, LABELS, dtype, False)
        for what, a, b in (("two-way vs HF full mask", two, ref2),
                           ("one-way vs HF causal", one, ref1), ("two-way vs one-way", two, one)):
            rows[what].append((gap(a, b), gap(a[:2], b[:2])))
    return rows


def main() -> None:
    print(f"{len(PROMPTS)} prompts; max |difference| per prompt in nats, over all {len(LABELS)} "
          f"label ids / over Yes and No only")
    for name, model, dtype, args in MODELS:
        with tempfile.TemporaryDirectory() as tmp:
            server = start_vllm(model, "smollm2-135m-instruct", args, "onepass_two_way",
                                Path(tmp) / "vllm.log")
            try:
                rows = measure(server.url, model, dtype)
            finally:
                server.stop()
        for what, values in rows.items():
            print(f"| {name} | {dtype} | {what} | "
                  + " | ".join(", ".join(f"{v[i]:.2g}" for v in values) for i in (0, 1)) + " |")


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # usage, and nothing run
        sys.exit(print(__doc__))
    main()
