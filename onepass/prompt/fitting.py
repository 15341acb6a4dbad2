"""Long inputs: fit each question's prompt into the context by choosing what of the state it reads.

Owns: the length check (a prompt no longer in UTF-8 bytes than the budget fits, since a token
covers at least one byte; longer ones are estimated from the state counted once, and counted
exactly only near the budget), choosing the state's parts (state_parts.py) per question by BM25
against the question and its options, or head and tail, in original order until the prompt
fits, shortening a question that does not fit even with no state, and the request's read count.
Never: lays out a prompt or sizes one itself (the question's layout.Frame renders and costs
it); changes options, their order or keys; cuts instructions while a state is left to cut.
In: a Page, the profile, labels, a token counter and the budget. Out: Reads (each question's
own state) and a Selection per question that was cut.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .bm25 import BM25, terms
from ..decision_model import Option, Page, Question, Read
from ..errors import PayloadTooLarge
from .layout import MAX_STATE_BYTES, state_too_large
from .layout import frames as layout_frames
from ..profile import STATE_SELECTIONS
from .state_parts import GAP, render, split

BM25_METHOD, HEAD_TAIL = STATE_SELECTIONS
MAX_ROUNDS = 8  # tokenizer boundaries make the parts' sum an estimate; re-check the real prompt
SEAM_TOKENS = 8  # a state counted alone vs inside a prompt: tokens may merge at its two ends
QUESTION_CHARS_PER_TOKEN = 16  # a question text beyond this many characters per budget token is
# cut before it is shortened by counting (a token averages far fewer; this bounds the counting)


@dataclass(frozen=True)
class Selection:
    question: int
    kept_tokens: int  # the fitted prompt, the longest of the question's reads
    total_tokens: int  # the prompt with the whole state
    method: str  # bm25, head_tail, or either + "+question_shortened"


def fit(page: Page, profile, labels, count, budget: int) -> tuple[list[Read], list]:
    """Every question's reads, each within `budget` tokens; `count(texts)` -> token counts.
    Work is bounded by the request's size: the state is measured once for all questions (its
    bytes, then, only if needed, its tokens, parts and BM25 index); a question's prompts are
    built with the whole state only when they fit, and each distinct text is counted once.
    Each question's frame (layout.Frame) says what a state costs and renders the text kept."""
    frames = layout_frames(page, profile, labels, _once(count))
    if not frames:
        return [], []
    whole = Whole(page.state, frames[0])
    reads, selections = [], []
    for frame in frames:
        if frame.cost_bytes(whole.bytes) <= budget:
            reads += frame.render(whole.text)
            continue
        total, slack = frame.cost(whole.tokens), SEAM_TOKENS * frame.repeat
        if total - slack <= budget:
            mine = frame.render(whole.text)
            if total + slack > budget:  # too close to call from the estimate: count exactly
                total = frame.longest(mine)
            if total <= budget:
                reads += mine
                continue
        mine, selection = _fit_question(frame, budget, total, whole)
        selections.append(selection)
        reads += mine
    return reads, selections


class Whole:
    """The request's state, measured once for every question: its rendering and bytes as the
    prompts show it (from a frame: every frame of a request shares them); its tokens (counted
    as one text); and, once a question must be cut, its parts, their tokens and a BM25 index."""

    def __init__(self, state, frame):
        self.state, self.count = state, frame.count
        self.compact = frame.opts.compact_json
        self.text, self.shown = frame.state_text, frame.shown_state
        self.bytes = len(self.shown.encode())
        if self.bytes > MAX_STATE_BYTES:
            raise state_too_large(self.bytes)
        self._tokens = self._parts = None

    @property
    def tokens(self) -> int:
        if self._tokens is None:
            self._tokens = self.count([self.shown])[0]
        return self._tokens

    def parts(self):
        """(parts, their token counts, a BM25 index or None)."""
        if self._parts is None:
            parts = split(self.state)
            costs = self.count([p.text for p in parts]) if parts else []
            self._parts = parts, costs, BM25([terms(p.text) for p in parts]) if parts else None
        return self._parts


