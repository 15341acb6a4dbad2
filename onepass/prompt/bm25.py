"""Okapi BM25: rank token lists against a query, with the numbers of rank-bm25's BM25Okapi.

Owns: the tokeniser (casefolded unicode words), per-term idf with rank-bm25's epsilon floor for
negative idf, one score per document.
Never: imports anything outside the standard library, or raises on an empty corpus or document.
In: a corpus of token lists, then query token lists. Out: one float per document, in corpus order
(`scores`), or the documents a query matches with theirs (`matched`: work by the query's
postings, not the corpus).
"""
from __future__ import annotations

import math
import re
from collections import Counter

_WORD = re.compile(r"\w+")  # str patterns are unicode-aware: Hangul, kana/kanji and digits count


def terms(text: str) -> list[str]:
    """The word tokens of `text`, casefolded."""
    return _WORD.findall(text.casefold())


class BM25:
    """BM25Okapi (rank-bm25 0.2.2) with the same parameters and, within rounding, the same scores.

    idf(t) = ln(N - n_t + 0.5) - ln(n_t + 0.5). average_idf is the mean of that raw idf over every
    distinct corpus term, negative ones included; then each term whose idf is strictly below 0
    (in more than half of the documents) gets epsilon * average_idf instead.
    """

    def __init__(self, corpus: list[list[str]], k1: float = 1.5, b: float = 0.75,
                 epsilon: float = 0.25):
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.freqs = [Counter(doc) for doc in corpus]
        self.lengths = [len(doc) for doc in corpus]
        n = len(self.lengths)
        # rank-bm25 divides by zero on an empty corpus; 0 here, and it is never used as a divisor
        self.avgdl = sum(self.lengths) / n if n else 0.0
        df: Counter = Counter()
        for freq in self.freqs:
            df.update(freq.keys())
        # A difference of logs, as rank-bm25 has it (log of the ratio may differ in the last bit).
        raw = {t: math.log(n - d + 0.5) - math.log(d + 0.5) for t, d in df.items()}
        # The mean is taken before any replacement; no terms at all (rank-bm25 raises) -> 0.
        self.average_idf = math.fsum(raw.values()) / len(raw) if raw else 0.0
        floor = epsilon * self.average_idf
        # Only idf < 0 is replaced: a term in exactly half of the documents keeps idf 0.
        self.idf = {t: floor if v < 0 else v for t, v in raw.items()}
        self.postings: dict[str, list[int]] = {}  # term -> the documents holding it, in order
        for j, freq in enumerate(self.freqs):
            for t in freq:
                self.postings.setdefault(t, []).append(j)

    def norm(self, length: int) -> float:
        # avgdl is 0 only when every document is empty: no term can match, the ratio is moot.
        ratio = length / self.avgdl if self.avgdl else 0.0
        return self.k1 * (1 - self.b + self.b * ratio)

    def visits(self, query: list[str]) -> int:
        """How many (term, document) pairs `matched` looks at for this query."""
        return sum(len(self.postings.get(t, ())) for t in query)

    def matched(self, query: list[str]) -> dict[int, float]:
        """{document: score} of the documents holding a query term (the others score 0), each
        score as `scores` gives it."""
        k1, parts = self.k1, {}
        for t in query:
            for j in self.postings.get(t, ()):
                tf = self.freqs[j][t]
                parts.setdefault(j, []).append(
                    self.idf[t] * (tf * (k1 + 1) / (tf + self.norm(self.lengths[j]))))
        return {j: math.fsum(p) for j, p in parts.items()}

    def scores(self, query: list[str]) -> list[float]:
        """One score per document; a repeated query term counts each time it appears."""
        k1 = self.k1
        out = []
        for freq, length in zip(self.freqs, self.lengths):
            norm = self.norm(length)
            parts = []
            for t in query:
                tf = freq.get(t, 0)
                # An absent term (or one not in the corpus) adds 0. Skipping it, not computing
                # 0 / (0 + norm), avoids rank-bm25's NaN when norm is 0 (k1 = 0, or b = 1 on an
                # empty document); every other score is unchanged.
                if tf:
                    parts.append(self.idf[t] * (tf * (k1 + 1) / (tf + norm)))
            out.append(math.fsum(parts))
        return out
