"""The served tokenizer's added tokens, read at start-up from vLLM's /tokenizer_info: strings the
tokenizer matches whole before any other piece, so client text must not carry them as such
(prompt/neutral.py), whether or not the tokenizer marks them special and whether or not a
tokenizer contract lists them.

Owns: reading the route's `added_tokens_decoder`, which added tokens are neutralised (`kept`),
and what a vLLM that does not describe its tokenizer means: a profile without a tokenizer
contract is refused (nothing would then name the model's special tokens), one with a contract
starts from the contract with one warning.
Never: checks ids or the neutral spelling (probes.check_specials does, for the whole set).
In: an Engine and the Profile. Out: text -> id of the added tokens kept, or ValueError (the
guard's refusal).
"""
from __future__ import annotations

import logging

log = logging.getLogger("onepass")
FLAG = "--enable-tokenizer-info-endpoint"  # vLLM serves /tokenizer_info only with it


def kept(token: str) -> bool:
    """Whether client text may not carry this added token as such: two characters or more, one
    neither a letter, a digit nor whitespace. vLLM 0.32 drops the tokenizer's `special` flag
    from the route, and the flag would not do anyway: Qwen marks its `<tool_call>` and `<think>`
    markers not special. Whitespace runs and plain words (added by some tokenizers for indents
    and blank lines) stay text: they mark no turn, and a joiner in every run of spaces would
    change ordinary text everywhere. Every special of the shipped contracts passes this rule."""
    return len(token) >= 2 and any(not (c.isalnum() or c.isspace()) for c in token)


def served(engine, profile) -> dict[str, int]:
    """The served tokenizer's added tokens that `kept` keeps, text -> id. Without them (no
    route: vLLM started without FLAG, or an answer without the list) a ValueError for a
    profile without a tokenizer contract, else {} and one warning."""
    status, doc = engine.tokenizer_info()
    decoder = doc.get("added_tokens_decoder") if status == 200 and isinstance(doc, dict) \
        else None
    found = _ids_in(decoder) if isinstance(decoder, dict) else None
    if found is not None:
        return {text: i for text, i in found.items() if kept(text)}
    why = (f"vLLM answered /tokenizer_info with HTTP {status}" if status != 200 else
           "vLLM's /tokenizer_info lists no readable added_tokens_decoder")
    if not profile.tokenizer_contract:
        raise ValueError(f"{why}, and the profile has no tokenizer contract: the model's "
                         "special tokens are unknown, so client text cannot be kept from "
                         f"carrying them. Start vLLM with {FLAG} (serve.sh does), or write the "
                         "profile a contract with tools/models/tokenizer_contract.py")
    log.warning("%s (start vLLM with %s, as serve.sh does): client text is neutralised for "
                "the tokenizer contract's specials and the profile's own markers only, not for "
                "added tokens the contract does not list", why, FLAG)
    return {}


def _ids_in(decoder: dict) -> dict[str, int] | None:
    """id -> text (vLLM 0.32 writes each added token as its text) or id -> {content, ...} (a
    tokenizer_config.json's form) as text -> id; None when an entry is neither."""
    found = {}
    for key, token in decoder.items():
        text = token.get("content") if isinstance(token, dict) else token
        if not (isinstance(text, str) and isinstance(key, str) and key.isascii()
                and key.isdigit()):
            return None
        found[text] = int(key)
    return found
