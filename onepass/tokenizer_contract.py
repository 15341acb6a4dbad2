"""What a profile's tokenizer contract (tokenizer/*.json, written by
tools/models/tokenizer_contract.py) tells the shim besides its probes: the special tokens, and
the fewest tokens a text can be, from its bytes, without asking vLLM.

Owns: reading and checking those two fields; the floor (`Floor.tokens`).
Never: checks the probes' ids against the served tokenizer (backend/probes.py does, at start-up,
so the figures here are the served tokenizer's once the shim serves).

Why a floor: a state of hundreds of kilobytes takes vLLM's one API process a quarter of a second
per /tokenize call; when its bytes alone prove it longer than a read's budget, the request is
priced and refused before that call (prompt/fitting.py). The bound: a token covers at most
`max_token_bytes` bytes of the text as the tokenizer's normal form leaves it, and one that covers
an ASCII letter or digit at most `max_alnum_token_bytes` (the longest runs are of spaces and
punctuation; words are far shorter). Every such letter or digit lies in such a token, so the
text is at least that many of them, and the bytes they cannot cover need tokens of their own.
Python's unicodedata applies the normal form; its Unicode version may trail the tokenizer's,
which matters only for characters newer than it.
"""
from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path

NORMAL_FORMS = ("NFC", "NFKC", "NFD", "NFKD")  # the normalizers unicodedata can apply
ALNUM = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Floor:
    max_token_bytes: int  # the most UTF-8 bytes of normalized text one token covers
    max_alnum_token_bytes: int  # the same for a token holding an ASCII letter or digit
    normalizer: str | None  # one of NORMAL_FORMS, or None: the tokenizer normalizes nothing

    def tokens(self, text: str) -> int:
        """The fewest tokens `text` can be (no special tokens added)."""
        if self.normalizer is not None:
            text = unicodedata.normalize(self.normalizer, text)
        data = text.encode("utf-8", "surrogatepass")
        alnum = len(data) - len(data.translate(None, ALNUM))
        words = -(-alnum // self.max_alnum_token_bytes)
        rest = max(0, len(data) - words * self.max_alnum_token_bytes)
        return words + -(-rest // self.max_token_bytes)


def read(contract, root: Path) -> tuple[tuple[str, ...], Floor | None]:
    """(the special tokens, the floor or None) of the contract at `root / contract`; ((), None)
    without a contract. A contract written before the floor's fields has no floor. ValueError
    says what is wrong."""
    if contract is None:
        return (), None
    if not isinstance(contract, str):
        raise ValueError("tokenizer_contract must be a path under tokenizer/ or null")
    try:
        doc = json.loads((root / contract).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read its tokenizer contract: {e}") from None
    specials = doc.get("specials") if isinstance(doc, dict) else None
    if not (isinstance(specials, dict) and specials and all(
            isinstance(s, str) and type(i) is int for s, i in specials.items())):
        raise ValueError(f"{contract} lists no special tokens (text -> id); write it "
                          "again with tools/models/tokenizer_contract.py")
    most, words = doc.get("max_token_bytes"), doc.get("max_alnum_token_bytes")
    form = doc.get("normalizer")
    if most is None:
        return tuple(specials), None
    if not (type(most) is type(words) is int and 1 <= words <= most) or not (
            form is None or form in NORMAL_FORMS):
        raise ValueError(f"{contract}'s max_token_bytes and max_alnum_token_bytes must be "
                         "positive integers, the second at most the first, and its normalizer "
                         f"one of {', '.join(NORMAL_FORMS)} or null")
    return tuple(specials), Floor(most, words, form)
