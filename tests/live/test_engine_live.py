"""The engine plugin against real vLLM: the session's vLLM (serve.sh, plugin loaded) and a stock
vLLM started here with the same flags (VLLM_PLUGINS=""), with HF transformers as the reference
for two-way reads; and vLLM as serve.sh starts it answering only with the key it gave the shim.
Nothing here stands in for the engine."""
import concurrent.futures as cf
import json
import math
import re
import urllib.request
from pathlib import Path

import pytest

from tests.support import hf_reference
from tests.support.engine_calls import (LABELS, PROMPTS, cached_tokens, complete, label_logprobs,
                                        tokenize, unique)
from tests.support.json_http import request
from tests.support.live_bodies import NOUL, body
from tests.support.live_stack import config_doc, ROOT, SMOLLM2, vllm_auth

TWO_WAY = "bidirectional"
FILLER = " The order history lists every payment, refund and message in date order." * 40



def ok(response) -> dict:
    status, _, doc = response
    assert status == 200, doc
    return doc


def test_unflagged_reads_are_bit_identical_to_stock(stack, stock):
    """engine: without the flag, label log-probs and the sampled token equal stock vLLM's."""
    for prompt in PROMPTS:
        ours, theirs = ok(complete(stack.vllm_url, prompt)), ok(complete(stock.url, prompt))
        assert label_logprobs(ours) == label_logprobs(theirs)
        assert ours["choices"][0]["text"] == theirs["choices"][0]["text"]


def test_unflagged_reads_in_batches_mixed_with_flagged_ones(stack, stock):
    """engine: unflagged rows batched beside two-way rows still equal stock vLLM bit for bit."""
    plain = [unique(p) for p in PROMPTS * 2]
    flagged = [unique(p) for p in PROMPTS * 2]
    want = [label_logprobs(ok(complete(stock.url, p))) for p in plain]
    with cf.ThreadPoolExecutor(len(plain) + len(flagged)) as pool:
        got = [pool.submit(complete, stack.vllm_url, p) for p in plain]
        two_way = [pool.submit(complete, stack.vllm_url, p, TWO_WAY) for p in flagged]
        got = [label_logprobs(ok(f.result())) for f in got]
        two_way = [label_logprobs(ok(f.result())) for f in two_way]
    assert got == want
    causal = [label_logprobs(ok(complete(stock.url, p))) for p in flagged]
    assert all(max(abs(a - b) for a, b in zip(t, c)) > 0.05 for t, c in zip(two_way, causal))


@pytest.mark.parametrize("prompt", PROMPTS)
def test_two_way_equals_hf_with_a_full_mask(stack, prompt):
    """engine: flagged label log-probs equal HF transformers with an all-zero additive mask
    (fp32, within 1e-4 nats) and differ from the causal read; causal equals HF causal."""
    ids = tokenize(stack.vllm_url, prompt)
    two_way = label_logprobs(ok(complete(stack.vllm_url, ids, TWO_WAY)))
    causal = label_logprobs(ok(complete(stack.vllm_url, ids)))
    ref_two = hf_reference.next_token_logprobs(str(SMOLLM2), ids, LABELS, two_way=True)
    ref_one = hf_reference.next_token_logprobs(str(SMOLLM2), ids, LABELS, two_way=False)
    assert max(abs(a - b) for a, b in zip(two_way, ref_two)) <= 1e-4, (two_way, ref_two)
    assert max(abs(a - b) for a, b in zip(causal, ref_one)) <= 1e-4, (causal, ref_one)
    assert max(abs(a - b) for a, b in zip(two_way, causal)) > 0.05


