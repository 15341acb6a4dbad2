"""HF-transformers reference for next-token label logprobs (used by pytest tests).

Owns: loading (and caching) a local HF causal-LM checkpoint on CPU, and one
forward pass that returns the full-vocabulary log-softmax at the last position
for a few label ids, with either the normal causal mask or "two-way"
(bidirectional) full attention.

How two-way works (checked against transformers 5.19 source):
- masking_utils._preprocess_mask_arguments returns any 4D mask as-is, so
  create_causal_mask never applies the causal pattern on top of ours.
- eager_attention_forward adds the mask to the scores, so an all-zeros
  [1, 1, L, L] float mask means "every position sees every position".
- Hybrids (Qwen3-Next): the model builds {"full_attention": create_causal_mask,
  "linear_attention": create_recurrent_attention_mask}; the latter returns None
  for a 4D mask, exactly as for no mask or an all-ones 2D mask, so the Gated
  DeltaNet layers stay causal/recurrent and identical to the causal run.
  No monkey-patching is needed.
"""

from __future__ import annotations

import functools
import os

import torch
from transformers import AutoModelForCausalLM

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


@functools.lru_cache(maxsize=4)
def load_model(model_dir: str, dtype: str = "float32"):
    """Load once per (model_dir, dtype); tests call this many times."""
    model = AutoModelForCausalLM.from_pretrained(
        model_dir,
        dtype=_DTYPES[dtype],
        # eager: the mask is a plain additive term, nothing can skip it
        # (sdpa would also honour it, but eager is the easiest to audit).
        attn_implementation="eager",
        local_files_only=True,
    )
    return model.eval()


def two_way_mask(length: int, dtype: torch.dtype) -> torch.Tensor:
    """All-zeros additive 4D mask: no position is hidden from any other."""
    # Must be 4D: a 2D mask would be turned back into a causal mask.
    return torch.zeros(1, 1, length, length, dtype=dtype)


def last_logits(model, token_ids: list[int], two_way: bool) -> torch.Tensor:
    """Logits at the last position for one sequence (batch of 1)."""
    input_ids = torch.tensor([token_ids], dtype=torch.long)
    mask = two_way_mask(len(token_ids), model.dtype) if two_way else None
    with torch.inference_mode():
        # use_cache=False: no cache object, so mask sizes come from the input.
        out = model(input_ids=input_ids, attention_mask=mask, use_cache=False)
    return out.logits[0, -1]


def next_token_logprobs(
    model_dir: str,
    token_ids: list[int],
    label_ids: list[int],
    dtype: str = "float32",
    two_way: bool = True,
) -> list[float]:
    """Full-vocab log-softmax at the last position, picked at label_ids."""
    # Normalise the path so Path/str/"~" callers share one cached model.
    model = load_model(os.path.expanduser(str(model_dir)), dtype)
    logits = last_logits(model, list(token_ids), two_way)
    # Softmax in fp32 even for bf16 models, as serving engines do.
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    return [float(logprobs[i]) for i in label_ids]


def set_read_logprobs(model_dir: str, token_ids: list[int], spans, label_ids: list[int],
                      two_way: bool = False, dtype: str = "float32") -> list[float]:
    """Set-Based Prompting written out as HF inputs, independently of the engine plugin: every
    span's tokens at positions from the first span's start, what follows after the longest
    span; a span sees the text before the spans and itself (causally, or whole when two-way),
    what follows sees everything (causally, or whole), and the text before the spans sees
    itself (causally, or whole)."""
    model = load_model(os.path.expanduser(str(model_dir)), dtype)
    n, first, end = len(token_ids), spans[0][0], spans[-1][1]
    longest = max(e - s for s, e in spans)
    part = [-1] * first + [j for j, (s, e) in enumerate(spans) for _ in range(s, e)] \
        + [len(spans)] * (n - end)  # -1: before the spans; len(spans): after them
    pos = list(range(first)) + [first + t - s for s, e in spans for t in range(s, e)] \
        + [first + longest + t for t in range(n - end)]
    see = torch.zeros(n, n, dtype=torch.bool)
    for q in range(n):
        for k in range(n):
            same = part[q] == part[k]
            if k > q and not (two_way and same):
                continue
            see[q, k] = (same or part[k] == -1 or part[q] == len(spans))
    mask = torch.zeros(1, 1, n, n, dtype=model.dtype).masked_fill(~see, torch.finfo(
        model.dtype).min)
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([token_ids]), attention_mask=mask,
                    position_ids=torch.tensor([pos]), use_cache=False)
    logprobs = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
    return [float(logprobs[i]) for i in label_ids]


def max_abs_logit(model_dir: str, token_ids: list[int], dtype: str = "float32") -> float:
    """The largest |logit| at the last position of a causal read (sets the bf16 step size)."""
    model = load_model(os.path.expanduser(str(model_dir)), dtype)
    return float(last_logits(model, list(token_ids), False).float().abs().max())


def _demo_prompt(model_dir: str) -> tuple[list[int], list[int]]:
    """A chat-formatted yes/no question and the ids of "Yes" and "No"."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    question = (
        "Here is a short review: 'The battery lasts two full days, the screen "
        "is bright even in sunlight, and setup took under five minutes. I "
        "would happily buy it again.' Is this review positive? Answer with "
        "a single word, Yes or No."
    )
    ids = tok.apply_chat_template(
        [{"role": "user", "content": question}],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=False,
    )
    labels = [tok.encode(w, add_special_tokens=False)[0] for w in ("Yes", "No")]
    return list(ids), labels


def _demo() -> None:
    """Print two-way vs causal label logprobs for smollm2, fp32 and bf16."""
    import time

    model_dir = os.path.expanduser("~/.cache/onepass/models/smollm2-135m-instruct")
    ids, labels = _demo_prompt(model_dir)
    print(f"prompt tokens={len(ids)} labels(Yes,No)={labels}")
    for dtype in ("float32", "bfloat16"):
        load_model(model_dir, dtype)  # keep load time out of the timing
        t0 = time.perf_counter()
        two = next_token_logprobs(model_dir, ids, labels, dtype, two_way=True)
        t1 = time.perf_counter()
        causal = next_token_logprobs(model_dir, ids, labels, dtype, two_way=False)
        t2 = time.perf_counter()
        diff = [a - b for a, b in zip(two, causal)]
        print(f"{dtype:9s} two_way={[round(x, 4) for x in two]} "
              f"causal={[round(x, 4) for x in causal]} "
              f"diff={[round(x, 4) for x in diff]} "
              f"({t1 - t0:.2f}s, {t2 - t1:.2f}s per call)")


if __name__ == "__main__":
    _demo()
