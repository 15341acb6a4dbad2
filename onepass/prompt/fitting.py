"""Long inputs: fit each question's prompt into the context by choosing what of the state it reads.

Owns: the length check (a prompt no longer in UTF-8 bytes than the budget fits, since a token
covers at least one byte; one longer than the budget even at the fewest tokens its state's bytes
can be, tokenizer_contract.Floor, is cut without counting the whole state first; the others are
estimated from the state counted once, and counted exactly only near the budget), choosing the
state's parts (state_parts.py) per question by BM25 against the question and its options, or
head and tail, in original order until the prompt fits, shortening (shorten.py) a question that
does not fit even with no state, and the request's read count;
the cost of all that bounded per request: the state split, counted and indexed once, a
question's ranking by the postings of its terms, the scan stopped once nothing more fits, every
question's prompts of a round counted together, and the work told to the meter (the request's
work.Budget) before it is done.
Never: lays out a prompt or sizes one itself (the question's layout.Frame renders and costs
it); changes options, their order or keys; cuts instructions while a state is left to cut;
prices the work (work.py does).
In: a Page, the profile, labels, a token counter, the budget and a meter. Out: Reads (each
question's own state) and a Selection per question that was cut.
"""
from __future__ import annotations

from dataclasses import dataclass

from .bm25 import BM25, terms
from ..decision_model import Page, Question, Read
from ..errors import PayloadTooLarge
from .layout import MAX_STATE_BYTES, state_too_large
from .layout import frames as layout_frames
from ..profile import STATE_SELECTIONS
from .shorten import shorten
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


def fit(page: Page, profile, labels, count, budget: int, meter=None) -> tuple[list[Read], list]:
    """Every question's reads, each within `budget` tokens; `count(texts)` -> token counts.
    Work is bounded by the request's size: the state is measured once for all questions (its
    bytes, then, only if needed, its tokens, parts and BM25 index); a question's prompts are
    built with the whole state only when they fit, each distinct text is counted once, and the
    questions to cut are counted together, a round at a time. `meter` (work.Budget) is told
    the work before it is done: the prompts' tokens (a question to cut at `budget`), then each
    cut's ranking, so a request over its budget is refused before it is cut.
    Each question's frame (layout.Frame) says what a state costs and renders the text kept."""
    meter = meter or FREE
    frames = layout_frames(page, profile, labels, _once(count))
    if not frames:
        return [], []
    whole = Whole(page.state, frames[0])
    if any(frame.cost_bytes(whole.bytes) > budget for frame in frames):  # long: counted
        frames[0].count([r.prompt for frame in frames for r in frame.bare])  # in one go
    reads, tokens, pending = [None] * len(frames), [None] * len(frames), []
    for frame in frames:
        if frame.cost_bytes(whole.bytes) <= budget:
            reads[frame.i] = frame.render(whole.text)
            tokens[frame.i] = [len(r.prompt.encode()) for r in reads[frame.i]]  # a bound
            continue
        slack = SEAM_TOKENS * frame.repeat
        if frame.cost(whole.least) - slack > budget:  # too long by its bytes: priced before
            pending.append((frame, None))  # the state is counted (its total when it is cut)
            continue
        total = frame.cost(whole.tokens)
        if total - slack <= budget:
            mine = frame.render(whole.text)
            if total + slack > budget:  # too close to call from the estimate: count exactly
                total = frame.longest(mine)
            if total <= budget:
                reads[frame.i], tokens[frame.i] = mine, [total] * len(mine)
                continue
        pending.append((frame, total))
    kept = [r for mine in reads if mine for r in mine]
    meter.prompts(kept, [n for ns in tokens if ns for n in ns],
                  sum(budget * len(frame.bare) for frame, _ in pending))
    selections = []
    for (frame, _), (mine, selection) in zip(pending, _fit_questions(pending, budget, whole,
                                                                      meter)):
        reads[frame.i] = mine
        selections.append(selection)
    return [r for mine in reads for r in mine], selections


class _Free:
    """No budget to tell (a generation's or a thought's prompt, fitted on its own)."""

    def prompts(self, reads, tokens, more: int = 0) -> None:
        pass

    def fitting(self, work: int) -> None:
        pass


FREE = _Free()


class Whole:
    """The request's state, measured once for every question: its rendering and bytes as the
    prompts show it (from a frame: every frame of a request shares them); its tokens (counted
    as one text); and, once a question must be cut, its parts, their tokens, a BM25 index and
    the lowest cost per block of parts (what a scan may skip)."""

    def __init__(self, state, frame):
        self.state, self.count, self.token_floor = state, frame.count, frame.profile.token_floor
        self.compact = frame.opts.compact_json
        self.text, self.shown = frame.state_text, frame.shown_state
        self.bytes = len(self.shown.encode())
        if self.bytes > MAX_STATE_BYTES:
            raise state_too_large(self.bytes)
        self._tokens = self._parts = self._alternate = self._least = None
        self.chosen: dict = {}  # (ranking key, room) -> the parts kept: questions alike share

    @property
    def least(self) -> int:
        """The fewest tokens the state can be, from its bytes (0 without the tokenizer's
        floor: tokenizer_contract.py)."""
        if self._least is None:
            self._least = self.token_floor.tokens(self.shown) if self.token_floor else 0
        return self._least

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
            self.lows = [min(costs[b:b + BLOCK]) + 3 for b in range(0, len(costs), BLOCK)]
            self.floor = min(self.lows, default=0)
        return self._parts

    def alternate(self) -> list[int]:
        """Head and tail alternately: the same for every question."""
        if self._alternate is None:
            head, tail, out = 0, len(self._parts[0]) - 1, []
            while head <= tail:
                out.append(head)
                if tail != head:
                    out.append(tail)
                head, tail = head + 1, tail - 1
            self._alternate = out
        return self._alternate


