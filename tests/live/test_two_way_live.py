"""Two-way reading end to end: the shim's attention_mode, its start-up probe, serve.sh's
integrity checks and the plugin's own version/signature check, against real processes."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import live_bodies
from tests.support.json_http import request
from tests.support.live_stack import (CPU_ARGS, FAST_PROFILE, ROOT, SMOLLM2, changed_profile,
                                      clean_env, config_doc, free_port, start_shim, wait_health)

# Read untempered: the probe references and the mode comparison are about the raw label odds.
UNTEMPERED = {"calibration": live_bodies.UNTEMPERED}
NOUL_BODY = {"model": "jev-latest", "state": "The parcel arrived crushed and the mug is broken.",
             "questions": {"damaged": {"type": "noul", "instructions": "Was the item damaged?"}},
             "kwargs": UNTEMPERED}
PROFILE = config_doc()["profiles"][FAST_PROFILE]



def shim(vllm_url, tmp_path, **profile_changes):
    """A shim process against a given vLLM, optionally with the profile's fields changed."""
    port = free_port()
    proc = start_shim(vllm_url, port, args=changed_profile(tmp_path, **profile_changes))
    return proc, f"http://127.0.0.1:{port}"


def stop(proc):
    proc.terminate()
    proc.wait(timeout=30)


def test_modes_through_the_shim(stack):
    """shim: the request picks the mode (top level or kwargs); every answer says which read it,
    in the body and a header; a two-way answer matches the profile's HF reference."""
    status, _, health = stack.request("GET", "/health")
    assert health["attention_modes"] == ["causal", "bidirectional"]
    assert health["default_attention_mode"] == "causal"
    answers = {}
    for extra in ({}, {"attention_mode": "two-way"},
                  {"kwargs": {"attention_mode": "causal", **UNTEMPERED}}):
        status, headers, doc = stack.request("POST", "/v1/systemone", {**NOUL_BODY, **extra})
        assert status == 200, doc
        assert headers["x-onepass-attention-mode"] == doc["x_attention_mode"]
        answers[doc["x_attention_mode"]] = doc["answers"]["damaged"]["noul"]
    assert set(answers) == {"causal", "bidirectional"}
    assert abs(answers["causal"] - answers["bidirectional"]) > 0.01
    assert_probe_matches_hf(stack, PROFILE["two_way_probes"][2])


def assert_probe_matches_hf(stack, probe):
    """A probe asked through the shim, both ways, against HF transformers in fp32 on the same
    prompt in this run: two-way is as close to HF's full-mask read as one-way is to HF's
    causal one here (plus fp32's 1e-4), and farther than that from the one-way answer."""
    from onepass.backend.probes import probe_reads
    from onepass.config import load_profile
    from onepass.prompt.layout import LabelSet
    from onepass.softmax import label_distribution
    from tests.support import hf_reference
    from tests.support.engine_calls import tokenize
    _, profile = load_profile(str(ROOT / "serve_config.json"), FAST_PROFILE)
    yes, no = (tokenize(stack.vllm_url, label)[0] for label in profile.labels["noul"])
    labels = LabelSet(noul=((profile.labels["noul"][0], yes), (profile.labels["noul"][1], no)),
                      choice=(), score=())
    shim_p, hf_p = {}, {}
    for mode, read in zip(("causal", "bidirectional"), probe_reads(profile, labels, probe)):
        body = {"model": "jev-latest", "state": probe["state"], "attention_mode": mode,
                "questions": {"p": {"type": "noul", "instructions": probe["question"]}},
                "kwargs": UNTEMPERED}
        status, _, doc = stack.request("POST", "/v1/systemone", body)
        assert status == 200, doc
        shim_p[mode] = doc["answers"]["p"]["noul"]
        ids = tokenize(stack.vllm_url, read.prompt)
        hf_p[mode] = label_distribution(hf_reference.next_token_logprobs(
            str(SMOLLM2), ids, [yes, no], two_way=mode == "bidirectional"))[0]
    bound = abs(shim_p["causal"] - hf_p["causal"]) + 1e-4
    assert abs(shim_p["bidirectional"] - hf_p["bidirectional"]) <= bound, (shim_p, hf_p)
    assert abs(shim_p["bidirectional"] - hf_p["causal"]) > bound, (shim_p, hf_p)


def test_conflicting_modes_are_a_400(stack):
    status, _, doc = stack.request("POST", "/v1/systemone", {
        **NOUL_BODY, "attention_mode": "bidirectional", "kwargs": {"attention_mode": "one-way"}})
    assert status == 400 and "different modes" in doc["detail"]["message"]


