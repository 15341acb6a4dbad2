"""Reference answers for a profile's two-way start-up probes, from HF transformers.

Usage: .venv/bin/python tools/models/two_way_reference.py [PROFILE] [--write]
Lays out each probe exactly as the shim does (onepass.prompt.layout), tokenizes it with the model's own
tokenizer, reads the noul labels with tests/support/hf_reference.py in fp32 with a full (all-zero)
additive mask, and prints [P(yes), P(no)] renormalised over the two labels. --write stores them
in serve_config.json, where the shim's start-up probe compares vLLM's two-way reads with them.
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
from onepass.backend.probes import probe_reads  # noqa: E402
from onepass.softmax import label_distribution  # noqa: E402

MODEL_DIRS = {"smollm2-135m-fast": "~/.cache/onepass/models/smollm2-135m-instruct",
              "qwen2.5-coder-1.5b": "~/.cache/onepass/models/qwen2.5-coder-1.5b-instruct"}


def main(argv: list[str]) -> int:
    from tests.support import hf_reference
    from transformers import AutoTokenizer
    name = next((a for a in argv if not a.startswith("--")), "smollm2-135m-fast")
    _, profile = load_profile(str(ROOT / "serve_config.json"), name)
    model_dir = os.path.expanduser(MODEL_DIRS[name])
    tok = AutoTokenizer.from_pretrained(model_dir)
    yes, no = (tok.encode(label, add_special_tokens=False)[0] for label in profile.labels["noul"])
    labels = LabelSet(noul=((profile.labels["noul"][0], yes), (profile.labels["noul"][1], no)),
                      choice=(), score=())
    refs = []
    for probe in profile.two_way_probes:
        _, two_way = probe_reads(profile, labels, probe)
        ids = tok.encode(two_way.prompt, add_special_tokens=False)
        lp = hf_reference.next_token_logprobs(model_dir, ids, [yes, no], two_way=True)
        refs.append([round(p, 4) for p in label_distribution(lp)])
        print(f"{probe['question']!r}: {len(ids)} tokens, two-way [P(yes), P(no)] = {refs[-1]}")
    if "--write" in argv:
        path = ROOT / "serve_config.json"
        doc = json.loads(path.read_text())
        for probe, ref in zip(doc["profiles"][name]["two_way_probes"], refs):
            probe["reference"] = ref
        path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote the references into {path}")
    return 0


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # usage, and nothing run
        sys.exit(print(__doc__))
    sys.exit(main(sys.argv[1:]))
