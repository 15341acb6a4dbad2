"""The same request, the same answer, on the dtype serve.sh ships on this CPU (tools/cpu_dtype.py's
choice, not the fp32 the other live tests pin when it differs): fresh requests with every read
kind, a number question and, for some, thoughts (reasoning on, trace) answered alone with a cold
prefix cache, then beside background requests of other shapes, then again warm: byte-identical
answers and thoughts. bench/determinism.py runs the same loop over 200 pairs and more."""
import subprocess
import sys

import pytest

from conftest import ROOT, serve_stack, stop_stack

sys.path.insert(0, str(ROOT / "bench"))
import determinism  # noqa: E402


def shipped_dtype() -> str:
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "cpu_dtype.py"), "auto"],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return out[0].strip()


@pytest.fixture(scope="module")
def shipped(stack, tmp_path_factory):
    """The session's stack when serve.sh ships fp32 here (as the session pins), else a stack
    of its own in the shipped dtype (bf16 where the CPU has it natively, faster and invariant);
    both as serve.sh starts them by default (ONEPASS_BATCH_INVARIANT=1)."""
    dtype = shipped_dtype()
    if dtype == "float32":
        yield stack, dtype
        return
    own = serve_stack(tmp_path_factory.mktemp("shipped"), {"ONEPASS_DTYPE": dtype})
    yield own, dtype
    stop_stack(own)


def test_the_same_request_gets_the_same_answer_alone_loaded_and_warm(shipped):
    stack, dtype = shipped
    got = determinism.compare(stack.url, requests=4, reasoning_every=2, first=7000)
    assert got["pairs"] == 8
    assert got["differing"] == 0, (dtype, got)