def _once(count):
    """count, with each distinct text sent to the tokenizer once per request."""
    known: dict[str, int] = {}

    def counted(texts: list[str]) -> list[int]:
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            known.update(zip(missing, count(missing)))
        return [known[t] for t in texts]
    return counted


class _Cut:
    """A question being cut: its frame (shortened when it did not fit even with no state),
    its ranking and the room its state has this round."""

    def __init__(self, frame, total: int | None, budget: int, whole: Whole, meter):
        total = frame.cost(whole.tokens) if total is None else total
        self.total, self.method = total, frame.opts.state_selection
        if frame.longest(frame.bare) > budget:  # even with no state: shorten instructions,
            q = shorten(frame.q, lambda cand: frame.with_question(cand).longest(  # then
                frame.with_question(cand).bare) <= budget, QUESTION_CHARS_PER_TOKEN * budget)
            self.method += "+question_shortened"  # descriptions
            frame = frame.with_question(q)
        self.frame = frame
        self.room = max(0, (budget - frame.longest(frame.bare)) // frame.repeat)
        index = whole.parts()[2]
        self.ranking = _ranking(whole, index, frame.q, frame.opts.state_selection, meter)


def _fit_questions(pending: list, budget: int, whole: Whole, meter) -> list:
    """(reads, Selection) per question too long with the whole state: its state parts kept
    in ranking order while the prompt fits; a question too long on its own shortened first.
    Every question's prompt of a round is counted in one go."""
    cuts = [_Cut(frame, total, budget, whole, meter) for frame, total in pending]
    done, active = {}, list(range(len(cuts)))
    for _ in range(MAX_ROUNDS):
        if not active:
            break
        parts = whole.parts()[0]
        tried = {k: cuts[k].frame.render(render(whole.state, parts, _choose(
            whole, cuts[k].ranking, cuts[k].room), whole.compact), cuts[k].total)
            for k in active}
        whole.count([r.prompt for mine in tried.values() for r in mine])
        again = []
        for k in active:
            c, n = cuts[k], cuts[k].frame.longest(tried[k])
            if n <= budget:
                done[k] = tried[k], Selection(c.frame.i, n, c.total, c.method)
            else:  # what the estimate missed, and a little
                c.room -= max(n - budget, 1) // c.frame.repeat + 1
                again.append(k)
        active = again
    for k in active:
        c = cuts[k]
        reads = c.frame.render(GAP, c.total)
        done[k] = reads, Selection(c.frame.i, c.frame.longest(reads), c.total, c.method)
    return [done[k] for k in range(len(cuts))]


# -- choosing ----------------------------------------------------------------------------
BLOCK = 64  # parts per block of a scan: a block whose cheapest part does not fit is skipped


class Ranking:
    """Part indices in the order they are taken: `first` (a list), then, when `skip` is not
    None, every part not in `skip` in original order, then `last`. `key` names the order."""

    def __init__(self, key, first, skip=None, last=()):
        self.key, self.first, self.skip, self.last = key, first, skip, last


def _ranking(whole: Whole, index, q: Question, method: str, meter) -> Ranking:
    """By BM25 score (ties and unmatched parts in original order), or, with head_tail or when
    nothing matches, head and tail alternately. The meter hears the work first: the query's
    postings and a scan of every part."""
    parts = whole.parts()[0]
    if method == BM25_METHOD and parts:
        query = terms(" ".join([q.instructions or ""] + [o.key + " " + (o.text or "")
                                                          for o in q.options]))
        meter.fitting(index.visits(query) + len(parts))
        scores = index.matched(query)
        if any(s > 0 for s in scores.values()):
            ranked = sorted((j for j, s in scores.items() if s), key=lambda j: (-scores[j], j))
            first = [j for j in ranked if scores[j] > 0]
            return Ranking(tuple(query), first, set(ranked), ranked[len(first):])
    else:
        meter.fitting(len(parts))
    return Ranking(HEAD_TAIL, whole.alternate())


def _choose(whole: Whole, ranking: Ranking, room: int) -> set[int]:
    """Take parts in the ranking's order (each with its headings) while they fit in `room`
    tokens; each part also pays for its separator and a possible gap line. Once no part could
    fit what is left the scan stops, and a block of parts none of which fits is skipped."""
    memo = (ranking.key, room)
    if memo in whole.chosen:
        return whole.chosen[memo]
    parts, costs, _ = whole.parts()
    kept, used = set(), 0

    def take(j: int) -> None:
        nonlocal used
        need = [h for h in parts[j].heads if h not in kept] + [j]
        cost = sum(costs[k] + 3 for k in need if k not in kept)
        if used + cost <= room:
            kept.update(need)
            used += cost

    def full() -> bool:
        return room - used < whole.floor

    for j in ranking.first:
        if full():
            break
        take(j)
    if ranking.skip is not None:
        for b in range(0, len(parts), BLOCK):
            if full():
                break
            if whole.lows[b // BLOCK] <= room - used:
                for j in range(b, min(b + BLOCK, len(parts))):
                    if j not in ranking.skip:
                        take(j)
        for j in ranking.last:
            if full():
                break
            take(j)
    whole.chosen[memo] = kept
    return kept
