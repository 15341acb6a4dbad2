"""Questions answered by more than label reads: box and number questions on the decision path.

Owns: the split (the label reads' Decision: the request's read questions in order, each box
question's `present` noul in its place, a box's four edge questions at the end; number
questions need no read), the generations (box and number answers, fitted like any read within
the context less their token cap, all sent at once on the engine's threads after the reads and
thoughts), and folding everything back into the request's Outcome, in the request's order.
Never: parses or renders an API (kinds/ do), builds prompts itself (prompt/ does), or decides
who thinks (think.py).
In: a Decision. Out: the reads' Decision, then the request's Outcome.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .backend import generation
from .decision import BOX, CAUSAL, NUMBER, Decision, Outcome
from .kinds import box as box_kind
from .kinds import box_geometry
from .kinds import number as number_kind
from .prompt import fitting

GENERATES, EDGES = ("generate", "hybrid"), ("edges", "hybrid")


@dataclass(frozen=True)
class Split:
    reads: Decision  # what the label reads answer: read questions, presents, then edges
    position: tuple  # per request question, its index in reads (None: a number, no read)
    boxes: tuple  # (request index, its edge questions' first index in reads or None)
    numbers: tuple  # request indices of number questions

    @property
    def own(self) -> int:
        """How many of the reads are the request's own questions (edges follow them)."""
        return sum(p is not None for p in self.position)


def split(decision: Decision, levels: int) -> Split:
    """The reads' Decision: box questions become their `present` noul in place (edges and
    hybrid append four edge questions over `levels` bands); number questions are left out."""
    questions, position, numbers = [], [], []
    for i, q in enumerate(decision.questions):
        if q.kind == NUMBER:
            position.append(None)
            numbers.append(i)
            continue
        position.append(len(questions))
        questions.append(box_kind.present_question(q) if q.kind == BOX else q)
    boxes = []
    for i, q in enumerate(decision.questions):
        if q.kind == BOX:
            boxes.append((i, len(questions) if q.mode in EDGES else None))
            if q.mode in EDGES:
                questions += box_kind.edge_questions(q, levels)
    return Split(replace(decision, questions=tuple(questions)), tuple(position), tuple(boxes),
                 tuple(numbers))


def internal(s: Split) -> set[int]:
    """Reads that are parts of a box (never read again or thought about on their own)."""
    return {s.position[i] for i, _ in s.boxes} | set(range(s.own, len(s.reads.questions)))


def start(decision: Decision, s: Split, pipe, thoughts: dict) -> dict:
    """{request index: future of (text, tokens, cut, prompt tokens)}: every box (generate,
    hybrid) and number question laid out (a box in the profile's convention; a number after
    its thought, if it thought), fitted within the context less its token cap, all sent at
    once. Causal always: a generation decodes."""
    jobs = []  # (request index, question, structured outputs, token cap)
    for i in s.numbers:
        jobs.append((i, replace(decision.questions[i], assistant=thoughts.get(i, "")),
                     number_kind.constraint(), pipe.settings.number_max_tokens))
    mine = [i for i, _ in s.boxes if decision.questions[i].mode in GENERATES]
    if mine:
        conv = box_geometry.convention(pipe.profile.vision.box["convention"])
        schema = {"json": box_kind.schema(conv.most(_size(decision)))}
        jobs += [(i, replace(decision.questions[i], convention=conv), schema,
                  pipe.settings.box_max_tokens) for i in mine]
    futures = {}
    for cap in sorted({job[3] for job in jobs}):  # one fit per token cap
        same = [job for job in jobs if job[3] == cap]
        asked = replace(decision, attention_mode=CAUSAL, questions=tuple(q for _, q, _, _ in same))
        reads, _ = fitting.fit(asked, pipe.profile, pipe.labels, pipe.engine.count,
                               pipe.max_len - cap)
        for (i, _, structured, _), read in zip(same, reads):
            futures[i] = pipe.engine.submit(generation.generate, pipe.engine, read,
                                            structured, cap)
    return futures


def fold(decision: Decision, s: Split, outcome: Outcome, generated: dict, profile) -> Outcome:
    """The request's Outcome: read answers in the request's order, each box's parts made one
    box answer, each number's generation its answer; the generations' prompt and output tokens
    added to the reads' counts; fitted-state reports of the request's own questions only."""
    answers = [outcome.answers[p] if p is not None else None for p in s.position]
    extra_in = extra_out = 0
    for i in s.numbers:
        text, tokens, cut, prompt_tokens = generated[i]
        extra_in, extra_out = extra_in + prompt_tokens, extra_out + len(tokens)
        answers[i] = number_kind.answer(text, tokens, cut, profile.calibration.number_confidence)
    box = profile.vision.box if s.boxes else None
    for i, first_edge in s.boxes:
        present = box_kind.tempered(outcome.answers[s.position[i]].probabilities[0],
                                    box["present_temperature"])
        gen = feature = raw = None
        if i in generated:
            text, tokens, cut, prompt_tokens = generated[i]
            extra_in, extra_out = extra_in + prompt_tokens, extra_out + len(tokens)
            raw, feature = (None, None) if cut else box_kind.read_generation(text, tokens)
            conv = box_geometry.convention(box["convention"])
            size = _size(decision)
            gen = box_geometry.to_fractions(raw, conv, size, box_geometry.resized(conv, size))
        edges = edge_feature = None
        if first_edge is not None:
            edges, edge_feature = box_kind.edges_box(
                [a.probabilities for a in outcome.answers[first_edge:first_edge + 4]])
        q = decision.questions[i]
        used = q.mode if q.mode != "hybrid" else box_kind.hybrid(gen, edges)
        fractions, feature, raw = ((gen, feature, raw) if used == "generate"
                                   else (edges, edge_feature, None))
        answers[i] = box_kind.answer(fractions, box_kind.confidence(feature, box["confidence"]),
                                     present, used, feature, raw)
    request_of = {p: i for i, p in enumerate(s.position) if p is not None}
    selections = tuple(replace(sel, question=request_of[sel.question])
                       for sel in outcome.selections if sel.question in request_of)
    return replace(outcome, answers=tuple(answers), selections=selections,
                   num_input_tokens=outcome.num_input_tokens + extra_in,
                   output_tokens=outcome.output_tokens + extra_out)


def _size(decision: Decision) -> tuple[int, int]:
    """The image a box is drawn on (the parser admits box questions with exactly one)."""
    image = decision.images[0]
    return image.width, image.height
