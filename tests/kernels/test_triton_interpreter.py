"""vLLM 0.32.0's Triton attention kernels (TRITON_ATTN, the GPU profiles' backend) checked under
Triton's interpreter on small CPU tensors, driven through the plugin's own row flags, metadata
hook and set-read forward: per-row causal flags in prefill, decode, paged KV with a shared
prefix, and set reads recomputed from the Triton cache layout. What each check holds is in
interpreted_checks.py. Not a GPU run: the interpreter executes the kernels' indexing and masking
with numpy in fp32; GPU numerics (tf32, half precision, tiling on real hardware) are not tried.

The checks run in one child process with TRITON_INTERPRET=1: it has to be set before triton is
first imported, and this pytest session may already have imported triton or vLLM."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# LBNHC (a block's slots outside its KV heads) is vLLM 0.32.0's layout for a TRITON_ATTN-only
# model; LBHNC (each block and head contiguous) the CPU backend's, also a valid Triton view.
CHECKS = [
    "prefill_row_flags", "decode", "decode_flagged", "paged_shared_prefix",
    *(f"{check}[{layout}]" for layout in ("LBNHC", "LBHNC") for check in ("cache_index",)),
    *(f"set_read[{layout}-{mode}]" for layout in ("LBNHC", "LBHNC")
      for mode in ("one_way", "one_way_cached", "two_way")),
]
MISSING = [m for m in ("torch", "triton", "vllm") if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"needs {MISSING} (the project venv)")


@pytest.fixture(scope="module")
def reports():
    names = CHECKS
    env = {**os.environ, "TRITON_INTERPRET": "1", "VLLM_LOGGING_LEVEL": "ERROR"}
    run = subprocess.run([sys.executable, str(HERE / "interpreted_checks.py"), *names],
                         cwd=HERE, env=env, capture_output=True, text=True, timeout=300)
    found = {}
    for line in run.stdout.splitlines():
        if line.startswith("CHECK "):
            report = json.loads(line[len("CHECK "):])
            found[report["check"]] = report
    return found, run


@pytest.mark.parametrize("check", CHECKS)
def test_under_the_triton_interpreter(reports, check):
    found, run = reports
    assert check in found, (f"the interpreted checks did not report {check} (exit "
                            f"{run.returncode}); their stderr ends:\n{run.stderr[-3000:]}")
    assert found[check]["ok"], found[check]["detail"]
