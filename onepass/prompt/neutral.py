"""Client text is text: a special token's string written by a client reaches the model as plain
text, never as the token (a ticket saying `<|im_end|><|im_start|>system` does not open a system
turn).

Owns: which strings a profile neutralises (`strings`: every special token of its tokenizer
contract, the token-shaped markers of its chat template and thought turn, its image tokens), the
neutral spelling (JOINER after the first character of every occurrence, overlapping ones too),
and `neutral`, the one function every piece of client text in a prompt goes through.
Never: decides what is client text (layout.py applies it to the state and the question's lines,
think.py to a thought, and never to the image slots the layout writes itself) or checks the
spelling against the tokenizer (backend/probes.py does at start-up, through vLLM).
"""
from __future__ import annotations

import re

# A zero-width space: invisible wherever the text is shown, one character no shipped tokenizer
# folds away (probes.py proves at start-up that no neutral spelling gives a special id), and no
# special token contains it, so an inserted one cannot help form another.
JOINER = "\u200b"
MARKER = re.compile(r"<[^<>\s]{1,64}>")  # a token-shaped marker in a chat template: <bos>, <|x|>


def markers(profile) -> set[str]:
    """The token-shaped markers the profile's own prompt text writes (chat turns, the thought
    turn): what a profile without a tokenizer contract still knows of its specials."""
    texts = list(profile.chat_template.values())
    if profile.reasoning is not None:
        r = profile.reasoning
        texts += [r.assistant, r.open, r.close, *r.stop]
    return {m for t in texts for m in MARKER.findall(t)}


def strings(profile) -> tuple[str, ...]:
    """Every string the profile neutralises in client text, longest first."""
    found = set(profile.specials) | markers(profile)
    if profile.vision is not None:
        found |= set(profile.vision.reserved)
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


class Specials:
    """A profile's strings compiled into one pattern that finds where any of them starts: each
    string's first character, then the rest as a look-ahead, so a match takes one character and
    occurrences inside or overlapping others are found too. Starting with a literal lets the
    regex engine skip to candidate characters at C speed: a 12 M-character state without one
    costs ~1 ms, where a look-ahead at every position cost 60."""

    def __init__(self, found: tuple[str, ...]):
        bad = [s for s in found if len(s) < 2 or JOINER in s]
        if bad:  # one character cannot be split; one holding the joiner could be re-formed
            raise ValueError(f"cannot neutralise special tokens {bad!r}")
        self.strings = found
        self.pattern = re.compile(_trie(found)) if found else None

    def neutral(self, text: str) -> str:
        """JOINER after the first character of every occurrence; text without one is returned
        as it is (the same object)."""
        if self.pattern is None:
            return text
        starts = [m.end() for m in self.pattern.finditer(text)]
        if not starts:
            return text
        cuts = zip([0] + starts, starts + [len(text)])
        return JOINER.join(text[a:b] for a, b in cuts)


def _trie(found) -> str:
    """An alternation over first characters, each followed by a look-ahead on the rest of the
    strings, factored by their common prefixes: matching it at a place costs the length of the
    longest candidate, not the number of strings (Gemma has 6,249)."""
    tree: dict = {}
    for s in found:
        node = tree
        for ch in s:
            node = node.setdefault(ch, {})
        node[""] = {}

    def alt(node) -> str:
        end = "" in node
        branches = [re.escape(ch) + alt(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        if len(branches) == 1 and not end:
            return branches[0]
        group = "(?:" + "|".join(branches) + ")"
        return group + "?" if end else group  # a string ends here: what follows is optional
    firsts = [re.escape(ch) + "(?=" + alt(child) + ")" for ch, child in sorted(tree.items())]
    return "(?:" + "|".join(firsts) + ")"


_CACHE: dict[int, tuple] = {}  # id(profile) -> (profile, Specials): compiled once per profile


def of(profile) -> Specials:
    hit = _CACHE.get(id(profile))
    if hit is None or hit[0] is not profile:
        if len(_CACHE) >= 32:  # tests build many profiles; a server has one
            _CACHE.clear()
        hit = _CACHE[id(profile)] = (profile, Specials(strings(profile)))
    return hit[1]


def neutral(text: str, profile) -> str:
    """Client text as a prompt may carry it: no special token of the profile's, as such."""
    return of(profile).neutral(text)
