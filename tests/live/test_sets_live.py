"""Set reads (options in parallel, engine/onepass_engine/sets.py) against the session's real
vLLM, and option sets through the shim: every order of the spans reads the same bits; the read
equals an HF reference written out independently (positions and a 4D mask); a set read and a
causal one differ; two-way composes; the prefix cache is shared before the spans and never
after; malformed spans are refused. Through the shim, on the dtype serve.sh ships here: every
tried order of up to 6 options gives byte-identical answers on both APIs."""
import itertools
import random

import pytest

from tests.support import hf_reference
from tests.support.engine_calls import cached_tokens, label_logprobs, tokenize, unique
from tests.support.json_http import request
from tests.support.live_stack import SMOLLM2, vllm_auth

MODEL = "smollm2-135m-instruct"
HEAD = ("<|im_start|>system\nYou sort support tickets.<|im_end|>\n<|im_start|>user\nRecord:\n"
        "I was charged twice for my plan this month and the app also crashes on start."
        " Please fix both.\n\nQuestion: Which team should handle this ticket first?\nOptions:\n")
OPTIONS = ["A. billing: Payments and refunds\n", "B. sales\n", "C. tech: Bugs and outages\n",
           "D. legal: Contracts\n"]
TAIL = "Reply with the label of the best option only.<|im_end|>\n<|im_start|>assistant\n"
TWO_WAY = "bidirectional"


def ids_and_spans(url, order, head=HEAD):
    ids, spans = list(tokenize(url, head)), []
    for i in order:
        piece = tokenize(url, OPTIONS[i])
        spans.append((len(ids), len(ids) + len(piece)))
        ids += piece
    return ids + tokenize(url, TAIL), spans


def labels(url):
    return [tokenize(url, c)[0] for c in "ABCD"]


def read(url, ids, spans=None, mode=None):
    xargs = {}
    if spans:
        xargs["set_spans"] = ",".join(f"{a}:{b}" for a, b in spans)
    if mode:
        xargs["attention_mode"] = mode
    body = {"model": MODEL, "prompt": ids, "max_tokens": 1, "temperature": 0.0, "logprobs": 1,
            "logprob_token_ids": labels(url), "return_tokens_as_token_ids": True,
            **({"vllm_xargs": xargs} if xargs else {})}
    return request(url, "POST", "/v1/completions", body, vllm_auth(url))


def ok(response) -> dict:
    status, _, doc = response
    assert status == 200, doc
    return doc


@pytest.mark.parametrize("mode", [None, TWO_WAY])
def test_every_order_of_the_spans_reads_the_same_bits(stack, mode):
    """24 orders of 4 spans: one result, to the bit; and not the causal read of those tokens."""
    url = stack.vllm_url
    got = {}
    for order in itertools.permutations(range(4)):
        ids, spans = ids_and_spans(url, order)
        got[order] = tuple(label_logprobs(ok(read(url, ids, spans, mode)), labels(url)))
    assert len(set(got.values())) == 1, got
    ids, _ = ids_and_spans(url, range(4))
    causal = label_logprobs(ok(read(url, ids, None, mode)), labels(url))
    assert max(abs(a - b) for a, b in zip(got[(0, 1, 2, 3)], causal)) > 0.05


@pytest.mark.parametrize("mode", [None, TWO_WAY])
def test_a_set_read_equals_hf_with_its_positions_and_mask(stack, mode):
    """The set read against HF transformers given the shared positions and the set mask as a
    4D mask (tests/support/hf_reference.py), in fp32: within 1e-4 nats, as two-way is."""
    url = stack.vllm_url
    ids, spans = ids_and_spans(url, (2, 0, 3, 1))
    got = label_logprobs(ok(read(url, ids, spans, mode)), labels(url))
    ref = hf_reference.set_read_logprobs(str(SMOLLM2), ids, spans, labels(url),
                                         two_way=mode == TWO_WAY)
    assert max(abs(a - b) for a, b in zip(got, ref)) <= 1e-4, (got, ref)


def test_the_prefix_cache_is_shared_before_the_spans_only(stack):
    """A set read publishes and reads whole blocks before its first span only (block 32 here):
    after a causal read of the same tokens published every block, the set read still computes
    its spans, and reads the bits it read cold."""
    url = stack.vllm_url
    head = unique(HEAD) + "Ticket notes: " + "the customer called twice; " * 12 + "\n"
    ids, spans = ids_and_spans(url, (1, 3, 0, 2), head)
    first = spans[0][0]
    assert first > 64
    cold = ok(read(url, ids, spans))
    assert cached_tokens(cold) == 0
    causal = ok(read(url, ids))
    assert cached_tokens(causal) == first // 32 * 32  # only the set read's prefix blocks
    warm = ok(read(url, ids, spans))
    assert cached_tokens(warm) == first // 32 * 32  # the causal span blocks were not read
    assert label_logprobs(warm, labels(url)) == label_logprobs(cold, labels(url))