def test_two_way_neither_reads_nor_writes_the_prefix_cache(stack):
    """engine: cached_tokens stays 0 for flagged reads; unflagged reads still hit the cache."""
    prompt = unique(PROMPTS[1].replace("Record:\n", "Record:\n" + FILLER))
    first = ok(complete(stack.vllm_url, prompt, TWO_WAY))
    assert cached_tokens(first) == 0
    assert cached_tokens(ok(complete(stack.vllm_url, prompt))) == 0  # nothing was published
    assert cached_tokens(ok(complete(stack.vllm_url, prompt))) > 0  # unflagged: cached
    again = ok(complete(stack.vllm_url, prompt, TWO_WAY))
    assert cached_tokens(again) == 0  # the causal blocks in the cache were not read
    assert label_logprobs(again) == label_logprobs(first)


def test_two_way_returns_exactly_one_token(stack):
    """engine: a flagged request stops after one token whatever max_tokens says."""
    doc = ok(complete(stack.vllm_url, unique(PROMPTS[0]), TWO_WAY, max_tokens=8))
    assert doc["usage"]["completion_tokens"] == 1
    assert doc["choices"][0]["finish_reason"] == "length"


def test_over_budget_two_way_prompt_is_a_400(stack):
    """engine: a flagged prompt longer than --max-num-batched-tokens is refused, saying why
    in words and in the typed refusal clients read (error.param: a JSON object with both
    counts in tokens); the same prompt unflagged is chunked and answered."""
    prompt = unique(PROMPTS[1].replace("Record:\n", "Record:\n" + FILLER * 2))
    n = len(tokenize(stack.vllm_url, prompt))
    assert 1024 < n < 4096
    status, _, doc = complete(stack.vllm_url, prompt, TWO_WAY)
    assert status == 400, doc
    assert "one-step budget of 1024" in doc["error"]["message"]
    assert str(n) in doc["error"]["message"]
    assert json.loads(doc["error"]["param"]) == {"onepass_error": "two_way_budget",
                                                 "budget_tokens": 1024, "prompt_tokens": n}
    ok(complete(stack.vllm_url, prompt))


def test_unknown_mode_is_a_400(stack):
    status, _, doc = complete(stack.vllm_url, PROMPTS[0], "sideways")
    assert status == 400 and "attention_mode" in doc["error"]["message"]


def test_vllm_answers_only_the_shim(stack):
    """serve.sh: vLLM requires a key made at the start, from its environment (never argv), and
    the shim alone is given it: without it, with another or in another scheme every route is
    vLLM's 401 but /health and /metrics (/invocations and /tokenize, which vLLM's own check
    leaves open, too); the shim answers a decision with it; no log or output holds it."""
    key, url = stack.vllm_key, stack.vllm_url
    text = {"model": "smollm2-135m-instruct", "prompt": PROMPTS[0], "max_tokens": 1}
    calls = (("POST", "/v1/completions", text), ("GET", "/v1/models", None),
             ("POST", "/invocations", text), ("POST", "/tokenize", {**text, "max_tokens": None}))
    for auth in ({}, {"Authorization": "Bearer not-the-key"}, {"Authorization": key},
                 {"Authorization": "Basic " + key}):
        for method, path, doc in calls:
            got = request(url, method, path, doc, auth)
            assert (got[0], got[2]) == (401, {"error": "Unauthorized"}), (path, len(auth))
    for method, path, doc in calls:
        assert request(url, method, path, doc, vllm_auth(url))[0] == 200, path
    for path in ("/health", "/metrics"):
        assert urllib.request.urlopen(url + path, timeout=30).status == 200, path
    status, _, doc = stack.request("POST", "/v1/systemone", body({"refund": NOUL}))
    assert status == 200 and "refund" in doc["answers"], doc
    out = "".join(stack.output)
    shim_pid = int(re.search(r"start shim: done \(pid (\d+)", out).group(1))
    for pid, variable in ((stack.vllm_pid, "VLLM_API_KEY"), (shim_pid, "ONEPASS_VLLM_KEY")):
        proc = Path(f"/proc/{pid}")
        assert f"{variable}={key}".encode() in (proc / "environ").read_bytes().split(b"\0")
        assert key.encode() not in (proc / "cmdline").read_bytes()
    logs = {p.name: p.read_text(errors="replace") for p in stack.log_dir.glob("*.log")}
    assert {"vllm.log", "shim.log"} <= set(logs)
    assert [name for name, t in {**logs, "serve.sh": out}.items() if key in t] == []


