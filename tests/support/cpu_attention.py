"""One engine step of vLLM's CPU attention backend on small tensors, for the batch-invariance
tests of engine/onepass_engine/invariant.py: a paged KV cache written by vLLM's own op, the
metadata vLLM's CPU builder makes for the step, vLLM's kernel run over it, and each token's
float64 softmax over the keys it should see. Needs torch and vLLM's CPU build (the venv); in the
stdlib run `ops` is None and its tests skip (tests/support/venv_only.py).
"""
from types import SimpleNamespace

from tests.support.venv_only import installed

try:
    import torch
    from vllm import _custom_ops as ops
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionMetadata, _get_attn_isa
except ImportError:
    if installed("torch", "vllm"):
        raise  # a vLLM that moved one of these fails the venv's run
    ops = None

HEADS, KV_HEADS, HEAD, BLOCK = 4, 2, 32, 32
# (prompt tokens, tokens computed in this step, two-way): a warm prefill after 12 cached
# tokens, a decode, a two-way prompt, a cold prefill
REQUESTS = ((20, 8, False), (37, 1, False), (9, 9, True), (6, 6, False))


def expected(requests):
    """Each query token's request and KV length, written out: causal tokens see up to
    themselves, a two-way row's tokens its whole prompt."""
    reqs, lengths = [], []
    for r, (length, new, two_way) in enumerate(requests):
        for j in range(new):
            position = length - new + j
            reqs.append(r)
            lengths.append(length if two_way else position + 1)
    return reqs, lengths


class Step:
    """One engine step of the CPU backend over `requests`: the paged KV cache holding each
    prompt's keys and values, the queries of the step's tokens, and the metadata vLLM's
    builder makes for it (a per-row causal tensor when a row is two-way)."""
    def __init__(self, requests, seed=0):
        self.requests = requests
        self.isa = _get_attn_isa(torch.float32, BLOCK, HEAD)
        self.builder = SimpleNamespace(num_heads=HEADS, num_kv_heads=KV_HEADS, head_dim=HEAD,
                                       dtype=torch.float32, window_size=-1, isa=self.isa,
                                       kv_cache_dtype="auto")
        gen = torch.Generator().manual_seed(seed)
        blocks = max(-(-length // BLOCK) for length, _, _ in requests)
        cache = torch.zeros(blocks * len(requests) + 1, KV_HEADS, BLOCK, 2 * HEAD)
        self.key_cache, self.value_cache = cache.view(
            cache.shape[0], KV_HEADS, 2 * BLOCK, HEAD).chunk(2, dim=2)
        # request r's blocks, last first, so a table is no identity
        self.table = torch.tensor([[1 + r * blocks + b for b in reversed(range(blocks))]
                                   for r in range(len(requests))], dtype=torch.int32)
        self.k, self.v, queries = [], [], []
        for r, (length, new, _) in enumerate(requests):
            k, v, q = (torch.randn(length, h, HEAD, generator=gen)
                       for h in (KV_HEADS, KV_HEADS, HEADS))
            slots = torch.tensor([int(self.table[r, t // BLOCK]) * BLOCK + t % BLOCK
                                  for t in range(length)])
            ops.cpu_attn_reshape_and_cache(k, v, self.key_cache, self.value_cache, slots,
                                           self.isa)
            self.k.append(k)
            self.v.append(v)
            queries.append(q[length - new:])
        self.query = torch.cat(queries)

    def metadata(self):
        n = self.query.shape[0]
        counts = torch.tensor([new for _, new, _ in self.requests])
        starts = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)]).to(torch.int32)
        seq_lens = torch.tensor([length for length, _, _ in self.requests], dtype=torch.int32)
        two_way = torch.tensor([0 if t else 1 for _, _, t in self.requests], dtype=torch.int32)
        dynamic = two_way if bool((two_way == 0).any()) else None
        schedule = ops.cpu_attn_get_scheduler_metadata(
            num_reqs=len(self.requests), num_heads=HEADS, num_kv_heads=KV_HEADS, head_dim=HEAD,
            seq_lens=seq_lens, dtype=torch.float32, query_start_loc=starts,
            causal=dynamic is None, sliding_window_size=-1, isa=self.isa, enable_kv_split=True,
            dynamic_causal=dynamic, kv_cache_dtype="auto")
        return CPUAttentionMetadata(
            num_actual_tokens=n, max_query_len=int(counts.max()), query_start_loc=starts,
            max_seq_len=int(seq_lens.max()), seq_lens=seq_lens, block_table=self.table,
            slot_mapping=torch.arange(n), scheduler_metadata=schedule, causal=dynamic is None,
            dynamic_causal=dynamic)

    def attend(self, meta):
        """vLLM's CPU kernel over the step with `meta`."""
        output = torch.full_like(self.query, float("nan"))
        ops.cpu_attention_with_kv_cache(
            query=self.query, key_cache=self.key_cache, value_cache=self.value_cache,
            output=output, query_start_loc=meta.query_start_loc, seq_lens=meta.seq_lens,
            scale=HEAD ** -0.5, causal=meta.causal, alibi_slopes=None, sliding_window=-1,
            block_table=meta.block_table, softcap=0.0, scheduler_metadata=meta.scheduler_metadata,
            s_aux=None, dynamic_causal=meta.dynamic_causal)
        return output

    def reference(self):
        """Each token's float64 softmax over the keys expected() says it sees."""
        out = []
        for row, (r, length) in enumerate(zip(*expected(self.requests))):
            k, v = (x[r][:length].double().repeat_interleave(HEADS // KV_HEADS, 1)
                    for x in (self.k, self.v))
            scores = torch.einsum("hd,khd->hk", self.query[row].double(), k) * HEAD ** -0.5
            out.append(torch.einsum("hk,khd->hd", scores.softmax(-1), v))
        return torch.stack(out)