def test_stock_vllm_is_one_way_only(stock, tmp_path):
    """probe: against stock vLLM the shim serves causal reads and refuses two-way ones and
    option sets (400), for a profile that reads listings."""
    proc, base = shim(stock.url, tmp_path, layout={**PROFILE["layout"], "option_sets": False})
    try:
        status, health = wait_health(base, {"ok", "failed"})
        assert health["attention_modes"] == ["causal"], health
        assert request(base, "POST", "/v1/systemone", NOUL_BODY)[0] == 200
        status, _, doc = request(base, "POST", "/v1/systemone",
                                 {**NOUL_BODY, "attention_mode": "two-way"})
        assert status == 400 and "engine plugin" in doc["detail"]["message"]
        status, _, doc = request(base, "POST", "/v1/systemone",
                                 {**NOUL_BODY, "kwargs": {"layout": {"option_sets": True}}})
        assert status == 400 and "engine plugin" in doc["detail"]["message"]
    finally:
        stop(proc)


def test_an_option_sets_profile_on_stock_vllm_never_gets_ready(stock, tmp_path):
    """probe: the embedded profile (choices read as sets) stays 503 on vLLM without the plugin,
    naming it: never a silent listing read."""
    assert PROFILE["layout"]["option_sets"] is True
    proc, base = shim(stock.url, tmp_path)
    try:
        status, health = wait_health(base, {"ok", "failed"})
        assert status == 503 and "plugin is not loaded" in health["reason"], health
    finally:
        stop(proc)


def test_two_way_profile_on_stock_vllm_never_gets_ready(stock, tmp_path):
    """probe: a profile that reads two-way by default stays 503 on vLLM without the plugin."""
    proc, base = shim(stock.url, tmp_path, trained_two_way=True, attention_mode="bidirectional")
    try:
        status, health = wait_health(base, {"ok", "failed"})
        assert status == 503 and "plugin is not loaded" in health["reason"], health
    finally:
        stop(proc)


def test_wrong_reference_answers_turn_two_way_off_or_stop_a_two_way_profile(stack, tmp_path):
    """probe: two-way reads further than 0.05 from the profile's references turn two-way
    reading off (a causal profile gets ready, one-way only, its log naming the reference), and
    keep a profile that reads two-way by default at 503."""
    probes = [dict(p, reference=[0.02, 0.98]) for p in PROFILE["two_way_probes"]]
    proc, base = shim(stack.vllm_url, tmp_path, two_way_probes=probes)
    try:
        status, health = wait_health(base, {"ok", "failed"})
        assert status == 200 and health["attention_modes"] == ["causal"], health
    finally:
        stop(proc)
    said = proc.stdout.read()
    assert "two-way reading off on this server: two-way probe" in said, said[-2000:]
    assert "reference is [0.02, 0.98]" in said, said[-2000:]
    (tmp_path / "two-way").mkdir()
    proc, base = shim(stack.vllm_url, tmp_path / "two-way", two_way_probes=probes,
                      trained_two_way=True, attention_mode="bidirectional")
    try:
        status, health = wait_health(base, {"ok", "failed"})
        assert status == 503 and health["reason"].startswith(
            "start-up check failed: this profile needs two-way reading, but two-way probe"), \
            health
        assert "reference" in health["reason"], health
    finally:
        stop(proc)


