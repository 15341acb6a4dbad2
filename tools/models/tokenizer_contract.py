"""Write a tokenizer contract: probe strings and the token ids a model's own tokenizer gives them,
and every special token it has.

Usage: .venv/bin/python tools/models/tokenizer_contract.py MODEL_DIR_OR_ID OUT.json
       [--model-note TEXT]
Run it once where the model's tokenizer is at hand (the model hub is unreachable from this
project's machine, so the GPU profiles ship without one), then set the profile's
`tokenizer_contract` to OUT.json. At every start the shim tokenizes the same strings through
vLLM's /tokenize and refuses to serve if any id differs (a swapped or drifted tokenizer).
The probes are the embedded contract's strings (tokenizer/smollm2-135m-instruct.json): plain and
non-Latin text, emoji, JSON, whitespace runs, the labels, and a chat-template marker.
`specials` is every added token the tokenizer marks special, text -> id, read from the tokenizer
itself so that none is missed: the shim neutralises each of them in client text
(onepass/prompt/neutral.py) and checks them at start-up. Added tokens not marked special (Gemma's
HTML tags and newline runs, Qwen's <tool_call>) are ordinary text the model was trained on.
`max_token_bytes`, `max_alnum_token_bytes` and `normalizer` let the shim bound a text's tokens
from its bytes (onepass/tokenizer_contract.py): the most bytes of normalized text one token
covers, over the whole vocabulary and the added tokens; the same over the tokens holding an
ASCII letter or digit; and the normal form the tokenizer applies first. All are null when the
tokenizer's normalizer is one Python cannot apply.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from onepass.tokenizer_contract import ALNUM, NORMAL_FORMS  # noqa: E402  (what the shim reads)
TEMPLATE = ROOT / "tokenizer" / "smollm2-135m-instruct.json"


def specials(tok) -> dict:
    """Every added token marked special, text -> id, in id order."""
    return {t.content: i for i, t in sorted(tok.added_tokens_decoder.items()) if t.special}


def token_bytes(tok) -> tuple[int | None, int | None, str | None]:
    """(the most UTF-8 bytes one token covers, the most one holding an ASCII letter or digit
    covers, the normal form applied before them), or (None, None, None) when the normalizer is
    not a plain normal form. A byte-level vocabulary spells each byte as one character (ASCII
    letters and digits as themselves), so a token covers as many bytes as it has characters;
    any other vocabulary is counted by its entries' own UTF-8 bytes, at least what they cover
    (its space mark is three bytes for one, its byte-fallback entries six for one)."""
    doc = json.loads(tok.backend_tokenizer.to_str())
    form = (doc.get("normalizer") or {}).get("type")
    if form is not None and form not in NORMAL_FORMS:
        return None, None, None
    byte_level = "ByteLevel" in json.dumps(doc.get("pre_tokenizer"))
    sizes = [(len(t) if byte_level else len(t.encode()), t) for t in tok.get_vocab()]
    sizes += [(len(t.content.encode()), t.content) for t in tok.added_tokens_decoder.values()]
    alnum = set(ALNUM.decode())
    return (max(n for n, _ in sizes), max((n for n, t in sizes if alnum & set(t)), default=1),
            form)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a local model directory (or a hub id where reachable)")
    parser.add_argument("out", help="where to write the contract")
    parser.add_argument("--model-note", default=None, help="the contract's `model` text")
    args = parser.parse_args(argv)
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(args.model)
    texts = [p["text"] for p in json.loads(TEMPLATE.read_text(encoding="utf-8"))["probes"]]
    doc = {"model": args.model_note or str(args.model),
           "comment": "Probe strings and the token ids the served tokenizer must give "
                      "(add_special_tokens false), and every special token (text -> id). Written "
                      "by tools/models/tokenizer_contract.py; checked by the shim at start-up "
                      "through vLLM's /tokenize.",
           "probes": [{"text": t, "ids": tok.encode(t, add_special_tokens=False)} for t in texts],
           "specials": specials(tok)}
    doc["max_token_bytes"], doc["max_alnum_token_bytes"], doc["normalizer"] = token_bytes(tok)
    Path(args.out).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n",
                              encoding="utf-8")
    print(f"wrote {args.out}: {len(texts)} probes, {len(doc['specials'])} special tokens, "
          f"max_token_bytes {doc['max_token_bytes']} ({doc['max_alnum_token_bytes']} with a "
          f"letter or digit), normalizer {doc['normalizer']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
