"""The Triton attention path of vLLM 0.32.0 as onepass drives it on a GPU, set up to run on CPU
tensors under Triton's interpreter, and the torch references the checks compare it with.

Imported only by interpreted_checks.py, in a process of its own: TRITON_INTERPRET must be set
before triton is first imported, and vLLM's CPU build swaps triton for a placeholder.
"""
import os
import sys
import types
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
if "triton" in sys.modules:
    raise SystemExit("interpreted.py: triton was imported before TRITON_INTERPRET=1 was set")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import vllm.triton_utils as triton_utils  # noqa: E402

# vLLM's CPU build finds no "cpu" backend in triton and hands its kernel modules a placeholder
# (vllm/triton_utils/importing.py); they must see the real triton, so point them at it before
# any kernel module is imported.
KERNEL_MODULES = ("vllm.v1.attention.ops.triton_unified_attention",
                  "vllm.v1.attention.ops.triton_attention_helpers",
                  "vllm.v1.attention.ops.triton_reshape_and_cache_flash")
if any(m in sys.modules for m in KERNEL_MODULES):
    raise SystemExit("interpreted.py: a Triton kernel module was imported before the patch")
triton_utils.triton, triton_utils.tl, triton_utils.HAS_TRITON = triton, tl, True

# triton_reshape_and_cache_flash asks torch.cuda for the capability to pick its tile size (a
# performance choice; the interpreter ignores warps and stages); there is no CUDA here.
torch.cuda.get_device_capability = lambda *args, **kwargs: (9, 0)

from triton.runtime.interpreter import InterpretedFunction  # noqa: E402
from vllm.config import CUDAGraphMode  # noqa: E402
from vllm.v1.attention.backend import CommonAttentionMetadata  # noqa: E402
from vllm.v1.attention.backends import triton_attn  # noqa: E402
from vllm.v1.attention.ops import triton_unified_attention  # noqa: E402
from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheTensor,  # noqa: E402
                                        create_kv_cache_views)
from vllm.v1.kv_cache_layout import KVCacheLayout  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "engine"))  # this checkout's plugin, whatever the venv registers
from onepass_engine import rows, sets  # noqa: E402

if not isinstance(triton_unified_attention.kernel_unified_attention, InterpretedFunction):
    raise SystemExit("interpreted.py: vLLM's attention kernel is not under the interpreter")
if not Path(sets.__file__).resolve().is_relative_to(ROOT):
    raise SystemExit(f"interpreted.py: onepass_engine imported from {sets.__file__}")

HEADS, KV_HEADS, HEAD, BLOCK, BLOCKS = 4, 2, 32, 16, 16
SCALE = HEAD ** -0.5
CPU = torch.device("cpu")
SPEC = FullAttentionSpec(block_size=BLOCK, num_kv_heads=KV_HEADS, head_size=HEAD,
                         dtype=torch.float32)
NS = types.SimpleNamespace
# What TritonAttentionMetadataBuilder.__init__ reads from a VllmConfig; no CUDA graphs (the
# plugin keeps flagged steps out of FULL graphs).
CONFIG = NS(model_config=NS(get_num_attention_heads=lambda parallel: HEADS,
                            get_num_kv_heads=lambda parallel: KV_HEADS,
                            get_head_size=lambda: HEAD, rswa_window=None),
            parallel_config=None, scheduler_config=NS(max_num_seqs=16),
            compilation_config=NS(cudagraph_mode=CUDAGraphMode.NONE,
                                  static_forward_context={}))
BUILDER = triton_attn.TritonAttentionMetadataBuilder(SPEC, [], CONFIG, CPU)
IMPL = triton_attn.TritonAttentionImpl(HEADS, HEAD, SCALE, KV_HEADS, None, None, "auto")
LAYER = NS(_q_scale=torch.tensor(1.0), _k_scale=torch.tensor(1.0), _v_scale=torch.tensor(1.0))
GROUP = NS(kv_cache_spec=SPEC)  # the AttentionGroup the plugin's build_metadata hook sees
# The plugin's own wrappers around vLLM's metadata step and the backend's forward.
BUILD = rows.wrap_build_metadata(lambda group, common: BUILDER.build(0, common))
FORWARD = sets.wrap_forward(sets.index_triton)(triton_attn.TritonAttentionImpl.forward)


def kv_cache(layout: KVCacheLayout) -> torch.Tensor:
    """One layer's cache as vLLM's worker makes it for `layout` ([blocks, kv heads, bs, 2d],
    strided by the layout), NaN until written, so a read of a slot never written shows."""
    page = SPEC.page_size_bytes
    raw = torch.empty(page * BLOCKS, dtype=torch.int8)
    raw.view(torch.float32).fill_(float("nan"))
    tensor = KVCacheTensor(size=page * BLOCKS, layers=["layer"], layer_stride=page * BLOCKS,
                           block_stride=page)
    (cache,) = create_kv_cache_views(raw, SPEC, BLOCKS, layout, tensor)
    return cache


