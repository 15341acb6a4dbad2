"""Direct vLLM completions calls shared by the engine tests (the shim is not involved), each
with the key of the vLLM it is aimed at (tests/support/live_stack.py started it)."""
from __future__ import annotations

import uuid

from tests.support.json_http import request
from tests.support.live_stack import vllm_auth

LABELS = [10539, 5230, 4182, 28, 33, 34]  # SmolLM2 ids: "Yes", "No", and a few others
PROMPTS = [
    "<|im_start|>user\nIs the sky blue on a clear day? Answer Yes or No.<|im_end|>\n"
    "<|im_start|>assistant\n",
    "<|im_start|>system\nYou sort tickets.<|im_end|>\n<|im_start|>user\nRecord:\nThe customer "
    "was charged twice for order 4471 and wants one charge refunded.\n\nQuestion: Is this a "
    "billing problem? Reply with Yes or No only.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nA parcel arrived crushed and the mug inside is in pieces. Was the item "
    "damaged in transit?<|im_end|>\n<|im_start|>assistant\n",
]


def unique(prompt: str) -> str:
    """A prompt no earlier request shares a prefix with (a fresh first line)."""
    return f"<|im_start|>system\nrun {uuid.uuid4().hex}<|im_end|>\n" + prompt


def complete(url: str, prompt, mode: str | None = None, labels=LABELS, **extra):
    body = {"model": "smollm2-135m-instruct", "prompt": prompt, "max_tokens": 1,
            "temperature": 0.0, "logprobs": 1, "logprob_token_ids": list(labels),
            "return_tokens_as_token_ids": True, "add_special_tokens": False, **extra}
    if mode is not None:
        body["vllm_xargs"] = {"attention_mode": mode}
    return request(url, "POST", "/v1/completions", body, vllm_auth(url))


def label_logprobs(doc: dict, labels=LABELS) -> list[float]:
    top = doc["choices"][0]["logprobs"]["top_logprobs"][0]
    return [top[f"token_id:{t}"] for t in labels]


def cached_tokens(doc: dict) -> int:
    return (doc["usage"].get("prompt_tokens_details") or {}).get("cached_tokens") or 0


def tokenize(url: str, text: str, model: str = "smollm2-135m-instruct") -> list[int]:
    return request(url, "POST", "/tokenize", {"model": model, "prompt": text,
                                              "add_special_tokens": False},
                   vllm_auth(url))[2]["tokens"]
