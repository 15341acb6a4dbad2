"""The runbooks' smokes against the real stack: bench/measure/runbook_smoke.py sends each harness's
handful of requests (its shape, headers, timeout, one at a time) and reads the answers the way
the harness does (docs/runbooks/). Text harnesses on the session's embedded SmolLM2 stack, the
Box track on the vision stack (idefics3-grounding; the smoke checks shapes, not accuracy). Each smoke
runs in its own standard-library interpreter (-S: no site-packages), as a user would run it."""
import json
import subprocess
import sys

import pytest

from tests.support.live_stack import ROOT

SMOKE = ROOT / "bench" / "measure" / "runbook_smoke.py"


def smoke(name, url, tmp_path):
    out = tmp_path / f"{name}.json"
    run = subprocess.run([sys.executable, "-S", str(SMOKE), name, "--url", url, "--json", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    print(run.stdout)  # the smoke's own lines, for the runbook's timings (pytest -rP shows them)
    doc = json.loads(out.read_text())
    assert doc["ok"] and doc["error"] is None
    return doc


@pytest.mark.parametrize("name", ["jevbench", "decision-index"])
def test_text_harness_smokes_pass(stack, tmp_path, name):
    """JevBench: 4 requests (the case, options reordered, ids renamed, one question alone);
    the Decision Index: its 2 warm-ups, 3 rows and one 256-option row that must come back as
    `unsupported` (a 422 with a capacity marker)."""
    doc = smoke(name, stack.url, tmp_path)
    assert len(doc["latencies_ms"]) == {"jevbench": 4, "decision-index": 6}[name]
    if name == "decision-index":
        assert any(line.startswith("capacity 256 options: unsupported (HTTP 422")
                   for line in doc["lines"]), doc["lines"]


def test_box_track_smoke_passes(vision_stack, tmp_path):
    """ImageJevBench's Box track: one request per item, the image in the state, one box
    question; `box` inside the image and `confidence` in [0, 1] on every item."""
    doc = smoke("imagejevbench-box", vision_stack.url, tmp_path)
    assert len(doc["latencies_ms"]) == 3
    assert sum("confidence" in line for line in doc["lines"]) == 3


def test_a_text_smoke_fails_where_its_harness_would(stack, tmp_path):
    """The Decision Index smoke names a concrete model the server does not serve: the kit's
    request gets a 404, which it records as an error; the smoke exits 1 saying so."""
    run = subprocess.run([sys.executable, "-S", str(SMOKE),
                          "decision-index", "--url", stack.url, "--model", "default"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "HTTP 404" in run.stderr
