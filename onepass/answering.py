"""The label reads of a Decision answered: fitted and read (reader.py), made probabilities
(readout.py), and the uncertain ones read a second time.

Owns: the re-read policy (questions of kinds that re-read, under calibration.reread_below,
read again with the request written twice, blended 2:1 first:second, when the request's work
budget has the calls to spare) and the calibration that applies (the request's, else the
profile's, as resolved into the Decision).
Never: decides which questions are read (parts.py) or who thinks (think.py).
In: the reader, a Decision of label-read questions. Out: its Outcome.
"""
from __future__ import annotations

from dataclasses import replace

from . import kinds, readout, work
from .decision import Decision, Outcome
from .errors import InvalidRequest
from .profile import MAX_REPEAT


def answer(reader, decision: Decision, fixed=frozenset(), budget=None) -> Outcome:
    """Fit and read every question, turn the reads into probabilities; then read uncertain
    questions of kinds that re-read (save those in `fixed`, and choices read as option sets,
    whose options a second copy would list) a second time with the request written twice,
    blended 2:1 (first:second), when the request's budget has the calls to spare (the reads
    are in its plan; None: nothing spare)."""
    calibration, opts = decision.calibration, decision.layout  # resolved: pipeline.resolve
    reads, selections, results = reader.read(decision)
    probs = readout.probabilities(decision, reads, results,  # step: readout
                                  calibration, opts.shrink)
    unsure = [i for i, (q, p) in enumerate(zip(decision.questions, probs))
              if kinds.get(q.kind).rereads and i not in fixed
              and not kinds.get(q.kind).parallel_lines(q, opts)  # a set is read once
              and max(p) < calibration.reread_below]
    rereads = 0
    again = replace(decision, questions=tuple(decision.questions[i] for i in unsure),
                    layout=replace(opts, repeat=min(MAX_REPEAT, 2 * opts.repeat)))
    if unsure and budget and budget.take_spare(work.read_calls(
            again.questions, reader.labels, again.layout)):
        try:
            more_reads, _, more = reader.read(again)  # step: reread
        except InvalidRequest:  # it cannot fit, or more reads than allowed: the first stands
            return readout.outcome(decision, probs, results, 0, calibration.reread_below,
                                   reads, selections)
        second = readout.probabilities(again, more_reads, more, calibration, opts.shrink)
        for i, p in zip(unsure, second):
            probs[i] = readout.blend(probs[i], p, readout.REREAD_FIRST_WEIGHT)
        reads, results, rereads = reads + more_reads, results + more, len(unsure)
    return readout.outcome(decision, probs, results, rereads, calibration.reread_below,
                           reads, selections)
