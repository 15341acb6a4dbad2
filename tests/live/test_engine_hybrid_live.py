"""The engine plugin on a hybrid model: a tiny random-weight Qwen3-Next (Gated DeltaNet layers plus
full attention, bf16, prefix caching in vLLM's `align` mode) built by tools/models/build_hybrid.py,
served by vLLM with the plugin and by stock vLLM with the same flags. Its answers mean nothing; the
code paths (recurrent layers, state-block-aligned prefill splits) are the point."""
import concurrent.futures as cf
import json
import subprocess
import sys

import pytest

from tests.support import hf_reference
from tests.support.engine_calls import (LABELS, PROMPTS, cached_tokens, complete, label_logprobs,
                                        tokenize, unique)
from tests.support.live_stack import CACHE, ROOT, start_vllm

TWO_WAY = "bidirectional"
NAME = "smollm2-135m-instruct"  # engine_calls' model name; the hybrid uses SmolLM2's tokenizer
ARGS = ("--dtype", "bfloat16", "--enforce-eager", "--max-model-len", "2048",
        "--max-num-batched-tokens", "1024", "--enable-prefix-caching",
        "--enable-prompt-tokens-details")
FILLER = " Each entry of the log records a reading, a time and the sensor that took it." * 30


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory):
    model = CACHE / "models" / "qwen3-next-tiny"
    subprocess.run([sys.executable, str(ROOT / "tools" / "models" / "build_hybrid.py"), str(model)],
                   check=True, capture_output=True)
    logs = tmp_path_factory.mktemp("hybrid")
    plugin = start_vllm(model, NAME, ARGS, "onepass_two_way", logs / "plugin.log")
    try:
        stock = start_vllm(model, NAME, ARGS, "", logs / "stock.log")
    except Exception:
        plugin.stop()
        raise
    yield model, plugin, stock
    plugin.stop()
    stock.stop()


def ok(response) -> dict:
    status, _, doc = response
    assert status == 200, doc
    return doc


def test_vllm_chose_align_mode(hybrid):
    """The hybrid path under test: vLLM caches recurrent state block-aligned."""
    _, plugin, _ = hybrid
    assert "Mamba cache mode is set to 'align'" in plugin.log.read_text()


def test_unflagged_bit_identical_to_stock_also_beside_flagged(hybrid):
    _, plugin, stock = hybrid
    plain = [unique(p) for p in PROMPTS]
    flagged = [unique(p) for p in PROMPTS]
    want = [label_logprobs(ok(complete(stock.url, p))) for p in plain]
    assert [label_logprobs(ok(complete(plugin.url, p))) for p in plain] == want
    mixed = [unique(p) for p in PROMPTS]
    want = [label_logprobs(ok(complete(stock.url, p))) for p in mixed]
    with cf.ThreadPoolExecutor(6) as pool:
        got = [pool.submit(complete, plugin.url, p) for p in mixed]
        for f in [pool.submit(complete, plugin.url, p, TWO_WAY) for p in flagged]:
            ok(f.result())
        assert [label_logprobs(ok(f.result())) for f in got] == want


@pytest.mark.parametrize("prompt", PROMPTS)
def test_two_way_equals_hf_bf16_and_differs_from_causal(hybrid, prompt):
    """Full-attention layers two-way, GDN layers causal: HF with a full mask, bf16, 0.15."""
    model, plugin, _ = hybrid
    ids = tokenize(plugin.url, prompt)
    two_way = label_logprobs(ok(complete(plugin.url, ids, TWO_WAY)))
    causal = label_logprobs(ok(complete(plugin.url, ids)))
    ref = hf_reference.next_token_logprobs(str(model), ids, LABELS, dtype="bfloat16")
    assert max(abs(a - b) for a, b in zip(two_way, ref)) <= 0.15, (two_way, ref)
    assert max(abs(a - b) for a, b in zip(two_way, causal)) > 1e-3


def test_cache_one_token_and_budget(hybrid):
    """Prefix cache untouched by flagged reads (unflagged still hit), one token, 400 over
    the one-step budget."""
    _, plugin, _ = hybrid
    prompt = unique(PROMPTS[1].replace("Record:\n", "Record:\n" + FILLER))
    assert 512 < len(tokenize(plugin.url, prompt)) < 1024
    first = ok(complete(plugin.url, prompt, TWO_WAY, max_tokens=4))
    assert cached_tokens(first) == 0 and first["usage"]["completion_tokens"] == 1
    assert cached_tokens(ok(complete(plugin.url, prompt))) == 0
    assert cached_tokens(ok(complete(plugin.url, prompt))) > 0
    again = ok(complete(plugin.url, prompt, TWO_WAY))
    assert cached_tokens(again) == 0 and label_logprobs(again) == label_logprobs(first)
    long_prompt = unique(prompt.replace("Record:\n", "Record:\n" + FILLER))
    status, _, doc = complete(plugin.url, long_prompt, TWO_WAY)
    assert status == 400 and "one-step budget of 1024" in doc["error"]["message"]
    assert json.loads(doc["error"]["param"])["budget_tokens"] == 1024
