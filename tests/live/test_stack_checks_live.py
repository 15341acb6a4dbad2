"""bench/gpu/stack_checks.py, the checks gpu_check.sh runs against a GPU stack, run here against
the session's CPU stack: every check passes on a stack that has the plugin (set reads exact in 8
orders and unlike a listing, a two-way read, the same answer beside other requests), so on a
GPU a FAIL means the device, not the script."""
import json
import subprocess
import sys

from tests.support.paths import ROOT


def test_stack_checks_pass_on_a_stack_with_the_plugin(stack, tmp_path):
    out = tmp_path / "stack_checks.json"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu" / "stack_checks.py"),
                          stack.url, "--json", str(out)], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    checks = json.loads(out.read_text())
    assert [c["check"] for c in checks] == [
        "ready", "set reads: 8 orders, one answer", "set reads differ from a listing",
        "two-way read", "same request, same answer"]
    assert all(c["ok"] for c in checks), checks
