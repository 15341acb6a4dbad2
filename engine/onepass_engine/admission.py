"""Admission and scheduling of two-way requests: whole, uncached, one token.

Owns: the hooks on the front end (InputProcessor.process_inputs), the scheduler
(Scheduler._mamba_block_aligned_split, Scheduler._reserve_prefill_lookahead) and the prefix cache
(KVCacheCoordinator.cache_blocks).
Never: changes anything for a request without the flag; every wrapper returns the original's
result for those. Which flagged requests are refused, and with what, is rules.py's.

Why each rule: vLLM assumes causal attention when it chunks a prefill or shares cached blocks
(it turns both off globally for non-causal models). A two-way row sees tokens after it, so a
chunk or a cached block computed one way cannot stand in for the other. The per-request
equivalent: run the prompt in one step, never read or publish its blocks, and stop after the
single token the decision needs (a second step would decode against a two-way cache).
"""
from __future__ import annotations

from vllm.exceptions import VLLMValidationError
from vllm.sampling_params import SamplingParams

from . import rules
from .flags import MODE_KEY, SETS_KEY, is_two_way, requested_spans, requested_two_way


def one_step_budget(scheduler_config) -> int:
    """The most prompt tokens the scheduler can give one request in one step."""
    budget = scheduler_config.max_num_batched_tokens
    threshold = scheduler_config.long_prefill_token_threshold
    return min(budget, threshold) if threshold > 0 else budget


def wrap_process_inputs(original):
    def process_inputs(self, request_id, prompt, params, *args, **kwargs):
        if not isinstance(params, SamplingParams):
            return original(self, request_id, prompt, params, *args, **kwargs)
        try:
            two_way = requested_two_way(params)
        except ValueError as e:
            raise VLLMValidationError(str(e), parameter=f"vllm_xargs.{MODE_KEY}") from None
        try:
            spans = requested_spans(params)
        except ValueError as e:
            raise VLLMValidationError(str(e), parameter=f"vllm_xargs.{SETS_KEY}") from None
        if not two_way and not spans:
            return original(self, request_id, prompt, params, *args, **kwargs)
        refused = rules.before_processing(two_way, spans, self.vllm_config.use_v2_model_runner,
                                          params.min_tokens)
        if refused:
            raise VLLMValidationError(refused[0], parameter=refused[1])
        request = original(self, request_id, prompt, params, *args, **kwargs)
        num_tokens = (len(request.prompt_token_ids) if request.prompt_token_ids is not None
                      else len(request.prompt_embeds))
        # The message is for people; clients read a budget refusal from `param`, which vLLM
        # passes through to the HTTP error body (error.param) as written.
        refused = rules.after_processing(two_way, spans, num_tokens,
                                         one_step_budget(self.vllm_config.scheduler_config))
        if refused:
            raise VLLMValidationError(refused[0], parameter=refused[1])
        request.sampling_params.max_tokens = 1
        if two_way:
            request.sampling_params.skip_reading_prefix_cache = True
        return request
    return process_inputs


def one_step_from(request) -> int:
    """Where the part of a flagged request that must run in one step begins: 0 for two-way,
    the first span for a set read, -1 for neither."""
    params = request.sampling_params
    if is_two_way(params):
        return 0
    spans = requested_spans(params)
    return spans[0][0] if spans else -1


def wrap_mamba_split(original):
    def _mamba_block_aligned_split(self, request, num_new_tokens, *args, **kwargs):
        if one_step_from(request) >= 0:
            # The cut exists to cache recurrent state at block edges; a two-way request
            # caches nothing and never decodes, so it runs uncut (or waits, below).
            return num_new_tokens
        return original(self, request, num_new_tokens, *args, **kwargs)
    return _mamba_block_aligned_split


def wrap_lookahead(original):
    def _reserve_prefill_lookahead(self, request, num_computed_tokens, num_new_tokens):
        granted = original(self, request, num_computed_tokens, num_new_tokens)
        start = one_step_from(request) if granted else -1
        if start >= 0 and start < num_computed_tokens + granted < request.num_tokens:
            # The one-step part would be cut: run the prefix before it alone, or wait (the
            # scheduler stops the waiting scan on 0) rather than run part of it.
            return max(start - num_computed_tokens, 0)
        return granted
    return _reserve_prefill_lookahead


def cached_up_to(request, block_size: int) -> int | None:
    """The tokens of a flagged request its prefix-cache blocks may cover (None: any): none for
    two-way, whole blocks before the first span for a set read (a block holding span tokens was
    computed with their shared positions and mask, and must never stand for a causal one)."""
    start = one_step_from(request)
    return None if start < 0 else start // block_size * block_size


def wrap_cache_blocks(original):
    def cache_blocks(self, request, num_computed_tokens):
        most = cached_up_to(request, self.scheduler_block_size)
        if most is None:
            return original(self, request, num_computed_tokens)
        if most == 0:
            return None  # nothing of it may serve a causal (or another) request
        return original(self, request, min(num_computed_tokens, most))
    return cache_blocks


def wrap_computed_blocks(original):
    """A set read reads cached blocks only before its first span (its blocks after that were
    never published, but a causal request of the same tokens may have published them)."""
    def get_computed_blocks(self, request):
        most = cached_up_to(request, self.coordinator.scheduler_block_size)
        if most is None:
            return original(self, request)
        every = request.block_hashes
        request.block_hashes = every[:most // self.coordinator.block_pool.hash_block_size]
        try:
            return original(self, request)
        finally:
            request.block_hashes = every
    return get_computed_blocks