def test_two_way_waits_for_a_whole_step_beside_a_chunked_prefill(stack):
    """engine: a flagged prompt that arrives while a long prompt is being chunked runs whole:
    its answer equals the one it gets alone."""
    long_prompt = unique(PROMPTS[1].replace("Record:\n", "Record:\n" + FILLER * 3))
    flagged = unique(PROMPTS[2].replace("<|im_start|>user\n", "<|im_start|>user\n" + FILLER))
    assert 600 < len(tokenize(stack.vllm_url, flagged)) < 1024
    with cf.ThreadPoolExecutor(2) as pool:
        chunked = pool.submit(complete, stack.vllm_url, long_prompt)
        raced = pool.submit(complete, stack.vllm_url, flagged, TWO_WAY)
        ok(chunked.result())
        raced = label_logprobs(ok(raced.result()))
    assert raced == label_logprobs(ok(complete(stack.vllm_url, flagged, TWO_WAY)))


@pytest.fixture(scope="module")
def bf16(tmp_path_factory):
    """The plugin on SmolLM2 in bf16 (native on AVX512_BF16/AMX CPUs, emulated on AVX2 ones)."""
    from tests.support.live_stack import VLLM_TEST_ARGS, start_vllm
    args = ("--dtype", "bfloat16", "--enforce-eager", "--block-size", "32", "--max-model-len",
            "4096", *VLLM_TEST_ARGS)
    server = start_vllm(SMOLLM2, "smollm2-135m-instruct", args, "onepass_two_way",
                        tmp_path_factory.mktemp("bf16") / "vllm.log")
    yield server
    server.stop()


def bf16_step(value: float) -> float:
    """The spacing of bf16 numbers (8 significant bits) at `value`'s magnitude."""
    return 2.0 ** (math.floor(math.log2(abs(value))) - 7)


def test_two_way_equals_hf_in_bf16(bf16):
    """engine: in bf16 the flagged Yes/No log-probs differ from HF's bf16 full-mask run by no
    more than stock one-way reads differ from HF's bf16 causal run on this machine (measured
    here, in this run: the CPU's bf16 kernels set the noise), plus one bf16 step of the
    largest logit; and the two-way reading stays farther than that from the causal one."""
    yes_no = LABELS[:2]
    rows = []
    for prompt in PROMPTS:
        ids = tokenize(bf16.url, prompt)
        two_way = label_logprobs(ok(complete(bf16.url, ids, TWO_WAY, labels=yes_no)), yes_no)
        causal = label_logprobs(ok(complete(bf16.url, ids, labels=yes_no)), yes_no)
        ref_two = hf_reference.next_token_logprobs(str(SMOLLM2), ids, yes_no, dtype="bfloat16")
        ref_one = hf_reference.next_token_logprobs(str(SMOLLM2), ids, yes_no, dtype="bfloat16",
                                                   two_way=False)
        top = hf_reference.max_abs_logit(str(SMOLLM2), ids, "bfloat16")
        rows.append((two_way, causal, ref_two, ref_one, top))
    gap = lambda xs, ys: max(abs(a - b) for a, b in zip(xs, ys))
    noise = max(gap(causal, ref_one) for _, causal, _, ref_one, _ in rows)
    bound = noise + max(bf16_step(top) for *_, top in rows)
    for two_way, causal, ref_two, ref_one, _ in rows:
        assert gap(two_way, ref_two) <= bound, (two_way, ref_two, noise, bound)
        assert gap(two_way, ref_one) > bound, (two_way, ref_one, bound)  # not a causal read


SMALL_BUDGET = 48  # tokens a step: under the set probe's options and every two-way probe
CONFIG = config_doc()
LISTING = {**CONFIG["profiles"][CONFIG["default_profile"]]["layout"], "option_sets": False}


