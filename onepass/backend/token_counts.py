"""Token counts through vLLM's /tokenize, several texts a call: vLLM's route takes one prompt, so
texts go joined by a separator, an added token the tokenizer matches whole before anything
else; the ids between two separators are the ids of the text between them, as when it is
tokenized alone. Start-up proves that for the served tokenizer (`separator`); without such a
token every text is a call of its own.

Owns: choosing and proving the separator, batching (at most BATCH_CHARS of text a call), the
bounded cache of counts (sha256 of a text -> tokens) and telling the caller how many calls a
count made (a request's work budget prices them: work.py).
Never: sends HTTP itself (the engine's tokenize does) or decides what is counted (fitting.py).
"""
from __future__ import annotations

import hashlib
import threading

from ..prompt.layout import wrap_chat
from ..prompt.neutral import markers

BATCH_CHARS = 1 << 20  # of joined text per /tokenize call: a state of 8 MiB is 8 calls
COUNT_CACHE = 50_000  # token counts kept (32-byte keys)
# texts whose tokens could merge with a separator's neighbours if it did not split them cleanly
CHECKS = ("Hello world.", " a leading space", "a trailing space ", "\n\nblank lines\n\n", "x",
          "ünïcödé 日本語 text", "  two spaces", "\ttab", "42", "")


def separator(tokenize, profile) -> tuple[str, int] | None:
    """(text, id) of an added token of the profile's tokenizer that no prompt writes and that
    splits a batch exactly (proven on CHECKS and a chat prompt: each text's ids alone equal
    its ids between separators); None when no token does. `tokenize(text)` -> ids."""
    written = markers(profile)  # the prompts' own markers are no separator
    checks = CHECKS + (wrap_chat(profile, "System text.", "Record:\nstate"),)
    alone = None
    for text in sorted(profile.specials):
        if text in written or any(text in c for c in checks):
            continue
        ids = tokenize(text)
        if len(ids) != 1:
            continue
        alone = alone or [tokenize(c) for c in checks]
        if _split(tokenize(text.join(checks)), ids[0]) == alone:
            return text, ids[0]
    return None


def _split(ids: list[int], sep: int) -> list[list[int]]:
    out = [[]]
    for i in ids:
        if i == sep:
            out.append([])
        else:
            out[-1].append(i)
    return out


class Counts:
    """Token counts (no special tokens) of texts, cached; `tokenize(text)` -> ids, `map(fn,
    items)` runs calls concurrently (the engine's)."""

    def __init__(self, tokenize, map_fn):
        self.tokenize, self.map = tokenize, map_fn
        self._known: dict[bytes, int] = {}
        self._lock = threading.Lock()

    def count(self, texts: list[str], sep: tuple[str, int] | None = None,
              calls=None) -> list[int]:
        """Each text's tokens; the ones not cached tokenized in batches joined by `sep` (a
        text holding the separator goes alone), else one call each. `calls(n)`, when given,
        hears how many /tokenize calls this made."""
        keys = [hashlib.sha256(t.encode()).digest() for t in texts]
        with self._lock:  # what is cached now is kept now: another request may evict it
            found = {k: self._known[k] for k in keys if k in self._known}
        missing = {k: t for k, t in zip(keys, texts) if k not in found}
        batches = _batches(list(missing.values()), sep)
        if calls is not None and batches:
            calls(len(batches))
        counted = [n for got in self.map(lambda b: self._batch(b, sep), batches) for n in got]
        found.update(zip(missing, counted))
        with self._lock:
            self._known.update(zip(missing, counted))
            while len(self._known) > COUNT_CACHE:  # oldest first (dicts keep insertion order)
                del self._known[next(iter(self._known))]
        return [found[k] for k in keys]

    def _batch(self, batch: list[str], sep) -> list[int]:
        if len(batch) == 1:
            return [len(self.tokenize(batch[0]))]
        pieces = _split(self.tokenize(sep[0].join(batch)), sep[1])
        if len(pieces) != len(batch):  # not as proven at start-up: each alone
            return [len(self.tokenize(t)) for t in batch]
        return [len(p) for p in pieces]


def _batches(texts: list[str], sep) -> list[list[str]]:
    """Texts in order, grouped up to BATCH_CHARS (one each without a separator)."""
    if sep is None:
        return [[t] for t in texts]
    out, size = [], BATCH_CHARS
    for t in texts:
        if sep[0] in t:
            out.append([t])
            size = BATCH_CHARS
            continue
        if size + len(t) > BATCH_CHARS:
            out.append([])
            size = 0
        out[-1].append(t)
        size += len(t) + len(sep[0])
    return out