def verify_only(env_extra=None) -> subprocess.CompletedProcess:
    env = clean_env()
    env.update(ONEPASS_DEVICE="cpu", **(env_extra or {}))
    return subprocess.run(["bash", str(ROOT / "serve.sh"), "--verify-only"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def site_packages() -> Path:
    venv = Path(os.environ.get("ONEPASS_VENV") or ROOT / ".venv")
    return next(venv.glob("lib/python3*/site-packages"))


@pytest.mark.parametrize("target", ["plugin", "vllm"])
def test_serve_sh_refuses_a_tampered_file(target):
    """serve.sh: one changed byte in the plugin or in an installed vLLM file stops start-up
    (exit 11) naming the file; restored, it verifies again."""
    path = (ROOT / "engine" / "onepass_engine" / "flags.py" if target == "plugin"
            else site_packages() / "vllm" / "v1" / "core" / "sched" / "scheduler.py")
    original, stat = path.read_bytes(), path.stat()
    try:
        path.write_bytes(original + b"\n# tampered\n")
        result = verify_only()
        assert result.returncode == 11, result.stdout + result.stderr
        name = "engine/onepass_engine/flags.py" if target == "plugin" else \
            "vllm/v1/core/sched/scheduler.py"
        assert name in result.stderr, result.stderr
    finally:
        path.write_bytes(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # keep byte-code caches valid
    assert verify_only().returncode == 0


def test_plugin_stops_vllm_on_an_unknown_version_or_signature(tmp_path):
    """plugin: vLLM with another version string or a wrapped callable of another signature
    does not start, and says which."""
    code = ("import runpy, sys, vllm\n"
            "vllm.__version__ = '0.31.9'\n"
            "from vllm.v1.core.sched.scheduler import Scheduler\n"
            "Scheduler._reserve_prefill_lookahead = lambda self, request, budget: budget\n"
            "sys.argv = ['api_server'] + sys.argv[1:]\n"
            "runpy.run_module('vllm.entrypoints.openai.api_server', run_name='__main__')\n")
    env = clean_env()
    env.update(VLLM_PLUGINS="onepass_two_way", HF_HUB_OFFLINE="1")
    result = subprocess.run([sys.executable, "-c", code, "--model", str(SMOLLM2), "--port",
                             str(free_port()), *CPU_ARGS], env=env, capture_output=True,
                            text=True, timeout=300)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "onepass engine plugin refuses to start" in out, out[-3000:]
    assert "vLLM is 0.31.9; this plugin was written for 0.32.0" in out
    assert "Scheduler._reserve_prefill_lookahead(self, request, budget)" in out


def test_backends_without_row_flags_are_refused():
    """plugin: backends that take one causal flag per batch are refused with a clear message."""
    from onepass_engine.rows import check_backend

    class Config:
        class parallel_config:
            use_ubatching = False
    for name in ("FLASHINFER", "FLEX_ATTENTION"):
        backend = type("B", (), {"get_name": staticmethod(lambda n=name: n)})
        with pytest.raises(RuntimeError, match=f"{name} cannot honour per-request two-way"):
            check_backend(backend, Config)
    for name in ("CPU_ATTN", "TRITON_ATTN"):
        check_backend(type("B", (), {"get_name": staticmethod(lambda n=name: n)}), Config)
    triton = type("B", (), {"get_name": staticmethod(lambda: "TRITON_ATTN")})
    Config.cache_config = type("C", (), {"cache_dtype": "int4_per_token_head"})
    with pytest.raises(RuntimeError, match="int4_per_token_head is read by a causal-only"):
        check_backend(triton, Config)


def test_flash_attention_takes_row_flags_only_as_fa4_on_sm90():
    """plugin: FLASH_ATTN passes only as FA4 on a Hopper (SM90) device, the one place FA4's
    per-row causal flag runs (its CUDA wheel asserts so); on Blackwell, where vLLM picks FA4 by
    default, and on this CPU it is refused at start-up. Checked with the platform's answers
    replaced: no GPU here."""
    from unittest import mock

    from vllm.platforms import current_platform
    from vllm.platforms.interface import DeviceCapability
    from vllm.v1.attention.backends import fa_utils
    from onepass_engine.rows import check_backend

    class Config:
        class parallel_config:
            use_ubatching = False
    flash = type("B", (), {"get_name": staticmethod(lambda: "FLASH_ATTN")})
    with pytest.raises(RuntimeError, match="FLASH_ATTN cannot honour"):
        check_backend(flash, Config)  # this CPU: no device capability
    for capability, version, accepted in (((9, 0), 4, True), ((10, 0), 4, False),
                                          ((9, 0), 3, False), ((12, 0), 4, False)):
        with mock.patch.object(type(current_platform), "get_device_capability",
                               classmethod(lambda cls, device_id=0, c=capability:
                                           DeviceCapability(*c))), \
                mock.patch.object(fa_utils, "get_flash_attn_version", lambda *a, v=version, **k: v):
            if accepted:
                check_backend(flash, Config)
            else:
                with pytest.raises(RuntimeError, match="cannot honour"):
                    check_backend(flash, Config)


def fake_stock_venv(tmp_path: Path) -> Path:
    """A venv layout holding only the two files vllm_patches/ targets, copied from the real
    (stock) venv, with the wheel's RECORD lines for them: enough for the patch tools."""
    real = site_packages()
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    info = next(real.glob("vllm*-0.32.0.dist-info"))
    (site / info.name).mkdir(parents=True)
    targets = ("vllm/v1/core/sched/scheduler.py",
               "vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py")
    lines = [l for l in (info / "RECORD").read_text().splitlines()
             if l.split(",")[0] in targets]
    (site / info.name / "RECORD").write_text("\n".join(lines) + "\n")
    for t in targets:
        (site / t).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(real / t, site / t)
    return venv


def tool(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_vllm_patches_apply_only_to_a_dedicated_venv(tmp_path):
    """vllm_patches: refused on the plugin's venv (exit 2); applied to a stock one, whose
    verification then accepts exactly the patched bytes and catches any other change."""
    patches = ROOT / "tools" / "serve" / "vllm_patches.py"
    refused = tool(patches, "apply", site_packages().parents[2])
    assert refused.returncode == 2 and "plugin" in refused.stderr
    venv = fake_stock_venv(tmp_path)
    assert tool(patches, "apply", venv).returncode == 0
    assert tool(patches, "apply", venv).returncode == 0  # idempotent
    patched = next(venv.glob("lib/*/site-packages")) / "vllm/v1/core/sched/scheduler.py"
    assert "skip_request(request_queue)\n                            continue" in \
        patched.read_text()
    verify = ROOT / "tools" / "serve" / "verify_install.py"
    assert tool(verify, "verify", venv, "--patched").returncode == 0
    assert tool(verify, "verify", venv).returncode == 3  # a patched venv is not a plugin venv
    patched.write_text(patched.read_text() + "# edited\n")
    result = tool(verify, "verify", venv, "--patched")
    assert result.returncode == 3 and "scheduler.py differs" in result.stderr
    assert tool(patches, "check", venv).returncode == 3