def _once(count):
    """count, with each distinct text sent to the tokenizer once per request."""
    known: dict[str, int] = {}

    def counted(texts: list[str]) -> list[int]:
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            known.update(zip(missing, count(missing)))
        return [known[t] for t in texts]
    return counted


def _fit_question(frame, budget: int, total: int, whole: Whole):
    """(reads, Selection) for a question too long with the whole state: its state parts kept
    in ranking order while the prompt fits; a question too long on its own shortened first."""
    q, method = frame.q, frame.opts.state_selection
    overhead = frame.longest(frame.bare)
    if overhead > budget:  # even with no state: shorten instructions, then descriptions
        q = _shorten(q, lambda cand: frame.with_question(cand).longest(
            frame.with_question(cand).bare) <= budget, QUESTION_CHARS_PER_TOKEN * budget)
        method += "+question_shortened"
        frame = frame.with_question(q)
        overhead = frame.longest(frame.bare)
    room = max(0, (budget - overhead) // frame.repeat)
    parts, costs, index = whole.parts()
    order = _ranking(parts, index, q, frame.opts.state_selection)
    for _ in range(MAX_ROUNDS):
        kept = _choose(parts, costs, order, room)
        reads = frame.render(render(whole.state, parts, kept, whole.compact), total)
        n = frame.longest(reads)
        if n <= budget:
            return reads, Selection(frame.i, n, total, method)
        room -= max(n - budget, 1) // frame.repeat + 1  # what the estimate missed, and a little
    reads = frame.render(GAP, total)
    return reads, Selection(frame.i, frame.longest(reads), total, method)


# -- choosing ----------------------------------------------------------------------------
def _ranking(parts, index, q: Question, method: str) -> list[int]:
    """Part indices in the order they are taken: by BM25 score (ties and unmatched parts in
    original order), or, with head_tail or when nothing matches, head and tail alternately."""
    if method == BM25_METHOD and parts:
        query = terms(" ".join([q.instructions or ""] + [o.key + " " + (o.text or "")
                                                          for o in q.options]))
        scores = index.scores(query)
        if any(s > 0 for s in scores):
            return sorted(range(len(parts)), key=lambda j: (-scores[j], j))
    head, tail, out = 0, len(parts) - 1, []
    while head <= tail:
        out.append(head)
        if tail != head:
            out.append(tail)
        head, tail = head + 1, tail - 1
    return out


def _choose(parts, costs, order, room: int) -> set[int]:
    """Take parts in `order` (each with its headings) while they fit in `room` tokens; each
    part also pays for its separator and a possible gap line."""
    kept, used = set(), 0
    for j in order:
        need = [h for h in parts[j].heads if h not in kept] + [j]
        cost = sum(costs[k] + 3 for k in need if k not in kept)
        if used + cost <= room:
            kept.update(need)
            used += cost
    return kept


# -- a question too long on its own --------------------------------------------------------
def _shorten(q: Question, fits, max_chars: int) -> Question:
    """Halve the instructions, then every option description, until `fits`; option keys, their
    order and the answer labels stay. Returns the shortest tried if nothing fits. Texts longer
    than max_chars are cut to it first, so the counting is bounded by the budget."""
    q = replace(q, options=tuple(Option(o.key, o.text[:max_chars] + " " + GAP)
                                 if o.text and len(o.text) > max_chars else o for o in q.options))
    text = (q.instructions or "")[:max_chars]
    while text and not fits(replace(q, instructions=text + " " + GAP)):
        text = text[:len(text) // 2]
    q = replace(q, instructions=(text + " " + GAP) if text else None) \
        if text != (q.instructions or "") else q
    if fits(q):
        return q
    limit = max((len(o.text or "") for o in q.options), default=0)
    while limit:
        limit //= 2
        cut = tuple(Option(o.key, None if not o.text else
                           (o.text if len(o.text) <= limit else o.text[:limit] + " " + GAP)
                           if limit else None) for o in q.options)
        if fits(replace(q, options=cut)):
            return replace(q, options=cut)
    return replace(q, options=tuple(Option(o.key, None) for o in q.options))
