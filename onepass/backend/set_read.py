"""A set read's prompt as token ids for the engine plugin (layout option_sets): the text cut at
its head and its spans, each piece tokenized alone, and the spans in tokens.

Owns: the pieces (head, what follows it up to the first span, each span, the tail), their
token ids (each alone: an option's tokens never depend on the option listed before it, so its
keys and values are the same in any listing), the plugin's `set_spans` value, and two small
caches of ids: heads' (every question over one state shares its head) and the other pieces'
(a question's lines come back with every state asked about).
Never: decides what is a span (prompt/layout.py does) or reads the answer (engine.py does).
In: a Read with spans and the engine's tokenize. Out: (token ids, "s1:e1,s2:e2,...").
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future

SETS_KEY = "set_spans"  # the plugin's vllm_xargs key (engine/onepass_engine/flags.py)
HEADS_KEPT = 16  # heads' ids kept: the states being answered at once, about
PIECES_KEPT = 1024  # other pieces' ids kept: the lines of the questions asked lately
PIECE_CHARS = 4096  # a longer piece is not kept (with the question first, the state is a piece)


class IdCache:
    """Token ids of the texts seen last, `kept` of them (a state's head is tokenized once per
    request, not once per question). A text is tokenized once however many reads ask for it at
    the same time: the first asks vLLM, the others wait for its ids, so how many /tokenize
    calls a request makes does not depend on how its concurrent reads interleave (replay tapes
    count them)."""

    def __init__(self, kept: int = HEADS_KEPT, longest: int | None = None):
        self._ids: OrderedDict = OrderedDict()
        self._asking: dict[str, Future] = {}  # texts being tokenized now -> their ids to come
        self._lock = threading.Lock()
        self._kept, self._longest = kept, longest

    def ids(self, text: str, tokenize) -> list[int]:
        if self._longest is not None and len(text) > self._longest:
            return tokenize(text)
        while True:
            with self._lock:
                hit = self._ids.get(text)
                if hit is not None:
                    self._ids.move_to_end(text)
                    return hit
                asking = self._asking.get(text)
                if asking is None:
                    mine = self._asking[text] = Future()
                    break
            if asking.exception() is None:  # waits; another's failure (its client left) is
                return asking.result()  # not ours: ask again
        try:
            got = tokenize(text)
        except BaseException as failed:
            with self._lock:
                del self._asking[text]
            mine.set_exception(failed)
            raise
        with self._lock:
            del self._asking[text]
            self._ids[text] = got
            while len(self._ids) > self._kept:
                self._ids.popitem(last=False)
        mine.set_result(got)
        return got


def pieces(read) -> list[tuple[str, bool]]:
    """(text, is a span) in prompt order; empty pieces left out."""
    spans = read.spans
    cuts = [(0, min(read.head_chars, spans[0][0]), False), (min(read.head_chars, spans[0][0]),
                                                             spans[0][0], False)]
    cuts += [(a, b, True) for a, b in spans] + [(spans[-1][1], len(read.prompt), False)]
    return [(read.prompt[a:b], span) for a, b, span in cuts if b > a]


def token_prompt(read, tokenize, heads: IdCache, kept: IdCache) -> tuple[list[int], str]:
    """(ids, the plugin's spans value): every piece tokenized alone, the head through `heads`,
    the others through `kept`."""
    ids, spans = [], []
    for i, (text, span) in enumerate(pieces(read)):
        got = (heads if i == 0 and read.head_chars else kept).ids(text, tokenize)
        if span:
            spans.append(f"{len(ids)}:{len(ids) + len(got)}")
        ids += got
    return ids, ",".join(spans)
