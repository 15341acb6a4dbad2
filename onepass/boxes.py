"""Box questions on the decision path: each box question is split into label reads that join the
request's other reads, and (generate, hybrid) one constrained generation; then folded back.

Owns: the split (the box question's place holds its `present` noul, so question indices and
fitted-state reports stay the request's; edges mode appends four edge questions after the
request's own), the generations (fitted like any read, within the context less their token
cap; run at once on the engine's threads, after the reads), and folding every part into one box Answer
(present temperature, convention conversion, confidence map, hybrid choice).
Never: parses or renders an API (the box kind does), or builds prompts itself (prompt/ does).
In: a Decision with box questions. Out: the reads' Decision, then the request's Outcome.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .backend import generation
from .decision import BOX, CAUSAL, Decision, Outcome
from .kinds import box as box_kind
from .kinds import box_geometry
from .prompt import fitting

GENERATES, EDGES = ("generate", "hybrid"), ("edges", "hybrid")


@dataclass(frozen=True)
class Split:
    reads: Decision  # what the label reads answer: the request's questions, presents, edges
    boxes: tuple  # (question index, its edge questions' first index or None) per box question
    asked: int  # the request's own question count (edge questions follow it)


def split(decision: Decision, levels: int) -> Split:
    """The reads' Decision: each box question replaced in place by its `present` noul; with
    edges, its four edge questions (score questions over `levels` bands) at the end."""
    questions, boxes = list(decision.questions), []
    for i, q in enumerate(decision.questions):
        if q.kind != BOX:
            continue
        questions[i] = box_kind.present_question(q)
        boxes.append((i, len(questions) if q.mode in EDGES else None))
        if q.mode in EDGES:
            questions += box_kind.edge_questions(q, levels)
    return Split(replace(decision, questions=tuple(questions)), tuple(boxes),
                 len(decision.questions))


def internal(s: Split) -> set[int]:
    """Questions of the reads that are parts of a box (never read again on their own)."""
    return {i for i, _ in s.boxes} | set(range(s.asked, len(s.reads.questions)))


def start_generations(decision: Decision, s: Split, pipe) -> dict:
    """{question index: future of (text, tokens, cut, prompt tokens)}: each generating box
    question laid out with the profile's convention, fitted into the context less the token
    cap, and sent at once on the engine's threads. Causal always: a generation decodes."""
    conv = box_geometry.convention(pipe.profile.vision.box["convention"])
    mine = [i for i, _ in s.boxes if decision.questions[i].mode in GENERATES]
    if not mine:
        return {}
    asked = replace(decision, attention_mode=CAUSAL, questions=tuple(
        replace(decision.questions[i], convention=conv) for i in mine))
    cap = pipe.settings.box_max_tokens
    reads, _ = fitting.fit(asked, pipe.profile, pipe.labels, pipe.engine.count,
                           pipe.max_len - cap)
    schema = box_kind.schema(conv.most(_size(decision)))
    engine = pipe.engine
    return {i: engine.submit(generation.generate, engine, engine._messages(read), schema, cap)
            for i, read in zip(mine, reads)}


def fold(decision: Decision, s: Split, outcome: Outcome, generated: dict, box: dict) -> Outcome:
    """The request's Outcome: each box question's parts made one box answer; the reads'
    counts kept, the generations' prompt and output tokens added."""
    answers = list(outcome.answers[:s.asked])
    conv = box_geometry.convention(box["convention"])
    size = _size(decision)
    extra_in = extra_out = 0
    for i, first_edge in s.boxes:
        q = decision.questions[i]
        present = box_kind.tempered(outcome.answers[i].probabilities[0],
                                    box["present_temperature"])
        gen = feature = raw = None
        if i in generated:
            text, tokens, cut, prompt_tokens = generated[i]
            extra_in, extra_out = extra_in + prompt_tokens, extra_out + len(tokens)
            raw, feature = (None, None) if cut else box_kind.read_generation(text, tokens)
            gen = box_geometry.to_fractions(raw, conv, size, box_geometry.resized(conv, size))
        edges = edge_feature = None
        if first_edge is not None:
            edges, edge_feature = box_kind.edges_box(
                [a.probabilities for a in outcome.answers[first_edge:first_edge + 4]])
        used = q.mode if q.mode != "hybrid" else box_kind.hybrid(gen, edges)
        fractions, feature, raw = ((gen, feature, raw) if used == "generate"
                                   else (edges, edge_feature, None))
        answers[i] = box_kind.answer(fractions, box_kind.confidence(feature, box["confidence"]),
                                     present, used, feature, raw)
    selections = tuple(sel for sel in outcome.selections if sel.question < s.asked)
    return replace(outcome, answers=tuple(answers), selections=selections,
                   num_input_tokens=outcome.num_input_tokens + extra_in,
                   output_tokens=outcome.output_tokens + extra_out)


def _size(decision: Decision) -> tuple[int, int]:
    """The image a box is drawn on (the parser admits box questions with exactly one)."""
    image = decision.images[0]
    return image.width, image.height
