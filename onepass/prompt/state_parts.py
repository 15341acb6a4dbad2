"""A state as parts and back: what fitting chooses from when a state is too long for the context.

Owns: splitting a state into parts (paragraphs under their Markdown headings, long ones in
pieces; JSON leaves under their key paths) and rendering the kept parts in original order with a
gap line where parts were left out (JSON pruned to the kept leaves and their parents).
Never: counts tokens or chooses parts (fitting.py does).
In: a state (text or JSON). Out: Parts; a rendered text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..decision_model import as_text
from ..errors import PayloadTooLarge
from .layout import render_state

GAP = "..."  # stands where parts were left out
MAX_PART_CHARS = 1200  # longer paragraphs are cut into pieces, so one cannot fill the budget
HEADING = re.compile(r"^#{1,6}\s")
BLANK_LINES = re.compile(r"\n\s*\n")
MAX_PARTS = 20_000  # every question to cut ranks them all: a bound on a request's work


@dataclass(frozen=True)
class Part:
    text: str  # what BM25 reads and what a text state shows
    heads: tuple = ()  # indices of the heading parts above it (text)
    path: tuple = ()  # a JSON leaf's key path ('[i]' steps are ints)
    value: object = None  # a JSON leaf's value (a piece of it for a long string)


def split(state) -> list[Part]:
    """Text: paragraphs (blank-line separated), Markdown headings as their own parts heading what
    follows; JSON: one part per leaf, `path: value`. Long pieces are cut to MAX_PART_CHARS."""
    if isinstance(state, str):
        return _split_text(state)
    parts: list[Part] = []
    _leaves(state, (), parts)
    return parts


def _grown(parts: list) -> None:
    if len(parts) > MAX_PARTS:
        raise PayloadTooLarge(f"the state splits into more than {MAX_PARTS} parts (paragraphs or "
                              "JSON values); this server cuts states of at most that many to "
                              "fit its maximum context length")


def _blocks(text: str):
    """The blank-line separated blocks, one at a time (a state may hold millions)."""
    start = 0
    for gap in BLANK_LINES.finditer(text):
        yield text[start:gap.start()]
        start = gap.end()
    yield text[start:]


def _split_text(text: str) -> list[Part]:
    parts, stack = [], []  # stack: (level, part index) of the headings in force
    for block in _blocks(text):
        _grown(parts)
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
            _grown(parts)
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
        _grown(parts)


def _path_text(path) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out or "(value)"


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
