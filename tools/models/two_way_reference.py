"""Reference answers for a profile's two-way start-up probes, from HF transformers, with the
tolerance the weights and dtypes that ship need.

Usage: .venv/bin/python tools/models/two_way_reference.py [PROFILE] [--write]
Lays out each probe exactly as the shim does (onepass.prompt.layout), tokenizes it with the
model's own tokenizer and reads the noul labels with tests/support/hf_reference.py:
- `reference`: two-way (a full, all-zero additive mask), fp32, the unquantised checkpoint;
- `one_way`: the same read with the causal mask;
- `tolerance`: REFERENCE_TOLERANCE plus the spread of the shipped dtypes' two-way reads around
  the reference (bf16 on the unquantised checkpoint, and fp32 and bf16 on the int8 build when
  the profile serves one): how far a correct engine in those dtypes may land from it.
A probe whose one-way read is within its tolerance of its reference cannot tell a one-way
engine from a two-way one: it is printed as such and --write leaves it out. --write stores the
rest in serve_config.json, where the shim's start-up probe compares vLLM's two-way reads with
them (onepass/backend/probes.py).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from onepass.config import load_profile  # noqa: E402
from onepass.prompt.layout import LabelSet  # noqa: E402
from onepass.backend.probes import REFERENCE_TOLERANCE, probe_reads  # noqa: E402
from onepass.softmax import label_distribution  # noqa: E402

MODELS = "~/.cache/onepass/models/"
# profile -> (the unquantised checkpoint, the int8 build it serves or None)
MODEL_DIRS = {"smollm2-135m-fast": (MODELS + "smollm2-135m-instruct", None),
              "qwen2.5-coder-1.5b": (MODELS + "qwen2.5-coder-1.5b-instruct",
                                     MODELS + "qwen2.5-coder-1.5b-instruct-w8a8")}


def p_yes(hf_reference, model_dir, ids, label_ids, dtype, two_way) -> float:
    lp = hf_reference.next_token_logprobs(model_dir, ids, label_ids, dtype, two_way)
    return label_distribution(lp)[0]


def readings(hf_reference, name: str, prompts: list, label_ids) -> list[dict]:
    """Per probe: the reference, the one-way read and the shipped dtypes' two-way reads, one
    checkpoint and dtype in memory at a time."""
    plain, int8 = (os.path.expanduser(d) if d else None for d in MODEL_DIRS[name])
    out = [{"shipped": []} for _ in prompts]
    runs = [(plain, "float32", True), (plain, "bfloat16", False)]
    runs += [(int8, "float32", False), (int8, "bfloat16", False)] if int8 else []
    for model_dir, dtype, is_reference in runs:
        for row, ids in zip(out, prompts):
            two = p_yes(hf_reference, model_dir, ids, label_ids, dtype, True)
            if is_reference:
                row.update(reference=two,
                           one_way=p_yes(hf_reference, model_dir, ids, label_ids, dtype, False))
            else:
                row["shipped"].append(two)
        hf_reference.load_model.cache_clear()
    return out


def main(argv: list[str]) -> int:
    from tests.support import hf_reference
    from transformers import AutoTokenizer
    name = next((a for a in argv if not a.startswith("--")), "smollm2-135m-fast")
    _, profile = load_profile(str(ROOT / "serve_config.json"), name)
    tok = AutoTokenizer.from_pretrained(os.path.expanduser(MODEL_DIRS[name][0]))
    yes, no = (tok.encode(label, add_special_tokens=False)[0] for label in profile.labels["noul"])
    labels = LabelSet(noul=((profile.labels["noul"][0], yes), (profile.labels["noul"][1], no)),
                      choice=(), score=())
    prompts = [tok.encode(probe_reads(profile, labels, probe)[1].prompt,
                          add_special_tokens=False) for probe in profile.two_way_probes]
    kept = []
    for probe, row in zip(profile.two_way_probes, readings(hf_reference, name, prompts,
                                                           [yes, no])):
        spread = max((abs(x - row["reference"]) for x in row["shipped"]), default=0.0)
        entry = {"state": probe["state"], "question": probe["question"],
                 "reference": [round(row["reference"], 4), round(1 - row["reference"], 4)],
                 "one_way": [round(row["one_way"], 4), round(1 - row["one_way"], 4)],
                 "tolerance": round(REFERENCE_TOLERANCE + spread, 3)}
        catches = abs(row["reference"] - row["one_way"]) > entry["tolerance"]
        print(f"{probe['question']!r}: two-way P(yes) {row['reference']:.4f}, one-way "
              f"{row['one_way']:.4f}, shipped dtypes {[round(x, 4) for x in row['shipped']]}, "
              f"tolerance {entry['tolerance']}"
              + ("" if catches else ": cannot tell a one-way engine from a two-way one"))
        if catches:
            kept.append(entry)
    if "--write" in argv:
        path = ROOT / "serve_config.json"
        doc = json.loads(path.read_text())
        doc["profiles"][name]["two_way_probes"] = kept
        path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {len(kept)} probes into {path}")
    return 0


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # usage, and nothing run
        sys.exit(print(__doc__))
    sys.exit(main(sys.argv[1:]))
