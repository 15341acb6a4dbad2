"""The list of vLLM callables the plugin wraps, and installing the wrappers once per process.

Owns: HOOKS (target -> wrapper factory) and `install`.
Never: decides anything about a request; admission.py and rows.py do.
"""
from __future__ import annotations

import importlib

from . import admission, invariant, rows, sets

MARK = "__onepass_original__"

# (module, class, attribute, wrapper factory). The same table drives the signature check in
# contract.py, so a hook cannot be added without its expected signature.
HOOKS = (
    ("vllm.v1.engine.input_processor", "InputProcessor", "process_inputs",
     admission.wrap_process_inputs),
    ("vllm.v1.core.sched.scheduler", "Scheduler", "_mamba_block_aligned_split",
     admission.wrap_mamba_split),
    ("vllm.v1.core.sched.scheduler", "Scheduler", "_reserve_prefill_lookahead",
     admission.wrap_lookahead),
    ("vllm.v1.core.kv_cache_coordinator", "KVCacheCoordinator", "cache_blocks",
     admission.wrap_cache_blocks),
    ("vllm.v1.core.kv_cache_manager", "KVCacheManager", "get_computed_blocks",
     admission.wrap_computed_blocks),
    ("vllm.v1.worker.utils", "AttentionGroup", "build_metadata", rows.wrap_build_metadata),
    ("vllm.v1.worker.utils", "AttentionGroup", "create_metadata_builders",
     rows.wrap_create_metadata_builders),
    # V1 model runner (the CPU build's CPUModelRunner inherits these).
    ("vllm.v1.worker.gpu_model_runner", "GPUModelRunner", "execute_model",
     rows.wrap_execute_model),
    ("vllm.v1.worker.gpu_model_runner", "GPUModelRunner", "_build_attention_metadata",
     rows.wrap_build_attention_metadata_v1),
    ("vllm.v1.worker.gpu_model_runner", "GPUModelRunner", "_prepare_inputs",
     sets.wrap_prepare_inputs),
    ("vllm.v1.attention.backends.cpu_attn", "CPUAttentionBackendImpl", "forward",
     sets.wrap_forward(sets.index_cpu)),
    ("vllm.v1.attention.backends.triton_attn", "TritonAttentionImpl", "forward",
     sets.wrap_forward(sets.index_triton)),
    ("vllm.v1.cudagraph_dispatcher", "CudagraphDispatcher", "dispatch", rows.wrap_dispatch_v1),
    # V2 model runner (CUDA's default).
    ("vllm.v1.worker.gpu.model_runner", "GPUModelRunner", "execute_model",
     rows.wrap_execute_model),
    ("vllm.v1.worker.gpu.model_runner", "GPUModelRunner", "prepare_attn",
     rows.wrap_prepare_attn_v2),
    ("vllm.v1.worker.gpu.cudagraph_utils", "CudaGraphManager", "dispatch",
     rows.wrap_dispatch_v2),
)


# Installed by the second entry point (onepass_batch_invariant) only: it changes how unflagged
# rows compute, so the two-way plugin alone keeps them bit-identical to stock vLLM.
INVARIANT_HOOKS = (
    ("vllm.v1.attention.backends.cpu_attn", "CPUAttentionMetadataBuilder", "build",
     invariant.wrap_cpu_build),
    ("vllm.model_executor.layers.linear", "UnquantizedLinearMethod",
     "process_weights_after_loading", invariant.wrap_process_weights),
    ("vllm.model_executor.layers.vocab_parallel_embedding", "UnquantizedEmbeddingMethod",
     "process_weights_after_loading", invariant.wrap_process_weights),
    ("vllm.model_executor.layers.logits_processor", "LogitsProcessor", "_apply_head",
     invariant.wrap_apply_head),
)


def target(module: str, cls: str, attr: str):
    """The class and the original (unwrapped) function behind one hook."""
    owner = getattr(importlib.import_module(module), cls)
    current = owner.__dict__[attr]  # defined on the class itself, never inherited
    return owner, getattr(current, MARK, current)


def install(hooks=HOOKS) -> None:
    for module, cls, attr, make in hooks:
        owner, original = target(module, cls, attr)
        if getattr(owner.__dict__[attr], MARK, None) is not None:
            continue  # vLLM may call register() more than once in a process
        wrapper = make(original)
        wrapper.__name__ = original.__name__
        wrapper.__qualname__ = original.__qualname__
        wrapper.__doc__ = original.__doc__
        setattr(wrapper, MARK, original)
        setattr(owner, attr, wrapper)
