"""The start-up proof that vLLM reads a question's options as a set (layout option_sets): the
engine plugin's set read, checked through the engine itself.

Owns: the probe (a question of four options, of the registry's first kind that reads its
options as a set, laid out as a request would be, read with its spans
in the canonical order and in the reverse order, and its tokens read without the flag) and its
verdict: live when both set reads give byte-identical label log-probs and differ from the
unflagged read; otherwise off (stock vLLM ignores the flag; the plugin refuses set reads on
vLLM's V2 model runner; a model whose attention the plugin cannot recompute reads them
inexactly), and only a profile that needs them does not start (capabilities.off).
Never: decides a request's layout (pipeline.py refuses option_sets when the probe did not pass).
"""
from __future__ import annotations

from dataclasses import replace

from .. import kinds
from ..decision_model import Decision, Option, Question
from ..prompt.layout import layout
from . import capabilities

CAPABILITY = "option sets (layout option_sets)"
STATE = "Ticket 4471: the customer was charged twice this month and asks for one charge back."
ASKED = "Which team should handle this ticket?"
OPTIONS = (Option("billing", "Payments, charges and refunds"), Option("tech", "Bugs and outages"),
           Option("sales", "Pricing and upgrades"), Option("legal", None))
MIN_SHIFT = 1e-3  # nats: a set read moves the labels by far more than reruns (same bits)


def probe_read(profile, labels):
    """The probe laid out with option_sets, exactly as a request would be: a question of the
    first kind that reads options as a set, with as many of the four options as that kind has
    labels (two at the least)."""
    kind = kinds.set_readers()[0]
    sets = replace(profile.layout, option_sets=True, orders=1, repeat=1)
    question = Question(kind.name, ASKED, OPTIONS[:max(2, len(getattr(labels, kind.name)))])
    return layout(Decision("probe", STATE, (question,), layout=sets), profile, labels)[0]


def reversed_spans(read):
    """The same read with its spans' texts in the reverse order (each label stays in its own
    line, so the label-to-option binding travels with the text)."""
    first, end = read.spans[0][0], read.spans[-1][1]
    texts = [read.prompt[a:b] for a, b in read.spans][::-1]
    spans, at = [], first
    for text in texts:
        spans.append((at, at + len(text)))
        at += len(text)
    return replace(read, prompt=read.prompt[:first] + "".join(texts) + read.prompt[end:],
                   spans=tuple(spans))


def sets_live(engine, profile, labels) -> tuple[bool, str]:
    """(live, problem): live when vLLM reads option sets, order-exact; a problem (the guard
    refuses to start) only when the profile needs option_sets and they are not read so."""
    if not kinds.set_readers():
        return False, capabilities.off(CAPABILITY, "no registered question kind reads its "
                                       "options as a set", profile.layout.option_sets)
    read = probe_read(profile, labels)
    try:
        canonical, backwards = engine.map(engine.read, [read, reversed_spans(read)])
        plain = engine.read_unset(read)
    except capabilities.REFUSED as e:
        return False, capabilities.off(CAPABILITY, f"vLLM refused the probe's set read: "
                                       f"{e.message}", profile.layout.option_sets)
    moved = max(abs(a - b) for a, b in zip(canonical.label_logprobs, plain)) > MIN_SHIFT
    exact = canonical.label_logprobs == backwards.label_logprobs
    if moved and exact:
        return True, ""
    why = (f"the engine's set read depends on the options' order ({canonical.label_logprobs} "
           f"in one order, {backwards.label_logprobs} in the reverse): this model's attention "
           "is one the plugin cannot read as a set" if moved else
           "vLLM answers a set read exactly like a plain one: the onepass engine plugin is "
           "not loaded (see serve.sh and engine/)")
    return False, capabilities.off(CAPABILITY, why, profile.layout.option_sets)
