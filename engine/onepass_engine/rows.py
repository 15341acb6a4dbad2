"""Per-row attention flags in the model runners (V1: CPU and opt-in GPU; V2: GPU default).

Owns: which rows of the current step are two-way, the int32 `causal` tensor handed to the
full-attention layers (1 = causal, 0 = two-way), the attention backends allowed to receive it,
and keeping steps with two-way rows out of FULL CUDA graphs.
Never: touches recurrent/linear, sliding-window, MLA or encoder layers (they stay as they are),
or any step without a two-way row (the originals run untouched).

Flow: execute_model learns the flagged request ids from the scheduler output; the runner's
metadata step (V1 `_build_attention_metadata`, V2 `prepare_attn`) turns them into row flags in
the batch's own order; `AttentionGroup.build_metadata`, the one choke point of both runners,
puts the flags on full-attention groups.
"""
from __future__ import annotations

import inspect
from copy import copy
from dataclasses import replace

import torch
from vllm.config import CUDAGraphMode
from vllm.v1.kv_cache_interface import FullAttentionSpec

from . import sets
from .flags import is_two_way

# Backends whose kernels read one causal flag per row (checked in vLLM 0.32.0's sources).
ROW_FLAG_BACKENDS = frozenset({"CPU_ATTN", "TRITON_ATTN"})
FLAGGED_IDS_ATTR = "_onepass_two_way_ids"
# KV cache dtypes whose Triton kernel takes no per-row flag (vLLM 0.32.0: unified_attention
# asserts causal attention for them).
CAUSAL_ONLY_CACHES = frozenset({"int4_per_token_head"})


class Step:
    """The step being run by this worker process; a model runner runs one step at a time."""
    flagged = False  # the step has at least one two-way row
    causal: torch.Tensor | None = None  # row flags while attention metadata is being built


STEP = Step()


def two_way_layer(spec) -> bool:
    # Exact type: MLA, sink, R-SWA and encoder-only specs subclass FullAttentionSpec but are
    # not plain full attention; sliding-window and recurrent layers stay causal by design.
    return type(spec) is FullAttentionSpec


def _flagged_ids(runner) -> set[str]:
    ids = getattr(runner, FLAGGED_IDS_ATTR, None)
    if ids is None:
        ids = set()
        setattr(runner, FLAGGED_IDS_ATTR, ids)
    return ids


def row_flags(req_ids, flagged: set[str], num_rows: int, device) -> torch.Tensor | None:
    """int32 flags for `num_rows` rows (padding rows causal), or None when no row is two-way."""
    two_way_rows = [i for i, rid in enumerate(req_ids) if rid in flagged]
    if not two_way_rows:
        return None
    flags = torch.ones(num_rows, dtype=torch.int32)
    flags[two_way_rows] = 0
    return flags.to(device, non_blocking=True)


def wrap_execute_model(original):
    def execute_model(self, scheduler_output, *args, **kwargs):
        ids = _flagged_ids(self)
        for new in scheduler_output.scheduled_new_reqs:
            if is_two_way(new.sampling_params):
                ids.add(new.req_id)
        ids.difference_update(scheduler_output.finished_req_ids)
        scheduled = scheduler_output.num_scheduled_tokens
        STEP.flagged = any(rid in scheduled for rid in ids)
        try:
            return original(self, scheduler_output, *args, **kwargs)
        finally:
            STEP.flagged, STEP.causal = False, None
            sets.STEP.begin(())  # set by _prepare_inputs for this step only
    return execute_model


def wrap_build_attention_metadata_v1(original):
    signature = inspect.signature(original)

    def _build_attention_metadata(self, *args, **kwargs):
        if not STEP.flagged:
            return original(self, *args, **kwargs)
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        if a["for_cudagraph_capture"]:
            return original(self, *args, **kwargs)
        if a["ubatch_slices"] is not None:
            raise RuntimeError("onepass engine: a two-way row reached a micro-batched step; "
                               "two-way attention does not support --enable-dbo")
        num_reqs = a["num_reqs"]
        STEP.causal = row_flags(self.input_batch.req_ids[:num_reqs], _flagged_ids(self),
                                a["num_reqs_padded"] or num_reqs, self.device)
        try:
            return original(self, *args, **kwargs)
        finally:
            STEP.causal = None
    return _build_attention_metadata


