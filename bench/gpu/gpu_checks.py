"""The GPU side of the engine checks, run by bench/gpu/gpu_check.sh on a CUDA machine.

Usage: python bench/gpu/gpu_checks.py MODEL_DIR OUT_DIR
Starts vLLM (CUDA build 0.32.0) several ways and prints one line per check, PASS or FAIL, with
the figure it measured; a JSON summary goes to OUT_DIR/gpu_checks.json. Each server runs the
tiny random-weight Llama that gpu_check.sh builds (no hub access on the device machine).
Checks: V2 runner (CUDA default) with CUDA graphs (FULL_AND_PIECEWISE) and with FULL graphs only
(steps with two-way rows must leave the graph), the V1 runner, unflagged reads bit-identical to
stock vLLM, flagged reads against HF transformers with a full mask, prefix cache untouched, one
token, the over-budget 400, and the refusal of FlashAttention at start-up.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tests/support/hf_reference.py
LABELS = list(range(100, 132))
PROMPTS = [list(range(1000 + 7 * i, 1000 + 7 * i + 60 + 25 * i)) for i in range(4)]
BUDGET = 512
COMMON = ["--dtype", "bfloat16", "--max-model-len", "2048", "--max-num-batched-tokens",
          str(BUDGET), "--enable-prompt-tokens-details", "--gpu-memory-utilization", "0.3",
          "--served-model-name", "m"]


def post(url, body):
    req = urllib.request.Request(url + "/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def read(url, prompt, two_way=False, **extra):
    body = {"model": "m", "prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": 1,
            "logprob_token_ids": LABELS, "return_tokens_as_token_ids": True, **extra}
    if two_way:
        body["vllm_xargs"] = {"attention_mode": "bidirectional"}
    return post(url, body)


def logprobs(doc):
    top = doc["choices"][0]["logprobs"]["top_logprobs"][0]
    return [top[f"token_id:{t}"] for t in LABELS]


def start(model, port, plugins, extra, env_extra, log):
    env = dict(os.environ, VLLM_PLUGINS=plugins, **env_extra)
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
           "--port", str(port), *COMMON, *extra]
    proc = subprocess.Popen(cmd, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return proc, None
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(1)
    return proc, None


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)


def checks_for(url, stock_reads, model, results, tag):
    from tests.support import hf_reference
    for i, prompt in enumerate(PROMPTS):
        plain = logprobs(read(url, prompt)[1])
        if stock_reads is not None:
            results[f"{tag}: unflagged == stock, prompt {i}"] = plain == stock_reads[i]
        status, doc = read(url, prompt, True)
        two = logprobs(doc)
        ref = hf_reference.next_token_logprobs(model, prompt, LABELS, dtype="bfloat16")
        err = max(abs(a - b) for a, b in zip(two, ref))
        shift = max(abs(a - b) for a, b in zip(two, plain))
        results[f"{tag}: two-way vs HF bf16 prompt {i}: {err:.4f} nats (<= 0.15), "
                f"vs causal {shift:.3f}"] = err <= 0.15 and shift > 1e-3
        details = doc["usage"].get("prompt_tokens_details") or {}
        results[f"{tag}: two-way one token, no cache hit, prompt {i}"] = (
            doc["usage"]["completion_tokens"] == 1 and not details.get("cached_tokens"))
    status, doc = read(url, list(range(2000, 2000 + BUDGET + 40)), True)
    results[f"{tag}: over-budget two-way prompt -> 400"] = status == 400


def main(model: str, out: Path) -> int:
    results, runs = {}, [
        ("stock V2", "", [], {}),
        ("plugin V2 FULL_AND_PIECEWISE", "onepass_two_way", ["--attention-backend",
                                                             "TRITON_ATTN"], {}),
        ("plugin V2 FULL graphs", "onepass_two_way", ["--attention-backend", "TRITON_ATTN",
                                                      "-cc.cudagraph_mode=FULL"], {}),
        ("plugin V1 runner", "onepass_two_way", ["--attention-backend", "TRITON_ATTN"],
         {"VLLM_USE_V2_MODEL_RUNNER": "0"}),
    ]
    stock_reads = None
    for n, (tag, plugins, extra, env_extra) in enumerate(runs):
        started = time.monotonic()
        proc, url = start(model, 8800 + n, plugins, extra, env_extra, out / f"vllm-{n}.log")
        results[f"{tag}: started ({time.monotonic() - started:.0f} s)"] = url is not None
        if url is not None:
            if plugins == "":
                stock_reads = [logprobs(read(url, p)[1]) for p in PROMPTS]
            else:
                checks_for(url, stock_reads, model, results, tag)
        stop(proc)
    proc, url = start(model, 8809, "onepass_two_way", ["--attention-backend", "FLASH_ATTN"], {},
                      out / "vllm-fa.log")
    stop(proc)
    refused = url is None and "cannot honour per-request two-way" in (out / "vllm-fa.log").read_text()
    results["FLASH_ATTN refused at start-up with the plugin's message"] = refused
    for name, passed in results.items():
        print(("PASS " if passed else "FAIL ") + name, flush=True)
    (out / "gpu_checks.json").write_text(json.dumps(results, indent=1))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # usage, and nothing run
        sys.exit(print(__doc__))
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