def test_a_set_read_whose_prefix_is_prefilled_in_chunks(stack):
    """A prefix longer than the step's budget (1024 tokens here) is prefilled in chunks before
    the step that holds the spans and the tail: the chunks recompute nothing (their keys past
    the chunk have no blocks yet), two orders read the same bits, and the engine keeps
    serving."""
    url = stack.vllm_url
    head = unique(HEAD) + "Ticket notes: " + "the customer called again today; " * 220 + "\n"
    got = set()
    for order in ((0, 1, 2, 3), (3, 1, 0, 2)):
        ids, spans = ids_and_spans(url, order, head)
        assert spans[0][0] > 1100 and len(ids) - spans[0][0] < 1024  # chunked, then one step
        got.add(tuple(label_logprobs(ok(read(url, ids, spans)), labels(url))))
    assert len(got) == 1, got
    ids, spans = ids_and_spans(url, range(4))
    assert ok(read(url, ids, spans))  # still serving


@pytest.mark.parametrize("spans", ["1:2", "5:9,10:12", "5:9,9:9", "x", "0:3,3:5"])
def test_malformed_spans_are_a_400(stack, spans):
    ids, _ = ids_and_spans(stack.vllm_url, range(4))
    body = {"model": MODEL, "prompt": ids, "max_tokens": 1, "vllm_xargs": {"set_spans": spans}}
    status, _, doc = request(stack.vllm_url, "POST", "/v1/completions", body,
                             vllm_auth(stack.vllm_url))
    assert status == 400 and "set_spans" in doc["error"]["message"], doc


def test_spans_reaching_the_last_token_are_a_400(stack):
    ids, _ = ids_and_spans(stack.vllm_url, range(4))
    body = {"model": MODEL, "prompt": ids, "max_tokens": 1,
            "vllm_xargs": {"set_spans": f"3:5,5:{len(ids)}"}}
    status, _, doc = request(stack.vllm_url, "POST", "/v1/completions", body,
                             vllm_auth(stack.vllm_url))
    assert status == 400 and "last token" in doc["error"]["message"], doc


# -- through the shim -----------------------------------------------------------------------
TEAMS = {"billing": "Payments and refunds", "tech": "Bugs and outages", "sales": None,
         "legal": "Contracts and disputes", "ops": "Deliveries", "hr": None}
STATE = "I was charged twice for my plan and the app crashes when I open it. Please help."
SETS = {"layout": {"option_sets": True}}


def systemone(stack, keys, kwargs=SETS):
    body = {"model": "jev-latest", "state": STATE, "kwargs": kwargs, "questions": {
        "team": {"type": "choice", "instructions": "Which team should handle this?",
                 "criteria": {k: TEAMS[k] for k in keys}}}}
    status, _, doc = stack.request("POST", "/v1/systemone", body)
    assert status == 200, doc
    return doc["answers"]["team"]


def decisions(stack, keys):
    body = {"model": "jev-latest", "input": STATE, "kwargs": SETS, "questions": [
        {"type": "choice", "name": "team", "instructions": "Which team should handle this?",
         "choices": [{"value": k, **({"description": TEAMS[k]} if TEAMS[k] else {})}
                     for k in keys]}]}
    status, _, doc = stack.request("POST", "/v1/decisions", body)
    assert status == 200, doc
    return doc["answers"][0]


def orders(keys, sample: int):
    every = list(itertools.permutations(keys))
    return every if len(every) <= sample else random.Random(46).sample(every, sample)


def test_permuted_options_get_byte_identical_answers_on_both_apis(shipped):
    """Options 2 to 6, every order up to 4 options and 12 orders of 5 and 6: one answer per
    key, to the bit, on /v1/systemone and /v1/decisions, in the dtype serve.sh ships here."""
    stack, _ = shipped
    keys = list(TEAMS)
    for n in range(2, 7):
        seen, seen_d = set(), set()
        for order in orders(keys[:n], 12):
            a = systemone(stack, order)
            seen.add((a["choice"], tuple(sorted(a["probabilities"].items()))))
            d = decisions(stack, order)
            seen_d.add((d["choice"], tuple(sorted((p["value"], p["probability"])
                                                  for p in d["probabilities"]))))
        assert len(seen) == 1, (n, seen)
        assert len(seen_d) == 1, (n, seen_d)