@pytest.fixture(scope="module")
def bf16_fp32_head(tmp_path_factory):
    """The same bf16 server with the lm_head in fp32, as serve.sh starts a bf16 model, and a
    one-step budget of SMALL_BUDGET tokens: the plugin refuses the start-up probes' set read
    and two-way reads as over it (a real engine refusing set reads, as it does on vLLM's V2
    model runner, which the CPU build cannot run)."""
    from tests.support.live_stack import start_vllm
    args = ("--dtype", "bfloat16", "--enforce-eager", "--block-size", "32", "--max-model-len",
            "4096", "--hf-overrides", '{"head_dtype": "float32"}', "--max-num-batched-tokens",
            str(SMALL_BUDGET), "--max-num-seqs", "16", "--enable-prompt-tokens-details")
    server = start_vllm(SMOLLM2, "smollm2-135m-instruct", args, "onepass_two_way",
                        tmp_path_factory.mktemp("bf16_head") / "vllm.log")
    yield server
    server.stop()


def shim_health(vllm_url, tmp_path=None, **profile_changes) -> tuple[int, dict, str]:
    """(status, /health, the shim's log) once a shim against `vllm_url` is ready or failed;
    the default profile, or with the given fields changed (a config in `tmp_path`)."""
    from tests.support.live_stack import changed_profile, free_port, start_shim, wait_health
    args = changed_profile(tmp_path, **profile_changes) if profile_changes else ()
    port = free_port()
    proc = start_shim(vllm_url, port, args=args)
    try:
        status, health = wait_health(f"http://127.0.0.1:{port}", {"ok", "failed"}, timeout=300)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return status, health, proc.stdout.read()


def test_half_precision_labels_are_refused_and_an_fp32_head_serves(bf16, bf16_fp32_head,
                                                                   tmp_path):
    """probe: a bf16 model whose lm_head runs in bf16 gives label log-probs 1/16-1/8 nat apart
    on the half-precision grid, and the shim refuses to serve it; the same model with the fp32
    head (serve.sh's flag) reads off the grid and the shim gets ready (with a profile reading
    listings: that server's one-step budget refuses set reads)."""
    from onepass.backend.probes import on_half_grid
    labels = [tokenize(bf16.url, x)[0] for x in "ABCDE"]
    for server, on_grid in ((bf16, True), (bf16_fp32_head, False)):
        for prompt in PROMPTS:
            lps = label_logprobs(ok(complete(server.url, unique(prompt), labels=labels)), labels)
            assert on_half_grid(lps) is on_grid, (server.url, lps)
    status, health, _ = shim_health(bf16.url)
    assert status == 503 and "grid" in health["reason"], health
    status, health, _ = shim_health(bf16_fp32_head.url, tmp_path, layout=LISTING)
    assert status == 200, health


def test_refused_set_reads_turn_option_sets_off_unless_the_profile_needs_them(bf16_fp32_head,
                                                                              tmp_path):
    """probe: the plugin refuses the set probe's read and the two-way probes' reads (over a
    one-step budget of SMALL_BUDGET tokens): a profile that reads listings gets ready with
    option sets and two-way reading off, its log naming the refusal; the embedded profile,
    which reads its choices as sets, stays 503 naming it."""
    status, health, said = shim_health(bf16_fp32_head.url, tmp_path, layout=LISTING)
    assert status == 200 and health["attention_modes"] == ["causal"], health
    assert ("option sets (layout option_sets) off on this server: vLLM refused the probe's set "
            "read: ") in said, said[-3000:]
    assert f"one-step budget of {SMALL_BUDGET}" in said, said[-3000:]
    assert "two-way reading off on this server: vLLM refused the probe's two-way read" in said
    assert "option sets off" in said  # the ready line
    status, health, _ = shim_health(bf16_fp32_head.url)
    assert status == 503 and health["reason"].startswith(
        "start-up check failed: this profile needs option sets (layout option_sets), but vLLM "
        "refused the probe's set read: "), health
