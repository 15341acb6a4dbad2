"""Batch-invariant attention on vLLM's CPU backend: every query token computed the same way,
whatever shares its engine step, however much of its prompt came from the prefix cache.

Owns: rewriting the CPU attention metadata of a decoder step so that each query token is its
own one-query "request" of the kernel (its KV length = its position + 1, or the whole prompt
for a two-way row), with the kernel's KV split off; and every unquantized CPU linear layer
called with a fixed number of rows (fixed_rows).
Never: touches encoder or cross attention, the KV cache writes (slot mapping), or any other
backend; two-way flags stay per row (rows.py), copied onto each of the row's tokens.

Why: the CPU kernel picks its query and KV tiling per call from the batch's shapes, so one
token's output moved by up to 3e-5 nats in fp32 between a cold read (the whole prompt at once)
and a warm one (only the tail after the cached blocks), and beside long requests of other
shapes; a one-query request with no KV split was measured identical alone and in any batch
(docs/determinism.md). oneDNN picks its GEMM kernel by the number of rows too: on an AMX CPU
a bf16 row came out with other bits in a 16-row call than in a 400-row one, and an fp32 row alone
(M = 1) than in a batch, which moved label log-probs by up to 0.21 nats in bf16. Called with the
same number of rows every time, a row's bits do not depend on its neighbours or its place
(bench/kernel_invariance.py), so with both the whole forward pass is row-invariant.
"""
from __future__ import annotations

from dataclasses import replace

import torch

# Rows per GEMM call, fixed per layer. Larger is faster for long prefills, smaller costs less
# padding when few rows are computed (a decode step); fp32 pads at a higher price per row.
HALF_ROWS, FP32_ROWS = 64, 16
WIDE = 16384  # output columns beyond which a layer (the lm_head) is called 16 rows at a time:
# it sees one row per request, so padding it to 64 would cost more than it saves


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


def rows_per_call(dtype, columns: int) -> int:
    half = dtype in (torch.bfloat16, torch.float16)
    return HALF_ROWS if half and columns <= WIDE else FP32_ROWS


def fixed_rows(linear, rows: int):
    """`linear(x, weight, bias)` computed `rows` rows at a time (the last call zero-padded),
    so every row goes through the same kernel whatever the batch. x is [..., in]."""
    def call(x, weight, bias):
        flat = x.reshape(-1, x.shape[-1])
        m = flat.shape[0]
        whole = m - m % rows
        outs = [linear(flat[i:i + rows], weight, bias) for i in range(0, whole, rows)]
        if whole < m:
            last = torch.cat([flat[whole:], flat.new_zeros(rows - (m - whole), flat.shape[1])])
            outs.append(linear(last, weight, bias)[:m - whole])
        if not outs:  # no rows: one empty call gives the output's width
            outs.append(linear(flat, weight, bias))
        out = outs[0] if len(outs) == 1 else torch.cat(outs)
        return out.reshape(*x.shape[:-1], out.shape[-1])
    return call


def wrap_process_weights(original):
    """After vLLM chose a CPU GEMM for the layer (layer.cpu_linear), call it in fixed rows.
    Every layer, not only those a probe at load sees move a row: such a probe passed vLLM's
    small-weight AMX kernel, which moves the last row of some batches (docs/determinism.md)."""
    def process_weights_after_loading(self, layer):
        weight = getattr(layer, "weight", None)
        shape = (weight.dtype, weight.shape[0]) if weight is not None and weight.ndim == 2 \
            else None  # read before vLLM may empty the weight
        original(self, layer)
        linear = getattr(layer, "cpu_linear", None)
        if shape is not None and linear is not None:
            layer.cpu_linear = fixed_rows(linear, rows_per_call(*shape))
    return process_weights_after_loading


def wrap_apply_head(original):
    """A head in another dtype than the model (`head_dtype` float32) on a CPU: vLLM casts the
    whole lm_head weight every step and calls torch's linear, whose bits for a row move with
    the number of rows. Instead: the weight cast once, called in fixed rows."""
    def _apply_head(self, lm_head, hidden_states, embedding_bias):
        head = self.head_dtype
        if head is None or head == hidden_states.dtype or hidden_states.device.type != "cpu":
            return original(self, lm_head, hidden_states, embedding_bias)
        linear = getattr(lm_head, "_onepass_head", None)
        if linear is None:
            linear = lm_head._onepass_head = fixed_rows(cast_linear(lm_head.weight, head),
                                                        FP32_ROWS)
        bias = None if embedding_bias is None else embedding_bias.to(head)
        return linear(hidden_states.to(head), None, bias)
    return _apply_head


def cast_linear(weight, dtype):
    """x @ weight.T with the weight held in `dtype`: oneDNN where vLLM can build it, else torch."""
    w = weight.detach().to(dtype).contiguous()
    try:
        from vllm import _custom_ops as ops
        handler = ops.create_onednn_mm(w.t(), 32)
        return lambda x, _weight, bias: ops.onednn_mm(handler, x, bias)
    except (ImportError, AttributeError, RuntimeError):
        return lambda x, _weight, bias: torch.nn.functional.linear(x, w, bias)
