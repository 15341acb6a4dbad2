"""Long inputs: fit each question's prompt into the context by choosing what of the state it reads.

Owns: the length check (a prompt no longer in UTF-8 bytes than the budget fits, since a token
covers at least one byte; only longer ones are tokenized), splitting the state into parts
(paragraphs under their Markdown headings; JSON leaves under their key paths), choosing parts per
question by BM25 against the question and its options, or head and tail, in original order
until the prompt fits, and shortening a question that does not fit even with no state.
Never: changes options, their order or keys; cuts instructions while a state is left to cut.
In: a Decision, the profile, labels, a token counter and the budget. Out: Reads (each question's
own state) and a Selection per question that was cut.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .bm25 import BM25, terms
from .config import STATE_SELECTIONS
from .decision import Decision, Option, Question, Read, as_text
from .layout import question_reads, render_state

BM25_METHOD, HEAD_TAIL = STATE_SELECTIONS
GAP = "..."  # stands where parts were left out
MAX_PART_CHARS = 1200  # longer paragraphs are cut into pieces, so one cannot fill the budget
HEADING = re.compile(r"^#{1,6}\s")
MAX_ROUNDS = 8  # tokenizer boundaries make the parts' sum an estimate; re-check the real prompt


@dataclass(frozen=True)
class Part:
    text: str  # what BM25 reads and what a text state shows
    heads: tuple = ()  # indices of the heading parts above it (text)
    path: tuple = ()  # a JSON leaf's key path ('[i]' steps are ints)
    value: object = None  # a JSON leaf's value (a piece of it for a long string)


@dataclass(frozen=True)
class Selection:
    question: int
    kept_tokens: int  # the fitted prompt, the longest of the question's reads
    total_tokens: int  # the prompt with the whole state
    method: str  # bm25, head_tail, or either + "+question_shortened"


def fit(decision: Decision, profile, labels, count, budget: int) -> tuple[list[Read], list]:
    """Every question's reads, each within `budget` tokens; `count(texts)` -> token counts."""
    opts = decision.layout or profile.layout
    whole = render_state(decision.state, opts.compact_json)
    count, extra = _with_images(count, profile.vision if decision.images else None)
    reads, selections = [], []
    for i, q in enumerate(decision.questions):
        mine = question_reads(decision, profile, labels, i, q, whole)
        if max(len(r.prompt.encode()) + extra(r.prompt) for r in mine) > budget:
            total = max(count([r.prompt for r in mine]))
            if total > budget:
                mine, selection = _fit_question(decision, profile, labels, count, budget, i, q,
                                                total, opts)
                selections.append(selection)
        reads += mine
    return reads, selections


def _with_images(count, vision):
    """(count, extra): each image slot in a prompt costs the profile's tokens per image, not
    the one token its placeholder text counts as; the images themselves are never cut."""
    if vision is None:
        return count, lambda text: 0

    def extra(text: str) -> int:
        return (vision.tokens_per_image - 1) * text.count(vision.placeholder)
    return (lambda texts: [n + extra(t) for n, t in zip(count(texts), texts)]), extra


