"""`bash serve.sh --dry-run` run and read back: the vLLM and shim command lines the start
would run, per profile and device (tests/unit/test_serve_dry_run.py holds them to the seed
cards; tests/unit/test_startup_matrix.py starts a shim against an engine configured so)."""
import json
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

from tests.support.paths import ROOT


def dry_run(tmp: Path, **env) -> tuple[subprocess.CompletedProcess, float]:
    """serve.sh --dry-run with only the given ONEPASS_/VLLM_ settings, a venv, cache and log
    folder in TMP that do not exist, and an nvidia-smi on PATH that leaves a mark if asked."""
    fake_bin = tmp / "bin"
    fake_bin.mkdir()
    (fake_bin / "nvidia-smi").write_text(f"#!/bin/sh\ntouch {tmp}/nvidia-smi-called\n")
    (fake_bin / "nvidia-smi").chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ONEPASS_", "VLLM_"))}
    base["PATH"] = f"{fake_bin}:{base.get('PATH', '/usr/bin:/bin')}"
    base.update(ONEPASS_VENV=str(tmp / "venv"), ONEPASS_CACHE=str(tmp / "cache"),
                ONEPASS_LOG_DIR=str(tmp / "logs"))
    start = time.monotonic()
    out = subprocess.run(["bash", str(ROOT / "serve.sh"), "--dry-run"], capture_output=True,
                         text=True, timeout=120, env={**base, **env}, cwd=ROOT)
    return out, time.monotonic() - start


class Line:
    """One `vllm:` or `shim:` line: its NAME=value settings and its argv."""

    def __init__(self, text: str):
        words = shlex.split(text)
        self.env = {}
        while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
            name, _, value = words.pop(0).partition("=")
            self.env[name] = value
        self.argv = words

    def flag(self, name: str) -> str | None:
        """The value after NAME (None when absent; a flag given twice is an error here)."""
        found = [i for i, w in enumerate(self.argv) if w == name]
        assert len(found) <= 1, f"{name} given {len(found)} times: {self.argv}"
        return self.argv[found[0] + 1] if found else None

    def json(self, name: str):
        """The JSON value after NAME (None when absent)."""
        value = self.flag(name)
        return None if value is None else json.loads(value)

    def has(self, name: str) -> bool:
        return name in self.argv


def parse(stdout: str) -> dict[tuple[str, str], dict[str, Line]]:
    """{(profile, device): {"vllm": Line, "shim": Line}}; each block exactly one of each."""
    blocks, key = {}, None
    for raw in stdout.splitlines():
        line = raw.strip()
        if m := re.fullmatch(r"profile (\S+) device (\S+)", line):
            key = (m[1], m[2])
            assert key not in blocks, f"{key} twice"
            blocks[key] = {}
        elif m := re.fullmatch(r"(vllm|shim): (.*)", line):
            assert key is not None, f"{m[1]} line before any profile: {raw}"
            assert m[1] not in blocks[key], f"two {m[1]} lines for {key}"
            blocks[key][m[1]] = Line(m[2])
        else:
            assert not line or line.startswith("#"), f"unexpected line: {raw}"
    for key, lines in blocks.items():
        assert set(lines) == {"vllm", "shim"}, (key, sorted(lines))
    return blocks
