"""Set reads (Set-Based Prompting, McIlroy-Young et al., NeurIPS 2024) in the V1 model runner:
a request's parallel spans all start at the first span's position, each sees only the text
before the spans and itself, and what follows them sees everything, so the read cannot depend
on the spans' order.

Owns: the set requests of the step being run and where their rows sit (Geometry); their
positions (prepare_inputs: each span from the first span's start, the tail after the longest
span); and their attention rows from the first span on (all rows when two-way), recomputed in
fp32 torch from the paged KV cache after the backend's kernel ran, with the spans taken in one
canonical order (their token ids), so every listing of the same spans computes the same bits.
Never: admits, schedules or caches (admission.py), or touches a request without spans.

Why the kernel's rows are replaced rather than masked: no CPU or Triton kernel of vLLM 0.32
takes a mask of "the prefix and my own span"; the KV of each layer is written to the cache
before the kernel runs, so every key a row needs is there.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .flags import is_two_way, requested_spans

SPANS_ATTR = "_onepass_set_spans"  # on the runner: request id -> its spans, while it runs


@dataclass(frozen=True)
class Geometry:
    """One set request in the step: its rows in the batch, the prompt tokens before them, its
    spans, its KV blocks, its prompt ids, and whether it is also two-way."""
    start: int  # its first row in the flattened batch
    rows: int
    computed: int  # prompt tokens computed before this step (the first row's index)
    spans: tuple
    blocks: torch.Tensor  # its KV block ids, in order
    token_ids: tuple
    two_way: bool

    @property
    def length(self) -> int:
        return self.computed + self.rows


class Step:
    requests: tuple = ()  # Geometry of the step being run (a runner runs one at a time)


STEP = Step()


def position(t: int, spans) -> int:
    """Token t's position: the prefix as is, span k's tokens from the first span's start, what
    follows the spans after the longest one."""
    first, end = spans[0][0], spans[-1][1]
    if t < first:
        return t
    if t >= end:
        return first + max(e - s for s, e in spans) + (t - end)
    for s, e in spans:
        if s <= t < e:
            return first + (t - s)
    raise AssertionError("spans are consecutive")


def _known(runner, scheduler_output) -> dict:
    known = getattr(runner, SPANS_ATTR, None)
    if known is None:
        known = {}
        setattr(runner, SPANS_ATTR, known)
    for new in scheduler_output.scheduled_new_reqs:
        spans = requested_spans(new.sampling_params) if new.sampling_params else ()
        if spans:
            known[new.req_id] = spans
    for rid in scheduler_output.finished_req_ids:
        known.pop(rid, None)
    return known


def wrap_prepare_inputs(original):
    """V1 `_prepare_inputs`: after it has written positions and the slot mapping (which the
    positions must not move), a set request's positions are rewritten and its rows recorded."""
    def _prepare_inputs(self, scheduler_output, *args, **kwargs):
        out = original(self, scheduler_output, *args, **kwargs)
        known = _known(self, scheduler_output)
        scheduled = scheduler_output.num_scheduled_tokens
        found = []
        for rid in [r for r in known if r in scheduled]:
            idx = self.input_batch.req_id_to_index[rid]
            state = self.requests[rid]
            start = int(self.query_start_loc.np[idx])
            rows, computed = int(scheduled[rid]), int(self.input_batch.num_computed_tokens_cpu[idx])
            spans = known[rid]
            moved = [position(t, spans) for t in range(computed, computed + rows)]
            self.positions[start:start + rows] = torch.tensor(moved, dtype=self.positions.dtype)
            table = self.input_batch.block_table[0]
            blocks = table.block_table.cpu[idx, :table.num_blocks_per_row[idx]].to(torch.int64)
            found.append(Geometry(start, rows, computed, spans, blocks.clone(),
                                  tuple(state.prompt_token_ids), is_two_way(state.sampling_params)))
        STEP.requests = tuple(found)
        return out
    return _prepare_inputs


# -- attention ---------------------------------------------------------------------------------
_INDEX: dict = {}  # (isa, block size, head size) -> (K index, V index) within one block's half


