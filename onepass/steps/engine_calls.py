"""The engine calls the steps make: a Page's questions fitted into the context, then read, or
a generation sent; what the steps need of the engine and the start-up facts, and nothing more.

Owns: the budget a prompt is fitted to (the served context less the tokens that follow it;
for two-way reads, the plugin's one-step budget once learnt), and what follows the plugin's
refusal of a read for its one-step budget (options read as a set become listings; a two-way
read is fitted to the budget the refusal taught the engine).
Never: turns reads into probabilities (readout.py), decides what to read (fit.py) or sees more
of the request than its prompts show (a decision_model.Page).
In: a Page (or a Read and a generation's settings). Out: Reads and their results (or a future
of a generation).
"""
from __future__ import annotations

from dataclasses import replace

from ..backend import decoding
from ..decision_model import TWO_WAY, Page
from ..errors import OverBudget
from ..prompt import fitting


class EngineCalls:
    """The engine as the steps use it: every prompt fitted to the context before it is sent."""

    def __init__(self, profile, facts, engine):
        self.profile, self.facts, self.engine = profile, facts, engine
        self.labels = facts.labels

    def fit(self, page: Page, reserve: int = 1, budget: int | None = None, meter=None):
        """(reads, selections): every question fitted within the context less `reserve`
        tokens (what follows the prompt: 1 for a read, a generation's cap), and `budget`;
        `meter` (a request's work.Budget) is told the work first, /tokenize calls included."""
        most = self.facts.max_len - reserve
        sep, calls = getattr(self.facts, "separator", None), meter and meter.tokenized

        def count(texts):
            return self.engine.count(texts, sep, calls)
        return fitting.fit(page, self.profile, self.labels, count,
                           min(most, budget) if budget else most, meter)

    def two_way_budget(self, mode: str) -> int | None:
        """The plugin's one-step budget reads in `mode` are fitted to: two-way, once learnt."""
        return self.engine.two_way_budget if mode == TWO_WAY else None

    def read(self, page: Page):
        """(reads, selections, results): every question fitted, then read; after a refusal for
        the plugin's one-step budget, fitted again and read (after_refusal)."""
        for _ in range(3):
            known = self.two_way_budget(page.attention_mode)
            reads, selections = self.fit(page, 1, known)
            try:
                return reads, selections, self.engine.read_all(reads)
            except OverBudget as refused:
                page = self.after_refusal(page, reads, known, refused)
        raise AssertionError("unreachable: the last round re-raises")

    def after_refusal(self, page: Page, reads, known, refused: OverBudget) -> Page:
        """What to read after the plugin refused `reads` for its one-step budget: options read
        as a set that do not fit in one step as listings (the response names them:
        readout.outcome finds reads without spans); a two-way read, once that refusal taught
        the engine a budget to fit to; otherwise the refusal stands."""
        if any(r.spans for r in reads):
            return replace(page, layout=replace(page.layout, option_sets=False))
        if page.attention_mode != TWO_WAY or known or not self.engine.two_way_budget:
            raise refused
        return page

    def generate(self, read, structured, max_tokens: int, stop=(), deadline=None):
        """A future of the generation's decision.Generated."""
        return self.engine.submit(decoding.generate, self.engine, read, structured,
                                  max_tokens, stop, deadline)
