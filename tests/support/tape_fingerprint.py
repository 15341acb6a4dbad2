"""What a replay tape's replies depend on, as digests of the checkout: a tape records them when
it is recorded (bench/parity/record.py), and a replay in a checkout whose digests differ is
refused, naming what changed (tests/support/replay_shim.py).

Owns: the fingerprint of one profile: the vLLM pin and the digest of the CPU lock it comes
from (deps/cpu.txt), the digests of engine/ and vllm_patches/ (every file but caches), the
digests the repository records for the profile's embedded model (the builders refuse a build
whose weights differ from them: tools/models/), and the profile's fields that reach a prompt or
a read (serve_config.json; its prose and provenance left out).
Never: reads the model's files or vLLM: the fingerprint is the checkout's, the same with or
without a set-up venv.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys

from tests.support.paths import ROOT

PROSE = ("comment", "description", "release_date", "provenance", "aliases")
SMOLLM2 = "smollm2-135m-instruct"  # the default build; the vision builds borrow its tokenizer


def tree(folder, root=ROOT) -> str:
    """sha256 over every file's path and bytes under root/folder, caches left out."""
    h = hashlib.sha256()
    for path in sorted(p for p in (root / folder).rglob("*") if p.is_file()
                       and "__pycache__" not in p.parts and p.suffix != ".pyc"):
        h.update(f"{path.relative_to(root).as_posix()}\0".encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def vllm_pin() -> str:
    found = re.search(r"^(vllm(?:-cpu)?==\S+)", (ROOT / "deps" / "cpu.txt").read_text(), re.M)
    return found.group(1) if found else "none"


def model_records(embedded: str) -> dict:
    """The digests tools/models/ records for a build (SmolLM2's GGUF and tokenizer included)."""
    folder = str(ROOT / "tools" / "models")
    if folder not in sys.path:
        sys.path.append(folder)
    import build_model
    records = {SMOLLM2: build_model.MODELS[SMOLLM2]}
    if embedded in build_model.MODELS:
        records[embedded] = build_model.MODELS[embedded]
    elif embedded == "idefics3-tiny":
        import build_vlm
        records[embedded] = {"expected": build_vlm.EXPECTED}
    elif embedded != SMOLLM2:
        records[embedded] = {"models": tree(f"models/{embedded}")}
    return records


def fingerprint(profile: str) -> dict:
    config = json.loads((ROOT / "serve_config.json").read_text())
    fields = {k: v for k, v in config["profiles"][profile].items() if k not in PROSE}
    return {"vllm": vllm_pin(), "cpu_lock": digest((ROOT / "deps" / "cpu.txt").read_text()),
            "engine": tree("engine"), "vllm_patches": tree("vllm_patches"),
            "model": digest(model_records(fields.get("embedded") or SMOLLM2)),
            "profile": digest(fields)}


def changes(recorded: dict | None, profile: str) -> list[str]:
    """What differs between a tape's fingerprint and this checkout's, one line each ([]: none)."""
    if not recorded:
        return ["the tape records no fingerprint (recorded before tapes had one)"]
    now = fingerprint(profile)
    return [f"{name}: the tape's {recorded.get(name)}, this checkout's {now[name]}"
            for name in now if recorded.get(name) != now[name]]