def slots(blocks, tokens) -> torch.Tensor:
    return torch.tensor([blocks[t // BLOCK] * BLOCK + t % BLOCK for t in tokens])


def write(cache, k, v, blocks, tokens) -> None:
    """K/V of `tokens` into the cache, through the backend's own cache update."""
    IMPL.do_kv_cache_update(LAYER, k[tokens], v[tokens], cache, slots(blocks, tokens))


class Req:
    """A request in a step: its whole sequence's q/k/v, the tokens computed before the step
    (their K/V are in the cache), and its block table."""
    def __init__(self, name, q, k, v, computed, blocks):
        self.name, self.q, self.k, self.v = name, q, k, v
        self.computed, self.blocks, self.length = computed, list(blocks), len(q)

    @property
    def new(self):
        return list(range(self.computed, self.length))


def step(cache, reqs, two_way=(), set_reads=()):
    """One engine step the way vLLM 0.32.0's V1 runner drives the Triton backend with the plugin:
    the new tokens' K/V written, the rows' causal flags from the plugin (none unless a row is
    two-way), metadata from the backend's builder, then the plugin-wrapped forward.
    Returns the output [new tokens, heads, d] and the metadata."""
    new = [(r, t) for r in reqs for t in r.new]
    q = torch.stack([r.q[t] for r, t in new])
    k = torch.stack([r.k[t] for r, t in new])
    v = torch.stack([r.v[t] for r, t in new])
    slot = torch.cat([slots(r.blocks, r.new) for r in reqs])
    IMPL.do_kv_cache_update(LAYER, k, v, cache, slot)
    starts = torch.tensor([0] + [len(r.new) for r in reqs]).cumsum(0).to(torch.int32)
    table = torch.zeros(len(reqs), max(len(r.blocks) for r in reqs), dtype=torch.int32)
    for i, r in enumerate(reqs):
        table[i, :len(r.blocks)] = torch.tensor(r.blocks)
    common = CommonAttentionMetadata(
        query_start_loc=starts, query_start_loc_cpu=starts,
        seq_lens=torch.tensor([r.length for r in reqs], dtype=torch.int32),
        num_reqs=len(reqs), num_actual_tokens=len(new),
        max_query_len=max(len(r.new) for r in reqs),
        max_seq_len=max(r.length for r in reqs), block_table_tensor=table, slot_mapping=slot)
    rows.STEP.causal = rows.row_flags([r.name for r in reqs], set(two_way), len(reqs), CPU)
    try:
        metadata = BUILD(GROUP, common)
    finally:
        rows.STEP.causal = None
    out = torch.full_like(q, float("nan"))
    sets.STEP.begin(tuple(set_reads))
    try:
        FORWARD(IMPL, LAYER, q, k, v, cache, metadata, out)
    finally:
        sets.STEP.begin(())
    return out, metadata


def attention(q, k, v, sees, dtype) -> torch.Tensor:
    """Plain softmax attention in `dtype`: q [n, heads, d] over k, v [m, kv heads, d]; query
    head h reads KV head h // (heads / kv heads); sees [n, m] bool."""
    group = q.shape[1] // k.shape[1]
    q, k, v = (x.to(dtype) for x in (q, k, v))
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = torch.einsum("qhd,khd->hqk", q, k) * SCALE
    weights = scores.masked_fill(~sees, float("-inf")).softmax(-1)
    return torch.einsum("hqk,khd->qhd", weights, v)


def causal_sees(rows_at, keys) -> torch.Tensor:
    return torch.tensor(rows_at)[:, None] >= torch.arange(keys)[None, :]


SLACK = 8


def assert_close(got, q, k, v, sees, what) -> None:
    """The kernel's fp32 rows against the reference in fp64, within SLACK times the fp32
    reference's own distance to fp64 on the same inputs: the kernel sums the same terms in fp32
    in another order (tiles of keys, online softmax), so its rounding error is of the same order;
    SLACK covers the per-tile rescaling. A wrong mask, flag or block moves rows by O(0.1)."""
    exact = attention(q, k, v, sees, torch.float64)
    spread = (attention(q, k, v, sees, torch.float32).double() - exact).abs().max().item()
    floor = torch.finfo(torch.float32).eps * exact.abs().max().item()  # e.g. one key: exact
    tol = SLACK * max(spread, floor)
    err = (got.double() - exact).abs().max().item()
    if not err <= tol:  # NaN fails too
        raise AssertionError(f"{what}: max |kernel - fp64 reference| = {err:.3g} > {tol:.3g} "
                             f"({SLACK} x the fp32 reference's own error {spread:.3g})")
