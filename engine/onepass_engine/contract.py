"""What the plugin assumes about vLLM, checked before any hook is installed.

Owns: the vLLM version the plugin was written for, the signature (parameter names, kinds and
defaults) of every callable in hooks.HOOKS, and the fields the hooks read.
Never: installs anything. A mismatch raises EngineContractError, which stops vLLM's start-up
with every mismatch listed, instead of wrapping code we have not read.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect

VLLM_VERSION = "0.32.0"

SIGNATURES = {
    ("vllm.v1.engine.input_processor", "InputProcessor", "process_inputs"):
        "(self, request_id, prompt, params, supported_tasks, arrival_time=None, "
        "lora_request=None, tokenization_kwargs=None, trace_headers=None, priority=0, "
        "data_parallel_rank=None, resumable=False, session_id=None, kv_hints=None)",
    ("vllm.v1.core.sched.scheduler", "Scheduler", "_mamba_block_aligned_split"):
        "(self, request, num_new_tokens, num_new_local_computed_tokens=0, "
        "num_external_computed_tokens=0)",
    ("vllm.v1.core.sched.scheduler", "Scheduler", "_reserve_prefill_lookahead"):
        "(self, request, num_computed_tokens, num_new_tokens)",
    ("vllm.v1.core.kv_cache_coordinator", "KVCacheCoordinator", "cache_blocks"):
        "(self, request, num_computed_tokens)",
    ("vllm.v1.core.kv_cache_manager", "KVCacheManager", "get_computed_blocks"):
        "(self, request)",
    ("vllm.v1.worker.utils", "AttentionGroup", "build_metadata"):
        "(self, common_attn_metadata, ubatch_idx=0, common_prefix_len=0, **kwargs)",
    ("vllm.v1.worker.utils", "AttentionGroup", "create_metadata_builders"):
        "(self, vllm_config, device, kernel_block_size=None, num_metadata_builders=1)",
    ("vllm.v1.worker.gpu_model_runner", "GPUModelRunner", "execute_model"):
        "(self, scheduler_output, intermediate_tensors=None)",
    ("vllm.v1.worker.gpu_model_runner", "GPUModelRunner", "_build_attention_metadata"):
        "(self, num_tokens, num_reqs, max_query_len, num_tokens_padded=None, "
        "num_reqs_padded=None, ubatch_slices=None, logits_indices=None, "
        "max_num_sampled_tokens=None, use_spec_decode=False, for_cudagraph_capture=False, "
        "num_scheduled_tokens=None, slot_mappings=None)",
    ("vllm.v1.worker.gpu_model_runner", "GPUModelRunner", "_prepare_inputs"):
        "(self, scheduler_output, num_scheduled_tokens)",
    ("vllm.v1.attention.backends.cpu_attn", "CPUAttentionBackendImpl", "forward"):
        "(self, layer, query, key, value, kv_cache, attn_metadata, output, output_scale=None, "
        "output_block_scale=None)",
    ("vllm.v1.attention.backends.triton_attn", "TritonAttentionImpl", "forward"):
        "(self, layer, query, key, value, kv_cache, attn_metadata, output, output_scale=None, "
        "output_block_scale=None)",
    ("vllm.v1.cudagraph_dispatcher", "CudagraphDispatcher", "dispatch"):
        "(self, num_tokens, uniform_decode=False, has_lora=False, num_active_loras=0, "
        "valid_modes=None, invalid_modes=None)",
    ("vllm.v1.worker.gpu.model_runner", "GPUModelRunner", "execute_model"):
        "(self, scheduler_output, intermediate_tensors=None, dummy_run=False, "
        "skip_attn_for_dummy_run=False, is_profile=False, context_len=0, "
        "valid_dummy_state_slots=False, randomize_inputs=False)",
    ("vllm.v1.worker.gpu.model_runner", "GPUModelRunner", "prepare_attn"):
        "(self, input_batch)",
    ("vllm.v1.worker.gpu.cudagraph_utils", "CudaGraphManager", "dispatch"):
        "(self, num_reqs, num_tokens, uniform_token_count, num_active_loras, "
        "max_query_len=None, num_ubatches=1)",
    ("vllm.v1.attention.backends.cpu_attn", "CPUAttentionMetadataBuilder", "build"):
        "(self, common_prefix_len, common_attn_metadata, fast_build=False)",
    ("vllm.model_executor.layers.linear", "UnquantizedLinearMethod",
     "process_weights_after_loading"): "(self, layer)",
    ("vllm.model_executor.layers.vocab_parallel_embedding", "UnquantizedEmbeddingMethod",
     "process_weights_after_loading"): "(self, layer)",
    ("vllm.model_executor.layers.logits_processor", "LogitsProcessor", "_apply_head"):
        "(self, lm_head, hidden_states, embedding_bias)",
}

# Dataclass fields the hooks read or write.
FIELDS = {
    ("vllm.v1.attention.backend", "CommonAttentionMetadata"): ("causal", "num_reqs"),
    ("vllm.v1.core.sched.output", "SchedulerOutput"):
        ("scheduled_new_reqs", "num_scheduled_tokens", "finished_req_ids"),
    ("vllm.v1.core.sched.output", "NewRequestData"): ("req_id", "sampling_params"),
    ("vllm.v1.worker.gpu.input_batch", "InputBatch"):
        ("req_ids", "num_reqs", "num_reqs_after_padding"),
    ("vllm.v1.worker.gpu.cudagraph_utils", "BatchExecutionDescriptor"): ("cg_mode",),
    ("vllm.v1.worker.gpu_input_batch", "CachedRequestState"):
        ("prompt_token_ids", "sampling_params"),
    ("vllm.v1.attention.backends.cpu_attn", "CPUAttentionMetadata"):
        ("num_actual_tokens", "max_query_len", "query_start_loc", "max_seq_len", "seq_lens",
         "block_table", "scheduler_metadata", "causal", "dynamic_causal"),
}
SAMPLING_FIELDS = ("extra_args", "max_tokens", "min_tokens", "skip_reading_prefix_cache")


class EngineContractError(RuntimeError):
    pass


def bare_signature(fn) -> str:
    """Names, kinds and defaults only: annotations may be strings or objects across builds."""
    sig = inspect.signature(fn)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def problems() -> list[str]:
    from vllm import __version__
    from vllm.sampling_params import SamplingParams

    from .hooks import HOOKS, INVARIANT_HOOKS, target
    found = []
    if __version__ != VLLM_VERSION:
        found.append(f"vLLM is {__version__}; this plugin was written for {VLLM_VERSION}")
    for module, cls, attr, _ in HOOKS + INVARIANT_HOOKS:
        key = (module, cls, attr)
        try:
            _, fn = target(module, cls, attr)
        except (ImportError, AttributeError, KeyError) as e:
            found.append(f"{module}.{cls}.{attr} is missing ({type(e).__name__}: {e})")
            continue
        got = bare_signature(fn)
        if got != SIGNATURES.get(key):
            found.append(f"{module}.{cls}.{attr}{got} differs from the expected "
                         f"{SIGNATURES.get(key)}")
    for (module, cls), names in FIELDS.items():
        have = {f.name for f in dataclasses.fields(getattr(importlib.import_module(module), cls))}
        found += [f"{module}.{cls} has no field {n!r}" for n in names if n not in have]
    found += [f"SamplingParams has no field {n!r}" for n in SAMPLING_FIELDS
              if n not in SamplingParams.__struct_fields__]
    return found


def check() -> None:
    found = problems()
    if found:
        raise EngineContractError(
            "onepass engine plugin refuses to start: the installed vLLM is not the one it was "
            "verified against.\n  - " + "\n  - ".join(found))
