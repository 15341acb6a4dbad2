#!/usr/bin/env python3
"""A profile's two-way start-up probes read every way this machine can: by the running vLLM
(one-way and two-way, through the shim's own Engine and layout) and by HF transformers from the
profile's unquantised checkpoint (fp32 and bf16, one-way and two-way), and by vLLM again with the
two-way flag but a mask that is not the engine's (none: a one-way engine). Prints P(yes) for
each and the spreads the probe's tolerance has to cover.

Two runs, so that vLLM and the HF checkpoints never share the machine's memory (the venv):
  ONEPASS_VLLM_KEY=KEY .venv/bin/python bench/measure/two_way_probes.py --vllm \\
      http://127.0.0.1:8762 --profile qwen2.5-coder-1.5b --out probes.json
  (stop vLLM)
  .venv/bin/python bench/measure/two_way_probes.py --hf probes.json \\
      --model-dir ~/.cache/onepass/models/qwen2.5-coder-1.5b-instruct
The first writes each probe's prompt, token ids and vLLM's reads; the second adds HF's (one
dtype loaded at a time) and prints the table.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from onepass.backend.engine import Engine  # noqa: E402
from onepass.backend.probes import probe_reads  # noqa: E402
from onepass.config import load_profile  # noqa: E402
from onepass.prompt.layout import LabelSet  # noqa: E402
from onepass.softmax import label_distribution  # noqa: E402


def vllm_reads(args) -> int:
    _, profile = load_profile(str(ROOT / "serve_config.json"), args.profile)
    engine = Engine(args.vllm, profile.served_model_name, timeout_s=600, num_connections=2,
                    key=os.environ.get("ONEPASS_VLLM_KEY", ""))
    yes, no = (engine.tokenize(prompt=label, add_special_tokens=False)[0]
               for label in profile.labels["noul"])
    labels = LabelSet(noul=((profile.labels["noul"][0], yes), (profile.labels["noul"][1], no)),
                      choice=(), score=())
    rows = []
    for probe in profile.two_way_probes:
        one, two = probe_reads(profile, labels, probe)
        rows.append({"question": probe["question"], "reference": probe["reference"][0],
                     "ids": engine.tokenize(prompt=two.prompt, add_special_tokens=False),
                     "labels": [yes, no], **{f"vLLM {name}": label_distribution(
                         engine.read(r).label_logprobs)[0] for name, r in (("one", one),
                                                                            ("two", two))}})
    engine.close()
    Path(args.out).write_text(json.dumps({"profile": args.profile, "rows": rows}, indent=1))
    print(f"wrote {args.out}")
    return 0


def hf_reads(args) -> int:
    from tests.support import hf_reference
    doc = json.loads(Path(args.hf).read_text())
    model_dir = os.path.expanduser(args.model_dir)
    for dtype in ("float32", "bfloat16"):
        for row in doc["rows"]:
            for two_way in (False, True):
                lp = hf_reference.next_token_logprobs(model_dir, row["ids"], row["labels"],
                                                      dtype, two_way)
                row[f"HF {dtype} {'two' if two_way else 'one'}"] = label_distribution(lp)[0]
        hf_reference.load_model.cache_clear()
        gc.collect()
    names = [k for k in doc["rows"][0] if k.startswith(("vLLM", "HF"))]
    print("| probe | reference | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 2) + "|")
    for row in doc["rows"]:
        print(f"| {row['question']} | {row['reference']} | "
              + " | ".join(f"{row[n]:.4f}" for n in names) + " |")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--vllm", help="the running vLLM's URL (the first run)")
    p.add_argument("--profile", default="qwen2.5-coder-1.5b")
    p.add_argument("--out", default="probes.json")
    p.add_argument("--hf", help="the first run's JSON (the second run)")
    p.add_argument("--model-dir", help="the unquantised HF checkpoint (the second run)")
    args = p.parse_args(argv)
    return hf_reads(args) if args.hf else vllm_reads(args)


if __name__ == "__main__":
    sys.exit(main())
