"""The reader the steps share: fit a Decision's questions into the context, read them, and send
generations; what the steps need of the engine and the start-up facts, and nothing more.

Owns: the budget a prompt is fitted to (the served context less the tokens that follow it;
for two-way reads, the plugin's one-step budget once learnt), and what follows the plugin's
refusal of a read for its one-step budget (options read as a set become listings; a two-way
read is fitted to the budget the refusal taught the engine).
Never: turns reads into probabilities (readout.py) or decides what to read (fit.py).
In: a Decision (or a Read and a generation's settings). Out: Reads and their results (or a
future of a generation).
"""
from __future__ import annotations

from dataclasses import replace

from .backend import generation
from .decision import TWO_WAY, Decision
from .errors import OverBudget
from .prompt import fitting


class Reader:
    def __init__(self, profile, facts, engine):
        self.profile, self.facts, self.engine = profile, facts, engine
        self.labels = facts.labels

    def fit(self, decision: Decision, reserve: int = 1, budget: int | None = None):
        """(reads, selections): every question fitted within the context less `reserve`
        tokens (what follows the prompt: 1 for a read, a generation's cap), and `budget`."""
        most = self.facts.max_len - reserve
        return fitting.fit(decision, self.profile, self.labels, self.engine.count,
                           min(most, budget) if budget else most)

    def two_way_budget(self, decision: Decision) -> int | None:
        """The plugin's one-step budget a two-way Decision is fitted to, once learnt."""
        return self.engine.two_way_budget if decision.attention_mode == TWO_WAY else None

    def read(self, decision: Decision):
        """(reads, selections, results): every question fitted, then read; after a refusal for
        the plugin's one-step budget, fitted again and read (after_refusal)."""
        for _ in range(3):
            known = self.two_way_budget(decision)
            reads, selections = self.fit(decision, 1, known)
            try:
                return reads, selections, self.engine.read_all(reads)
            except OverBudget as refused:
                decision = self.after_refusal(decision, reads, known, refused)
        raise AssertionError("unreachable: the last round re-raises")

    def after_refusal(self, decision: Decision, reads, known, refused: OverBudget) -> Decision:
        """What to read after the plugin refused `reads` for its one-step budget: options read
        as a set that do not fit in one step as listings (the response names them:
        readout.outcome finds reads without spans); a two-way read, once that refusal taught
        the engine a budget to fit to; otherwise the refusal stands."""
        if any(r.spans for r in reads):
            return replace(decision, layout=replace(decision.layout, option_sets=False))
        if decision.attention_mode != TWO_WAY or known or not self.engine.two_way_budget:
            raise refused
        return decision

    def generate(self, read, structured, max_tokens: int, stop=(), deadline=None):
        """A future of the generation's decision.Generated."""
        return self.engine.submit(generation.generate, self.engine, read, structured,
                                  max_tokens, stop, deadline)
