"""A set read's prompt as token ids for the engine plugin (layout option_sets): the text cut at
its head and its spans, each piece tokenized alone, and the spans in tokens.

Owns: the pieces (head, what follows it up to the first span, each span, the tail), their
token ids (each alone: an option's tokens never depend on the option listed before it, so its
keys and values are the same in any listing), the plugin's `set_spans` value, and a small cache
of heads' ids (every question over one state shares its head).
Never: decides what is a span (prompt/layout.py does) or reads the answer (engine.py does).
In: a Read with spans and the engine's tokenize. Out: (token ids, "s1:e1,s2:e2,...").
"""
from __future__ import annotations

import threading
from collections import OrderedDict

SETS_KEY = "set_spans"  # the plugin's vllm_xargs key (engine/onepass_engine/flags.py)
HEADS_KEPT = 16  # heads' ids kept: the states being answered at once, about


class Heads:
    """Token ids of the heads seen last (a state's head is tokenized once per request, not once
    per question)."""

    def __init__(self):
        self._ids: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def ids(self, text: str, tokenize) -> list[int]:
        with self._lock:
            hit = self._ids.get(text)
            if hit is not None:
                self._ids.move_to_end(text)
                return hit
        got = tokenize(text)
        with self._lock:
            self._ids[text] = got
            while len(self._ids) > HEADS_KEPT:
                self._ids.popitem(last=False)
        return got


def pieces(read) -> list[tuple[str, bool]]:
    """(text, is a span) in prompt order; empty pieces left out."""
    spans = read.spans
    cuts = [(0, min(read.head_chars, spans[0][0]), False), (min(read.head_chars, spans[0][0]),
                                                             spans[0][0], False)]
    cuts += [(a, b, True) for a, b in spans] + [(spans[-1][1], len(read.prompt), False)]
    return [(read.prompt[a:b], span) for a, b, span in cuts if b > a]


def token_prompt(read, tokenize, heads: Heads) -> tuple[list[int], str]:
    """(ids, the plugin's spans value): every piece tokenized alone, the head from `heads`."""
    ids, spans = [], []
    for i, (text, span) in enumerate(pieces(read)):
        got = heads.ids(text, tokenize) if i == 0 and read.head_chars else tokenize(text)
        if span:
            spans.append(f"{len(ids)}:{len(ids) + len(got)}")
        ids += got
    return ids, ",".join(spans)