def wrap_prepare_attn_v2(original):
    def prepare_attn(self, input_batch):
        if STEP.flagged:
            # Kept until execute_model ends: model_state.prepare_attn builds the metadata
            # after this returns.
            STEP.causal = row_flags(input_batch.req_ids[:input_batch.num_reqs],
                                    _flagged_ids(self), input_batch.num_reqs_after_padding,
                                    self.device)
        return original(self, input_batch)
    return prepare_attn


def wrap_build_metadata(original):
    def build_metadata(self, common_attn_metadata, *args, **kwargs):
        causal = STEP.causal
        if causal is not None and two_way_layer(self.kv_cache_spec):
            common_attn_metadata = copy(common_attn_metadata)
            common_attn_metadata.causal = causal[:common_attn_metadata.num_reqs]
        return original(self, common_attn_metadata, *args, **kwargs)
    return build_metadata


def _fa4_row_flags() -> bool:
    """Only FA4 takes per-row causal flags, and only on SM90: its interface asserts Hopper for
    `dynamic_causal` (vllm_flash_attn/cute/interface.py in the CUDA wheel), while vLLM picks FA4
    by default on Blackwell (SM100), where a two-way row would fail mid-step."""
    from vllm.platforms import current_platform
    capability = current_platform.get_device_capability()
    if capability is None or capability.major != 9:
        return False
    from vllm.v1.attention.backends.fa_utils import get_flash_attn_version
    return get_flash_attn_version() == 4


def check_backend(backend, vllm_config) -> None:
    """Refuse, at start-up, a configuration that would read a two-way row causally."""
    name = backend.get_name()
    if name == "FLASH_ATTN" and _fa4_row_flags():
        name = "FLASH_ATTN (FA4, SM90)"
    if name not in ROW_FLAG_BACKENDS and name != "FLASH_ATTN (FA4, SM90)":
        raise RuntimeError(
            f"onepass engine: the attention backend {name} cannot honour per-request two-way "
            f"flags (it takes one causal setting per batch, or fails on a per-row one). "
            f"Start vLLM with --attention-backend TRITON_ATTN, or without the plugin "
            f"(VLLM_PLUGINS set to a list that omits onepass_two_way).")
    cache_dtype = getattr(getattr(vllm_config, "cache_config", None), "cache_dtype", "auto")
    if cache_dtype in CAUSAL_ONLY_CACHES:
        raise RuntimeError(f"onepass engine: the KV cache dtype {cache_dtype} is read by a "
                           "causal-only kernel (vLLM's unified_attention asserts so mid-step); "
                           "start vLLM with another --kv-cache-dtype, or without the plugin")
    if vllm_config.parallel_config.use_ubatching:
        raise RuntimeError("onepass engine: two-way attention does not support micro-batching "
                           "(--enable-dbo / ubatch_size > 1); start vLLM without it")


def wrap_create_metadata_builders(original):
    def create_metadata_builders(self, vllm_config, device, *args, **kwargs):
        if two_way_layer(self.kv_cache_spec):
            check_backend(self.backend, vllm_config)
        return original(self, vllm_config, device, *args, **kwargs)
    return create_metadata_builders


def wrap_dispatch_v1(original):
    signature = inspect.signature(original)

    def dispatch(self, *args, **kwargs):
        if not STEP.flagged:
            return original(self, *args, **kwargs)
        bound = signature.bind(self, *args, **kwargs)
        # A FULL graph replays the kernel variant it was captured with (causal).
        bound.arguments["invalid_modes"] = (set(bound.arguments.get("invalid_modes") or ())
                                            | {CUDAGraphMode.FULL})
        return original(*bound.args, **bound.kwargs)
    return dispatch


def wrap_dispatch_v2(original):
    def dispatch(self, *args, **kwargs):
        desc = original(self, *args, **kwargs)
        if STEP.flagged and desc.cg_mode == CUDAGraphMode.FULL:
            return replace(desc, cg_mode=CUDAGraphMode.NONE)  # eager: reads the row flags
        return desc
    return dispatch