def _block_index(isa: str, bs: int, d: int):
    """Where K[o, d] and V[o, d] of one (block, KV head) sit in its K and V halves, for vLLM's
    CPU kernels: `vec`/`vec16` keep K transposed ([d, bs]) and V plain; `amx` packs both in
    tiles (cpu_attn_amx.hpp)."""
    key = (isa, bs, d)
    if key not in _INDEX:
        o = torch.arange(bs)[:, None]
        j = torch.arange(d)[None, :]
        if isa == "amx":
            k = (o // 16) * 16 * d + (j // 2) * 32 + (o % 16) * 2 + j % 2
            v = (j // 16) * bs * 16 + (o // 2) * 32 + (j % 16) * 2 + o % 2
        elif isa in ("vec", "vec16"):
            k, v = j * bs + o, o * d + j
        else:
            raise NotImplementedError(f"onepass set reads: the CPU attention layout {isa!r}")
        _INDEX[key] = (k.reshape(-1), v.reshape(-1))
    return _INDEX[key]


def gather_cpu(layer, kv_cache, blocks, length: int):
    """(K, V) of a request's first `length` tokens from the CPU cache, [kv heads, length, d]."""
    nb, heads, bs, two_d = kv_cache.shape
    d = two_d // 2
    halves = kv_cache.view(nb, heads, 2, bs * d)[blocks]  # [m, heads, 2, bs*d]
    k_at, v_at = _block_index(layer.isa, bs, d)
    k = halves[:, :, 0, :][..., k_at].view(len(blocks), heads, bs, d)
    v = halves[:, :, 1, :][..., v_at].view(len(blocks), heads, bs, d)
    flat = lambda x: x.permute(1, 0, 2, 3).reshape(heads, -1, d)[:, :length]  # noqa: E731
    return flat(k), flat(v)


def gather_triton(layer, kv_cache, blocks, length: int):
    """The same from the Triton backend's cache ([blocks, kv heads, bs, 2d], K then V last)."""
    nb, heads, bs, two_d = kv_cache.shape
    d = two_d // 2
    sel = kv_cache[blocks.to(kv_cache.device)]  # [m, heads, bs, 2d]
    both = sel.permute(1, 0, 2, 3).reshape(heads, -1, two_d)[:, :length]
    return both[..., :d], both[..., d:]


def groups(geo: Geometry) -> list:
    """(query tokens, key tokens, causal among the query tokens) per block of rows recomputed:
    the prefix (two-way only), each span, the tail; keys in the spans' canonical order."""
    spans, length = geo.spans, geo.length
    first, end = spans[0][0], spans[-1][1]
    prefix = list(range(first))
    ids = geo.token_ids
    canonical = sorted(spans, key=lambda s: (tuple(ids[s[0]:s[1]]), s))
    out = [(prefix, prefix, False)] if geo.two_way else []
    for s, e in spans:
        out.append((list(range(s, e)), prefix + list(range(s, e)), not geo.two_way))
    everything = prefix + [t for s, e in canonical for t in range(s, e)]
    out.append((list(range(end, length)), everything + list(range(end, length)),
                not geo.two_way))
    return out


def attend(impl, q, k, v, keys: int, causal: bool) -> torch.Tensor:
    """fp32 attention of q [h, r, d] over k, v [kv heads, m, d]; with `causal`, the last r keys
    are the queries' own tokens, each seeing those up to itself."""
    k = k.repeat_interleave(impl.num_queries_per_kv, dim=0)
    v = v.repeat_interleave(impl.num_queries_per_kv, dim=0)
    scores = torch.matmul(q, k.transpose(1, 2)) * impl.scale
    cap = getattr(impl, "logits_soft_cap", 0) or 0
    if cap:
        scores = cap * torch.tanh(scores / cap)
    if causal:
        r = q.shape[1]
        own = torch.ones(r, r, dtype=torch.bool, device=q.device).triu(1)
        scores[:, :, keys - r:] = scores[:, :, keys - r:].masked_fill(own, float("-inf"))
    sinks = getattr(impl, "sinks", None)
    if sinks is not None:  # a sink logit per head joins the softmax, with no value
        scores = torch.cat([scores, sinks.float().view(-1, 1, 1).expand(-1, q.shape[1], 1)], -1)
        return torch.matmul(torch.softmax(scores, -1)[..., :-1], v)
    return torch.matmul(torch.softmax(scores, -1), v)


def recompute(impl, layer, query, kv_cache, output, gather) -> None:
    for geo in STEP.requests:
        if geo.computed > (0 if geo.two_way else geo.spans[0][0]):
            continue  # admission keeps these rows in one step; never read a part of them
        k_all, v_all = gather(layer, kv_cache, geo.blocks, geo.length)
        k_all, v_all = k_all.float(), v_all.float()
        for rows, keys, causal in groups(geo):
            if not rows:
                continue
            at = torch.tensor(rows, device=query.device) - geo.computed + geo.start
            picked = torch.tensor(keys, device=query.device)
            q = query[at].float().transpose(0, 1)  # [h, r, d]
            o = attend(impl, q, k_all[:, picked], v_all[:, picked], len(keys), causal)
            output[at] = o.transpose(0, 1).to(output.dtype)


def supported(impl) -> bool:
    """Layers whose rows this module can recompute: no ALiBi, no sliding window, no fp8 cache.
    On others the rows stay the kernel's, so a set read is not order-exact there, and the
    shim's start-up probe (onepass/backend/set_probe.py) finds that and offers no option sets."""
    window = getattr(impl, "sliding_window", None)
    return (getattr(impl, "alibi_slopes", None) is None and window in (None, -1, (-1, -1))
            and getattr(impl, "kv_cache_dtype", "auto") == "auto")


def wrap_forward(gather):
    def wrap(original):
        def forward(self, layer, query, key, value, kv_cache, attn_metadata, output, *args,
                    **kwargs):
            out = original(self, layer, query, key, value, kv_cache, attn_metadata, output,
                           *args, **kwargs)
            if STEP.requests and attn_metadata is not None and self.attn_type == "decoder" \
                    and supported(self):
                recompute(self, layer, query, kv_cache, output, gather)
            return out
        return forward
    return wrap
