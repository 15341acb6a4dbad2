"""Batch-invariant attention on vLLM's CPU backend: every query token computed the same way,
whatever shares its engine step, however much of its prompt came from the prefix cache.

Owns: rewriting the CPU attention metadata of a decoder step so that each query token is its
own one-query "request" of the kernel (its KV length = its position + 1, or the whole prompt
for a two-way row), with the kernel's KV split off.
Never: touches encoder or cross attention, the KV cache writes (slot mapping), or any other
backend; two-way flags stay per row (rows.py), copied onto each of the row's tokens.

Why: the CPU kernel picks its query and KV tiling per call from the batch's shapes, so one
token's output moved by up to 3e-5 nats in fp32 between a cold read (the whole prompt at once)
and a warm one (only the tail after the cached blocks), and beside long requests of other
shapes; a one-query request with no KV split was measured identical alone and in any batch
(docs/determinism.md). fp32 GEMMs through oneDNN already give each row the same bits whatever
the number of rows, so with this the whole forward pass is row-invariant in fp32.
"""
from __future__ import annotations

from dataclasses import replace

import torch

def per_query(builder, meta):
    """The same step's metadata with one kernel request per query token."""
    n = meta.num_actual_tokens
    qsl = meta.query_start_loc.to(torch.int64)
    num_reqs = meta.seq_lens.shape[0]
    counts = qsl[1:num_reqs + 1] - qsl[:num_reqs]
    req = torch.repeat_interleave(torch.arange(num_reqs), counts)[:n]
    token = torch.arange(n)
    whole = meta.seq_lens.to(torch.int64)[req]  # each token's request length
    # A token's position is its request's length minus how many of its tokens come after it.
    seq_lens = whole - qsl[1:num_reqs + 1][req] + token + 1
    flags = None
    if meta.dynamic_causal is not None:  # two-way rows (flag 0) see their whole prompt
        flags = meta.dynamic_causal[:num_reqs][req].contiguous()
        seq_lens = torch.where(flags == 0, whole, seq_lens)
    seq_lens = seq_lens.to(torch.int32)
    starts = torch.arange(n + 1, dtype=torch.int32)
    from vllm import _custom_ops as ops
    schedule = ops.cpu_attn_get_scheduler_metadata(
        num_reqs=n, num_heads=builder.num_heads, num_kv_heads=builder.num_kv_heads,
        head_dim=builder.head_dim, seq_lens=seq_lens, dtype=builder.dtype,
        query_start_loc=starts, causal=meta.causal, sliding_window_size=builder.window_size,
        isa=builder.isa, enable_kv_split=False, dynamic_causal=flags,
        kv_cache_dtype=builder.kv_cache_dtype)
    return replace(meta, max_query_len=1, query_start_loc=starts, seq_lens=seq_lens,
                   max_seq_len=int(seq_lens.max()) if n else meta.max_seq_len,
                   block_table=meta.block_table[req].contiguous(),
                   scheduler_metadata=schedule, dynamic_causal=flags)


def wrap_cpu_build(original):
    def build(self, common_prefix_len, common_attn_metadata, fast_build=False):
        meta = original(self, common_prefix_len, common_attn_metadata, fast_build)
        if self.is_cross_attention or self.is_encoder_only_attention or \
                meta.num_actual_tokens == 0:
            return meta
        return per_query(self, meta)
    return build
