"""Admission and scheduling of two-way requests: whole, uncached, one token.

Owns: the hooks on the front end (InputProcessor.process_inputs), the scheduler
(Scheduler._mamba_block_aligned_split, Scheduler._reserve_prefill_lookahead) and the prefix cache
(KVCacheCoordinator.cache_blocks).
Never: changes anything for a request without the flag; every wrapper returns the original's
result for those.

Why each rule: vLLM assumes causal attention when it chunks a prefill or shares cached blocks
(it turns both off globally for non-causal models). A two-way row sees tokens after it, so a
chunk or a cached block computed one way cannot stand in for the other. The per-request
equivalent: run the prompt in one step, never read or publish its blocks, and stop after the
single token the decision needs (a second step would decode against a two-way cache).
"""
from __future__ import annotations

import json

from vllm.exceptions import VLLMValidationError
from vllm.sampling_params import SamplingParams

from .flags import MODE_KEY, is_two_way, requested_two_way


def one_step_budget(scheduler_config) -> int:
    """The most prompt tokens the scheduler can give one request in one step."""
    budget = scheduler_config.max_num_batched_tokens
    threshold = scheduler_config.long_prefill_token_threshold
    return min(budget, threshold) if threshold > 0 else budget


def over_budget(budget: int, num_tokens: int) -> str:
    """The typed refusal of a two-way prompt over the one-step budget: a JSON object in the
    error's `param` (the one structured field vLLM's error body carries through), naming the
    refusal and both counts in tokens. The shim reads it (onepass/backend/engine.py)."""
    return json.dumps({"onepass_error": "two_way_budget", "budget_tokens": budget,
                       "prompt_tokens": num_tokens}, separators=(",", ":"))


def wrap_process_inputs(original):
    def process_inputs(self, request_id, prompt, params, *args, **kwargs):
        if not isinstance(params, SamplingParams):
            return original(self, request_id, prompt, params, *args, **kwargs)
        try:
            two_way = requested_two_way(params)
        except ValueError as e:
            raise VLLMValidationError(str(e), parameter=f"vllm_xargs.{MODE_KEY}") from None
        if not two_way:
            return original(self, request_id, prompt, params, *args, **kwargs)
        if params.min_tokens > 1:
            raise VLLMValidationError("a two-way request returns exactly one token; "
                                      "min_tokens must be 0 or 1", parameter="min_tokens")
        request = original(self, request_id, prompt, params, *args, **kwargs)
        num_tokens = (len(request.prompt_token_ids) if request.prompt_token_ids is not None
                      else len(request.prompt_embeds))
        budget = one_step_budget(self.vllm_config.scheduler_config)
        if num_tokens > budget:
            # The message is for people; clients read the refusal from `param`, which vLLM
            # passes through to the HTTP error body (error.param) as written.
            raise VLLMValidationError(
                f"a two-way (bidirectional) request is prefilled whole in one step, and its "
                f"prompt has {num_tokens} tokens, more than this server's one-step budget of "
                f"{budget} (--max-num-batched-tokens); shorten the prompt or raise the budget",
                parameter=over_budget(budget, num_tokens))
        request.sampling_params.max_tokens = 1
        request.sampling_params.skip_reading_prefix_cache = True
        return request
    return process_inputs


def wrap_mamba_split(original):
    def _mamba_block_aligned_split(self, request, num_new_tokens, *args, **kwargs):
        if is_two_way(request.sampling_params):
            # The cut exists to cache recurrent state at block edges; a two-way request
            # caches nothing and never decodes, so it runs uncut (or waits, below).
            return num_new_tokens
        return original(self, request, num_new_tokens, *args, **kwargs)
    return _mamba_block_aligned_split


def wrap_lookahead(original):
    def _reserve_prefill_lookahead(self, request, num_computed_tokens, num_new_tokens):
        granted = original(self, request, num_computed_tokens, num_new_tokens)
        if (granted and is_two_way(request.sampling_params)
                and num_computed_tokens + granted < request.num_tokens):
            # Less than the whole prompt fits this step: wait (the scheduler stops the
            # waiting scan on 0) rather than run part of it.
            return 0
        return granted
    return _reserve_prefill_lookahead


def wrap_cache_blocks(original):
    def cache_blocks(self, request, num_computed_tokens):
        if is_two_way(request.sampling_params):
            return None  # two-way KV must never serve a causal (or another) request
        return original(self, request, num_computed_tokens)
    return cache_blocks