def _fit_question(decision, profile, labels, count, budget, i, q, total, opts):
    def prompts(question, state):
        return question_reads(decision, profile, labels, i, question, state, total)

    def longest(rs):
        return max(count([r.prompt for r in rs]))
    method = opts.state_selection
    overhead = longest(prompts(q, ""))
    if overhead > budget:  # even with no state: shorten instructions, then descriptions
        q = _shorten(q, lambda cand: longest(prompts(cand, "")) <= budget)
        method += "+question_shortened"
        overhead = longest(prompts(q, ""))
    room = max(0, (budget - overhead) // opts.repeat)
    parts = split(decision.state)
    costs = count([p.text for p in parts]) if parts else []
    order = _ranking(parts, q, opts.state_selection)
    for _ in range(MAX_ROUNDS):
        kept = _choose(parts, costs, order, room)
        reads = prompts(q, render(decision.state, parts, kept, opts.compact_json))
        n = longest(reads)
        if n <= budget:
            return reads, Selection(i, n, total, method)
        room -= max(n - budget, 1) // opts.repeat + 1  # what the estimate missed, and a little
    reads = prompts(q, GAP)
    return reads, Selection(i, longest(reads), total, method)


# -- parts -------------------------------------------------------------------------------
def split(state) -> list[Part]:
    """Text: paragraphs (blank-line separated), Markdown headings as their own parts heading what
    follows; JSON: one part per leaf, `path: value`. Long pieces are cut to MAX_PART_CHARS."""
    if isinstance(state, str):
        return _split_text(state)
    parts: list[Part] = []
    _leaves(state, (), parts)
    return parts


def _split_text(text: str) -> list[Part]:
    parts, stack = [], []  # stack: (level, part index) of the headings in force
    for block in re.split(r"\n\s*\n", text):
        if not block.strip():
            continue
        for line_block in _heading_blocks(block):
            if HEADING.match(line_block):
                level = len(line_block) - len(line_block.lstrip("#"))
                stack = [(lv, ix) for lv, ix in stack if lv < level]
                parts.append(Part(line_block, tuple(ix for _, ix in stack)))
                stack.append((level, len(parts) - 1))
                continue
            heads = tuple(ix for _, ix in stack)
            parts += [Part(piece, heads) for piece in _pieces(line_block)]
    return parts


def _heading_blocks(block: str) -> list[str]:
    """A heading line is its own part even without a blank line after it."""
    out, current = [], []
    for line in block.split("\n"):
        if HEADING.match(line):
            if current:
                out.append("\n".join(current))
            out.append(line)
            current = []
        else:
            current.append(line)
    if current:
        out.append("\n".join(current))
    return out


def _pieces(text: str) -> list[str]:
    """Cut at the last whitespace before MAX_PART_CHARS (or hard, for text without any)."""
    out = []
    while len(text) > MAX_PART_CHARS:
        cut = text.rfind(" ", MAX_PART_CHARS // 2, MAX_PART_CHARS)
        cut = cut if cut > 0 else MAX_PART_CHARS
        out.append(text[:cut])
        text = text[cut:].lstrip(" ")
    return out + [text] if text else out


def _leaves(value, path, parts) -> None:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            _leaves(child, path + (key,), parts)
    elif isinstance(value, list) and value:
        for j, child in enumerate(value):
            _leaves(child, path + (j,), parts)
    else:
        shown = _path_text(path)
        if isinstance(value, str) and len(value) > MAX_PART_CHARS:
            parts += [Part(f"{shown}: {piece}", (), path, piece) for piece in _pieces(value)]
        else:
            parts.append(Part(f"{shown}: {as_text(value)}", (), path, value))


def _path_text(path) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out or "(value)"


# -- choosing ----------------------------------------------------------------------------
def _ranking(parts, q: Question, method: str) -> list[int]:
    """Part indices in the order they are taken: by BM25 score (ties and unmatched parts in
    original order), or, with head_tail or when nothing matches, head and tail alternately."""
    if method == BM25_METHOD and parts:
        query = terms(" ".join([q.instructions or ""] + [o.key + " " + (o.text or "")
                                                          for o in q.options]))
        scores = BM25([terms(p.text) for p in parts]).scores(query)
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


def render(state, parts, kept: set[int], compact: bool) -> str:
    """The kept parts in original order; a GAP line where parts were left out."""
    if not kept:
        return GAP
    if isinstance(state, str):
        lines, last = [], -1
        for j in sorted(kept):
            if j != last + 1:
                lines.append(GAP)
            lines.append(parts[j].text)
            last = j
        if last != len(parts) - 1:
            lines.append(GAP)
        return "\n\n".join(lines)
    pruned = _prune(state, [parts[j] for j in sorted(kept)])
    text = render_state(pruned, compact)
    return text if len(kept) == len(parts) else text + "\n" + GAP


def _prune(state, leaves: list[Part]):
    """The JSON with only the kept leaves (and so their parents), in original order; a long
    string kept in pieces shows them joined by a gap line."""
    pieces: dict = {}
    for leaf in leaves:
        pieces.setdefault(leaf.path, []).append(leaf.value)
    prefixes = {path[:k] for path in pieces for k in range(len(path) + 1)}

    def walk(node, path):
        if path in pieces:
            whole = pieces[path]
            return node if not isinstance(node, str) or whole == [node] else \
                f" {GAP} ".join(whole)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        kept = [(k, walk(v, path + (k,))) for k, v in items if path + (k,) in prefixes]
        return dict(kept) if isinstance(node, dict) else [v for _, v in kept]
    return walk(state, ())


# -- a question too long on its own --------------------------------------------------------
def _shorten(q: Question, fits) -> Question:
    """Halve the instructions, then every option description, until `fits`; option keys, their
    order and the answer labels stay. Returns the shortest tried if nothing fits."""
    text = q.instructions or ""
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
