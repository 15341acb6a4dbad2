"""Set reads (Set-Based Prompting, McIlroy-Young et al., NeurIPS 2024) in the V1 model runner:
a request's parallel spans all start at the first span's position, each sees only the text
before the spans and itself, and what follows them sees everything, so the read cannot depend
on the spans' order.

Owns: the set requests of the step being run and where their rows sit (Geometry); their
positions (prepare_inputs: each span from the first span's start, the tail after the longest
span); and their attention rows from the first span on (all rows when two-way), recomputed in
fp32 torch from the paged KV cache after the backend's kernel ran, with the spans taken in one
canonical order (their token ids), so every listing of the same spans computes the same bits
(set_plan.py: that order, the keys each row sees and how many rows are attended at once).
Never: admits, schedules or caches (admission.py), or touches a request without spans.

Why the kernel's rows are replaced rather than masked: no CPU or Triton kernel of vLLM 0.32
takes a mask of "the prefix and my own span"; the KV of each layer is written to the cache
before the kernel runs, so every key a row needs is there.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .flags import is_two_way, requested_spans
from .set_plan import CHUNK_BYTES, chunk_rows, plan

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
    """The set requests of the step being run (a runner runs one at a time) and their plans,
    built once per step on the first layer that needs them."""
    requests: tuple = ()  # Geometry
    _plans: tuple | None = None
    _index: dict = {}
    _bias: dict = {}

    def begin(self, requests: tuple) -> None:
        self.requests, self._plans, self._index, self._bias = requests, None, {}, {}

    def index(self, i: int, geo, p, layer, kv_cache, index):
        """Request i's K and V places in the cache, per cache shape (layers mostly share one)."""
        key = (i, tuple(kv_cache.shape), kv_cache.stride(), getattr(layer, "isa", None))
        if key not in self._index:
            self._index[key] = tuple(t.to(kv_cache.device) for t in index(
                layer, kv_cache, geo.blocks, p.keys.cpu()))
        return self._index[key]

    def bias(self, i: int, p, r: int, n: int) -> torch.Tensor:
        """Request i's rows r:r+n's bias, kept for the step's other layers when the step's set
        reads' whole biases fit in CHUNK_BYTES together (short reads build theirs once a step);
        else built again in every layer, so a long read's memory stays bounded."""
        if len(p.at) * len(p.keys) * 4 * len(self.requests) > CHUNK_BYTES:
            return p.bias(r, r + n)
        if (i, r, n) not in self._bias:
            self._bias[i, r, n] = p.bias(r, r + n)
        return self._bias[i, r, n]

    def plans(self, device) -> tuple:
        if self._plans is None:
            self._plans = tuple(plan(geo).to(device) if whole(geo) else None
                                for geo in self.requests)
        return self._plans


def whole(geo: Geometry) -> bool:
    """Whether this step holds all of the request's recomputed rows: from its first span (its
    first token, two-way) through its prompt's last token. Admission keeps those in one step; a
    step of the prefix alone (a long prefix, or the step's budget shared with others, cuts it
    into chunks) recomputes nothing, and its keys past the step have no cache blocks yet."""
    return (geo.computed <= (0 if geo.two_way else geo.spans[0][0])
            and geo.length >= len(geo.token_ids))


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
        STEP.begin(tuple(found))
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


def flat(kv_cache) -> torch.Tensor:
    """The cache as one flat tensor over the storage its view spans (any strides)."""
    size = 1 + sum((n - 1) * st for n, st in zip(kv_cache.shape, kv_cache.stride()))
    return kv_cache.as_strided((size,), (1,), kv_cache.storage_offset())


def _base(kv_cache, blocks, tokens):
    """Each (KV head, token)'s (block, head) start in flat(), [heads, tokens, 1], and the token's
    slot in its block."""
    nb, heads, bs, _ = kv_cache.shape
    blk = blocks[tokens // bs]
    h = torch.arange(heads)[:, None, None]
    return (blk[None, :, None] * kv_cache.stride(0) + h * kv_cache.stride(1)), tokens % bs


def index_cpu(layer, kv_cache, blocks, tokens):
    """Where K and V of `tokens` (in that order) sit in flat() of a CPU cache, [kv heads, tokens,
    d] each."""
    _, _, bs, two_d = kv_cache.shape
    d = two_d // 2
    k_at, v_at = _block_index(layer.isa, bs, d)
    base, o = _base(kv_cache, blocks, tokens)
    within = o[:, None] * d + torch.arange(d)[None, :]
    return base + k_at[within], base + bs * d + v_at[within]


def index_triton(layer, kv_cache, blocks, tokens):
    """The same in the Triton backend's cache: a [blocks, kv heads, bs, 2d] view (K then V in
    the last dimension) whose strides say the layout; vLLM's default for this backend keeps a
    block's slots outside its heads, so a (block, head) is not contiguous."""
    d = kv_cache.shape[3] // 2
    base, o = _base(kv_cache, blocks, tokens)
    k = base + o[:, None] * kv_cache.stride(2) + torch.arange(d)[None, :] * kv_cache.stride(3)
    return k, k + d * kv_cache.stride(3)


def attend(impl, q, k, v, bias) -> torch.Tensor:
    """fp32 attention of q [h, r, d] over k, v [kv heads, m, d], each row over the keys it sees
    (`bias` [r, m]: 0 or -inf); each KV head's query heads as one matrix (no copies of K, V)."""
    h, r, d = q.shape
    kv = k.shape[0]
    g = h // kv
    q = q.reshape(kv, g * r, d)
    cap = getattr(impl, "logits_soft_cap", 0) or 0
    # The bias is added into the scores in place (the bits of baddbmm's own copy of it, without
    # a [query heads, rows, keys] copy of the bias).
    if cap:
        scores = cap * torch.tanh(torch.bmm(q, k.transpose(1, 2)) * (impl.scale / cap))
        scores.view(kv, g, r, -1).add_(bias)
    else:
        scores = torch.empty(kv, g, r, k.shape[1], dtype=q.dtype, device=q.device)
        scores.copy_(bias)
        scores = scores.view(kv, g * r, -1).baddbmm_(q, k.transpose(1, 2), alpha=impl.scale)
    sinks = getattr(impl, "sinks", None)
    if sinks is not None:  # a sink logit per head joins the softmax, with no value
        sink = sinks.float().view(kv, g, 1, 1).expand(kv, g, r, 1).reshape(kv, g * r, 1)
        weights = torch.softmax(torch.cat([scores, sink], -1), -1)[..., :-1]
    else:
        weights = torch.softmax(scores, -1)
    return torch.bmm(weights, v).view(h, r, d)


def recompute(impl, layer, query, kv_cache, output, index) -> None:
    for i, (geo, p) in enumerate(zip(STEP.requests, STEP.plans(query.device))):
        if p is None:
            continue
        k_at, v_at = STEP.index(i, geo, p, layer, kv_cache, index)
        cache = flat(kv_cache)
        k_all, v_all = cache[k_at].float(), cache[v_at].float()  # [kv heads, keys, d]
        n = chunk_rows(query.shape[1], len(p.keys))  # bounds the memory at any context length
        for r in range(0, len(p.at), n):
            at = p.at[r:r + n]
            q = query[at].float().transpose(0, 1)  # [h, r, d]
            o = attend(impl, q, k_all, v_all, STEP.bias(i, p, r, n))
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
