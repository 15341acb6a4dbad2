"""The real openai client (3.51.0, from <venv>/clients) run on one scenario of
tests/support/openai_calls.py in its own interpreter: what the client parsed, as JSON."""
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT

CLIENTS = Path(os.environ.get("ONEPASS_VENV", ROOT / ".venv")) / "clients"


def client(base: str, scenario: str, key: str = "sk-anything") -> dict:
    """One scenario of tests/support/openai_calls.py in its own interpreter with openai 3.51.0
    first."""
    env = {**os.environ, "PYTHONPATH": str(CLIENTS)}
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "openai_calls.py"),
                           base, scenario, key], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out.pop("version") == "3.51.0"
    return out
