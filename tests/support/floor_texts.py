"""Texts that press on a tokenizer contract's floor (onepass/tokenizer_contract.py): long runs of
one character (the longest vocabulary entries are runs of spaces, newlines and punctuation),
decomposed Hangul and accents (NFC shrinks their bytes), digits, CJK, emoji, the longest words
of the vocabularies and the hostile long state's paragraphs. A live test sends each to the
served tokenizer: none may count fewer tokens than the floor says.
"""
import unicodedata

RUNS = [" ", "\n", "\t", "=", "-", "_", "*", "#", "/", ".", "0", "\u3000"]
# the longest vocabulary entries holding letters (Qwen2.5's and SmolLM2's), the floor's tight case
WORDS = [".translatesAutoresizingMaskIntoConstraints", " dequeueReusableCellWithIdentifier",
         "ManagementPlaneProtection", " NotImplementedError", " telecommunications"]


def texts() -> list[str]:
    out = [c * n for c in RUNS for n in (1, 3, 80, 81, 127, 128, 129, 256, 1000)]
    out += ["\n" + " " * n for n in (16, 79, 80, 127, 128)]
    out += [unicodedata.normalize("NFD", "한국어 텍스트 " * 200), "e\u0301" * 500,
            "\u212b" * 300, "日本語のテキスト" * 100, "🙂" * 200, "x" * 2000,
            "\n\n".join(f"Item {i} {i * 7919 % 100_003}." for i in range(500))]
    out += [w * n for w in WORDS for n in (1, 20)]
    return out


def under_floor(ids, floor) -> list:
    """(text's start, tokens, floor) of each text the served tokenizer (`ids(text)` -> its ids)
    counts below the floor: [] when the floor holds."""
    counted = [(t[:20], len(ids(t)), floor.tokens(t)) for t in texts()]
    return [c for c in counted if c[1] < c[2]]
