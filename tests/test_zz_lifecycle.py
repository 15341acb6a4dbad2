"""Start-up guard, auth and engine death, with extra shims against the session's real vLLM.
Named to run last: the final test kills vLLM and checks that serve.sh exits non-zero."""
import json
import re
import os
import signal
import time
from pathlib import Path

from conftest import ROOT, free_port, launch_serve, request, start_shim, wait_health
from test_systemone_live import NOUL, body


def variant(tmp_path: Path, **changes) -> Path:
    """serve_config.json with the default profile's fields changed."""
    doc = json.loads((ROOT / "serve_config.json").read_text())
    doc["profiles"][doc["default_profile"]].update(changes)
    path = tmp_path / "serve_config.json"
    path.write_text(json.dumps(doc))
    return path


def shim_with(stack, tmp_path, env=None, **changes):
    port = free_port()
    args = ("--config", str(variant(tmp_path, **changes))) if changes else ()
    proc = start_shim(stack.vllm_url, port, env, args)
    return proc, f"http://127.0.0.1:{port}"


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    return proc.stdout.read()


def test_api_key(stack, tmp_path):
    """auth: missing key 403, wrong key 401 (detail.error_type), right key 200; no key logged."""
    proc, base = shim_with(stack, tmp_path, env={"ONEPASS_API_KEY": "s3cret-key"})
    try:
        wait_health(base, {"ok"})
        status, _, doc = request(base, "POST", "/v1/systemone", body({"r": NOUL}))
        assert status == 403 and doc["detail"]["error_type"] == "authentication_error"
        status, _, doc = request(base, "POST", "/v1/systemone", body({"r": NOUL}),
                                 {"Authorization": "Bearer wrong"})
        assert status == 401 and doc["detail"]["error_type"] == "authentication_error"
        assert request(base, "GET", "/v1/models", None,
                       {"Authorization": "Bearer wrong"})[0] == 401
        status, _, doc = request(base, "POST", "/v1/systemone", body({"r": NOUL}),
                                 {"Authorization": "Bearer s3cret-key"})
        assert status == 200, doc
    finally:
        log = stop(proc)
    assert "s3cret-key" not in log and "ticket" not in log.lower()


def test_guard_wrong_model_keeps_503(stack, tmp_path):
    """probes: vLLM serving another model keeps /health and /v1/systemone at 503 with why."""
    proc, base = shim_with(stack, tmp_path, served_model_name="some-other-model")
    try:
        status, doc = wait_health(base, {"failed"})
        assert status == 503 and "some-other-model" in doc["reason"]
        status, _, err = request(base, "POST", "/v1/systemone", body({"r": NOUL}))
        assert status == 503 and "some-other-model" in err["detail"]["message"]
    finally:
        stop(proc)


def test_guard_broken_tokenizer_contract(stack, tmp_path):
    """probes: a tokenizer contract whose ids do not match fails the guard."""
    contract = json.loads((ROOT / "tokenizer/smollm2-135m-instruct.json").read_text())
    contract["probes"][0]["ids"] = [1, 2, 3]
    path = tmp_path / "contract.json"
    path.write_text(json.dumps(contract))
    proc, base = shim_with(stack, tmp_path, tokenizer_contract=str(path))
    try:
        status, doc = wait_health(base, {"failed"})
        assert "tokenizer contract" in doc["reason"]
    finally:
        stop(proc)


def test_guard_chat_template_mismatch(stack, tmp_path):
    """probes: a profile chat template that differs from the model's fails the guard."""
    proc, base = shim_with(stack, tmp_path, chat_template={
        "system": "{content}\n", "user": "{content}\n", "assistant": "Answer: "})
    try:
        assert "chat_template" in wait_health(base, {"failed"})[1]["reason"]
    finally:
        stop(proc)


def test_too_few_single_token_labels_is_422(stack, tmp_path):
    """probes + systemone: labels that are not single tokens are dropped; the cap is a 422."""
    proc, base = shim_with(stack, tmp_path,
                           choice_labels=["A", "B", "C", "Hello world", "ZZZZZZZZ"])
    try:
        wait_health(base, {"ok"})
        criteria = {k: None for k in "wxyz"}
        status, _, doc = request(base, "POST", "/v1/systemone",
                                 body({"c": {"type": "choice", "criteria": criteria}}))
        assert status == 422 and "at most 3 options per choice" in json.dumps(doc)
        criteria = {k: None for k in "xyz"}
        assert request(base, "POST", "/v1/systemone",
                       body({"c": {"type": "choice", "criteria": criteria}}))[0] == 200
    finally:
        stop(proc)


def test_zz_vllm_death(stack):
    """serve.sh: when vLLM dies the shim answers 502/503 and serve.sh exits 15 with the reason."""
    os.kill(stack.vllm_pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    statuses = set()
    while time.monotonic() < deadline and stack.proc.poll() is None:
        try:
            statuses.add(request(stack.url, "POST", "/v1/systemone", body({"r": NOUL}),
                                 timeout=10)[0])
        except OSError:
            break  # serve.sh already stopped the shim
        time.sleep(0.2)
    assert statuses <= {502, 503}, statuses
    assert stack.proc.wait(timeout=120) == 15
    rest = stack.proc.stdout.read()
    assert "vLLM exited" in rest


def test_serve_sh_sigterm_stops_everything(stack, tmp_path):
    """serve.sh: SIGTERM while starting stops vLLM and the shim and exits 0."""
    from tools.wait_ready import alive
    proc, lines = launch_serve(tmp_path, "serve.sh: warm-up: start")
    pids = [int(p) for p in re.findall(r"done \(pid (\d+)", "".join(lines))]
    assert len(pids) == 2, lines
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 0
    assert not [pid for pid in pids if alive(pid)]
