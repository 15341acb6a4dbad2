"""The reader the steps share: fit a Decision's questions into the context, read them, and send
generations; what the steps need of the engine and the start-up facts, and nothing more.

Owns: the budget a prompt is fitted to (the served context less the tokens that follow it;
for two-way reads, the plugin's one-step budget once learnt), and the one retry when the plugin
refuses a two-way read for that budget (its typed refusal teaches the engine the budget).
Never: turns reads into probabilities (readout.py, reads.py) or decides what to read (parts.py).
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

    def read(self, decision: Decision):
        """(reads, selections, results): every question fitted, then read. A two-way read the
        plugin refuses for its one-step budget is fitted to that budget and read again; options
        read as a set that do not fit in one step are read as listings (the response names
        them: readout.outcome finds reads without spans)."""
        for _ in range(3):
            known = self.engine.two_way_budget if decision.attention_mode == TWO_WAY else None
            reads, selections = self.fit(decision, 1, known)  # step: fit
            try:
                return reads, selections, self.engine.read_all(reads)  # step: reads
            except OverBudget:  # again only when this refusal taught a budget to fit to
                if any(r.spans for r in reads):
                    decision = replace(decision, layout=replace(decision.layout,
                                                                option_sets=False))
                elif decision.attention_mode != TWO_WAY or known or \
                        not self.engine.two_way_budget:
                    raise
        raise AssertionError("unreachable: the last round re-raises")

    def generate(self, read, structured, max_tokens: int, stop=(), deadline=None):
        """A future of (text, (token, log-prob) pairs, cut, prompt tokens)."""
        return self.engine.submit(generation.generate, self.engine, read, structured,
                                  max_tokens, stop, deadline)
