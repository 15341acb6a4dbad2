"""Re-read: uncertain questions read a second time, and the Outcome of the label reads.

Owns: the re-read policy (questions of kinds that re-read, under calibration.reread_below, read
again with the request written twice, blended 2:1 first:second, when the request's work budget
has the calls to spare; never a read that is part of another answer, nor a choice read as an
option set, whose options a second copy would list) and the reads' Outcome (readout.outcome).
Never: decides which questions are read (fit.py) or who thinks (think.py).
In: the record after readout (or a Page of label reads, for the re-read after thoughts).
Out: the record with the label reads' Outcome.
"""
from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from .. import kinds, work
from ..decision_model import REREAD_FIRST_WEIGHT, Outcome, Page
from ..errors import InvalidRequest
from ..profile import MAX_REPEAT
from . import readout
from .record import Record


class Reading(NamedTuple):
    """Label reads made probabilities: the Page they read, the fitted Reads, the states cut to
    fit, their results and each question's probabilities."""
    page: Page
    reads: list
    selections: tuple
    results: list
    probs: list


def reread(r: Record) -> Record:
    """The reread step: the record's outcome, after the uncertain questions' second reads."""
    if not r.reads.questions:
        return replace(r, outcome=readout.outcome(r.reads, [], []))
    first = Reading(r.reads, r.fitted, r.selections, r.results, list(r.probs))
    return replace(r, outcome=again(r.serving.calls, first, r.decision.calibration, r.fixed,
                                    r.budget))


def read_page(calls, page: Page, calibration, fixed=frozenset(), budget=None) -> Outcome:
    """A Page of label reads fitted, read, made probabilities and re-read as the request's
    own are, under `budget` (the re-read after thoughts uses it, every question fixed)."""
    reads, selections, results = calls.read(page)
    probs = readout.probabilities(page, reads, results, calibration, page.layout.shrink)
    return again(calls, Reading(page, reads, selections, results, probs), calibration, fixed,
                 budget)


def again(calls, first: Reading, calibration, fixed, budget=None) -> Outcome:
    """Read uncertain questions of kinds that re-read (save those in `fixed`, and choices read
    as option sets) a second time with the request written twice, blended 2:1 (first:second),
    when the request's budget has the calls to spare (the reads are in its plan; None: nothing
    spare); then the Outcome."""
    page, probs = first.page, list(first.probs)
    opts = page.layout  # resolved: resolve.py
    reads, results = list(first.reads), list(first.results)
    unsure = [i for i, (q, p) in enumerate(zip(page.questions, probs))
              if kinds.get(q.kind).rereads and i not in fixed
              and not kinds.get(q.kind).parallel_lines(q, opts)  # a set is read once
              and max(p) < calibration.reread_below]
    rereads = 0
    second_copy = replace(page, questions=tuple(page.questions[i] for i in unsure),
                          layout=replace(opts, repeat=min(MAX_REPEAT, 2 * opts.repeat)))
    if unsure and budget and budget.take_spare(work.read_calls(
            second_copy.questions, calls.labels, second_copy.layout)):
        try:
            more_reads, _, more = calls.read(second_copy)
        except InvalidRequest:  # it cannot fit, or more reads than allowed: the first stands
            return readout.outcome(page, probs, results, 0, calibration.reread_below,
                                   reads, first.selections)
        second = readout.probabilities(second_copy, more_reads, more, calibration, opts.shrink)
        for i, p in zip(unsure, second):
            probs[i] = readout.blend(probs[i], p, REREAD_FIRST_WEIGHT)
        reads, results, rereads = reads + more_reads, results + more, len(unsure)
    return readout.outcome(page, probs, results, rereads, calibration.reread_below,
                           reads, first.selections)