def test_option_sets_answer_otherwise_than_the_plain_listing(shipped):
    """The embedded profile reads as sets by default; a listing (option_sets false) reads
    otherwise."""
    stack, _ = shipped
    sets = systemone(stack, list(TEAMS)[:4])["probabilities"]
    assert systemone(stack, list(TEAMS)[:4], {})["probabilities"] == sets  # the default
    plain = systemone(stack, list(TEAMS)[:4],
                      {"layout": {"option_sets": False}})["probabilities"]
    assert max(abs(sets[k] - plain[k]) for k in sets) > 1e-3, (sets, plain)


def test_options_past_the_one_step_budget_are_read_as_a_listing(stack):
    """A choice whose options do not fit in one engine step (the session's vLLM takes 1024
    tokens a step) is answered from a listing, and the response names it."""
    criteria = {f"option{i}": "a rather long description of this option " * 3 for i in range(60)}
    body = {"model": "jev-latest", "state": STATE, "questions": {
        "big": {"type": "choice", "instructions": "Which one?", "criteria": criteria},
        "small": {"type": "choice", "instructions": "Which team?",
                  "criteria": {k: TEAMS[k] for k in list(TEAMS)[:3]}}}}
    status, _, doc = stack.request("POST", "/v1/systemone", body)
    assert status == 200, doc
    assert set(doc["answers"]["big"]["probabilities"]) == set(criteria)
    assert doc["x_effort_used"]["options_listed"] == [{"question": "big"}, {"question": "small"}]


def cpu_layouts() -> set:
    """The CPU cache layouts vLLM's attention picks on this CPU for some dtype and block size,
    asked of vLLM's own chooser: `vec` and `vec16` on every x86 CPU, `amx` only where torch
    reports AMX tiles (vLLM's AVX2 kernel build has no `amx` path, and vLLM never picks it on a
    CPU without the tiles)."""
    import torch
    from vllm.v1.attention.backends import cpu_attn
    return {cpu_attn._get_attn_isa(dtype, block, 64)
            for dtype in (torch.bfloat16, torch.float32) for block in (32, 16)}


@pytest.mark.parametrize("isa", ["amx", "vec", "vec16"])
def test_the_cache_indices_find_what_vllm_wrote(isa):
    """sets.index_cpu finds each token's K and V where vLLM's own cache write
    (cpu_attn_reshape_and_cache) put them, in any token order, for each CPU layout vLLM picks on
    this CPU (cpu_layouts); a layout it never picks here is skipped, named."""
    import types

    import torch
    from vllm import _custom_ops as ops

    from onepass_engine import sets
    layouts = cpu_layouts()
    if isa not in layouts:
        pytest.skip(f"vLLM has no {isa!r} cache layout on this CPU: its attention picks "
                    f"{sorted(layouts)} here (torch capability "
                    f"{torch.backends.cpu.get_cpu_capability()}, AMX tiles "
                    f"{torch.cpu._is_amx_tile_supported()})")
    nb, heads, bs, d, n = 4, 2, 32, 64, 70
    kv = torch.zeros(nb, heads, bs * 2, d, dtype=torch.bfloat16)
    key_cache, value_cache = kv.chunk(2, dim=2)
    key, value = (torch.randn(n, heads, d).to(torch.bfloat16) for _ in range(2))
    blocks = torch.tensor([2, 0, 3])
    slots = torch.tensor([int(blocks[t // bs]) * bs + t % bs for t in range(n)])
    ops.cpu_attn_reshape_and_cache(key, value, key_cache, value_cache, slots, isa, k_scale=1.0,
                                   v_scale=1.0, kv_cache_dtype="auto")
    cache, tokens = kv.view(nb, heads, bs, 2 * d), torch.randperm(n)
    k, v = sets.index_cpu(types.SimpleNamespace(isa=isa), cache, blocks, tokens)
    assert torch.equal(sets.flat(cache)[k], key[tokens].transpose(0, 1))
    assert torch.equal(sets.flat(cache)[v], value[tokens].transpose(0, 1))


def test_the_triton_indices_follow_its_layout():
    """sets.index_triton (K then V along the last axis of [blocks, kv heads, bs, 2d]) in a cache
    that is a strided view; the GPU kernels that write it are unmeasured here."""
    import torch

    from onepass_engine import sets
    nb, heads, bs, d = 6, 3, 16, 8
    big = torch.arange(2 * nb * heads * bs * 2 * d, dtype=torch.float32)
    cache = big.view(2, nb, heads, bs, 2 * d)[1]  # a view into a larger buffer
    blocks, tokens = torch.tensor([4, 1, 5]), torch.randperm(40)
    blk, o = blocks[tokens // bs], tokens % bs
    k, v = sets.index_triton(None, cache, blocks, tokens)
    rows = torch.stack([cache[blk, h, o] for h in range(heads)])  # [heads, tokens, 2d]
    assert torch.equal(sets.flat(cache)[k], rows[..., :d])
    assert torch.equal(sets.flat(cache)[v], rows[..., d:])
