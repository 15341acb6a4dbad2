"""How much of the original record a fitted prompt still shows: the model-free half of
bench/measure/long_inputs.py.

Owns: running the shim's own fitting (onepass.prompt.fitting.fit, with vLLM's tokenizer through
onepass.backend.engine, the profile's layout and the arm's state_selection) on each padded item, and
measuring per question the share of the original record's parts (fitting.split: paragraphs, or
JSON leaf values) that appear in every one of its fitted prompts.
Never: reads with the model; the answers come from the server (long_inputs.py).
"""
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from onepass import config  # noqa: E402
from onepass.prompt import fitting, state_parts  # noqa: E402
from onepass.api import systemone  # noqa: E402
from onepass.pipeline import offline  # noqa: E402
from onepass.decision_model import compact_json  # noqa: E402
from onepass.backend.engine import Engine  # noqa: E402
from onepass.backend.probes import verified_labels  # noqa: E402
from shim_auth import vllm_key  # noqa: E402  (bench/lib, beside this module)


def shown(part: state_parts.Part) -> str:
    """The text a prompt shows for a record part: a paragraph as is, a JSON leaf's value as
    compact JSON writes it (a string without its quotes)."""
    if not part.path:
        return part.text
    text = compact_json(part.value)
    return text[1:-1] if isinstance(part.value, str) else text


def recall(vllm_url: str, originals: list, padded: list, method: str, budget: int,
           config_path: str = str(ROOT / "serve_config.json")) -> dict:
    """{(task, id, qid): share of the record's parts kept} for one arm, fitted to `budget`."""
    _, profile = config.load_profile(config_path, "")
    engine = Engine(vllm_url, profile.served_model_name, timeout_s=300, num_connections=8,
                    key=vllm_key())
    try:
        labels = verified_labels(engine, profile)
        opts = replace(profile.layout, state_selection=method)
        out = {}
        for item, original in zip(padded, originals):
            decision, meta = offline(systemone, item["body"], layout=opts)
            reads, _ = fitting.fit(decision, profile, labels, engine.count, budget)
            parts = [shown(p) for p in fitting.split(original["body"]["state"])]
            for i, qid in enumerate(meta.ids):
                prompts = [r.prompt for r in reads if r.question == i]
                kept = sum(all(p in prompt for prompt in prompts) for p in parts)
                out[(item["task"], item["id"], qid)] = kept / len(parts) if parts else 1.0
        return out
    finally:
        engine.close()
