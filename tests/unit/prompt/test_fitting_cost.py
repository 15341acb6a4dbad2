"""What fitting a long state costs (onepass/prompt/fitting.py), counted, never timed: the
tokenizer calls of a request do not grow with its questions, the ranking and the scan choose
exactly what a full sort and a full scan of every part would, and the meter hears the work
before it is done. The token counter counts words (the live tests use vLLM's tokenizer).
Run: python3 -S -m unittest tests.unit.prompt.test_fitting_cost
"""
import random
import unittest
from dataclasses import replace

from onepass.decision_model import Decision, Option, Question
from onepass.prompt import fitting
from onepass.prompt.bm25 import BM25, terms
from onepass.prompt.layout import frames
from tests.support.kind_names import NOUL
from tests.support.unit_profile import LABELS, PROFILE

WORDS = ("rain", "harbour", "invoice", "parcel", "refund", "wind", "hill", "ledger", "the")
YES = (Option("true", None), Option("false", None))


class Words:
    """One token per word, plus one; counts its calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, texts):
        self.calls += 1
        return [len(t.split()) + 1 for t in texts]


def state(n: int, seed: int = 0, headings: bool = False) -> str:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if headings and i % 40 == 0:
            out.append(f"## Part {i}")
        out.append(f"Note {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30))))
    return "\n\n".join(out)


def decision(text: str, questions: int, **layout) -> Decision:
    qs = tuple(Question(NOUL, f"Does the {WORDS[k % len(WORDS)]} note {k} say so?", YES)
               for k in range(questions))
    return Decision("m", text, qs, layout=replace(PROFILE.layout, **layout))


def reference(whole, index, q, method, room) -> set:
    """The plain algorithm: every part scored and sorted, every part scanned."""
    parts, costs, _ = whole.parts()
    order = None
    if method == fitting.BM25_METHOD:
        query = terms(" ".join([q.instructions or ""] + [o.key + " " + (o.text or "")
                                                          for o in q.options]))
        scores = index.scores(query)
        if any(s > 0 for s in scores):
            order = sorted(range(len(parts)), key=lambda j: (-scores[j], j))
    order = order or whole.alternate()
    kept, used = set(), 0
    for j in order:
        need = [h for h in parts[j].heads if h not in kept] + [j]
        cost = sum(costs[k] + 3 for k in need if k not in kept)
        if used + cost <= room:
            kept.update(need)
            used += cost
    return kept


class Meter:
    def __init__(self, stop_at=None):
        self.work, self.told, self.stop_at = 0, [], stop_at

    def prompts(self, reads, tokens, more=0):
        self.told.append(("prompts", sum(tokens) + more))
        if self.stop_at == "prompts":
            raise RuntimeError("over")

    def fitting(self, work):
        self.work += work


class TestFittingCost(unittest.TestCase):
    def test_tokenizer_calls_do_not_grow_with_the_questions(self):
        """Every question's prompts of a round are counted in one call: 5 or 60 questions to
        cut make the same number of calls (each question alone made at least one more)."""
        text = state(2000)
        made = []
        for n in (5, 60):
            words = Words()
            reads, selections = fitting.fit(decision(text, n), PROFILE, LABELS, words, 300)
            self.assertEqual(len(selections), n)
            made.append(words.calls)
        self.assertEqual(made[0], made[1])
        self.assertLessEqual(made[1], fitting.MAX_ROUNDS + 4)

    def test_the_choice_is_the_full_sort_and_scan(self):
        """Postings, skipped blocks and the early stop choose exactly the parts a full sort and
        a full scan choose, for either method, headings, terms in most parts, any room."""
        rng = random.Random(7)
        for seed, headings in ((1, False), (2, True), (3, True)):
            text = state(700, seed, headings)
            frame = frames(decision(text, 1), PROFILE, LABELS, Words())[0]
            whole = fitting.Whole(text, frame)
            parts, costs, index = whole.parts()
            for k in range(40):
                q = Question(NOUL, " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))),
                             YES)
                method = fitting.HEAD_TAIL if k % 5 == 0 else fitting.BM25_METHOD
                room = rng.choice((0, 5, 40, 300, 2000, sum(costs) * 2))
                ranking = fitting._ranking(whole, index, q, method, fitting.FREE)
                with self.subTest(seed=seed, k=k, room=room):
                    self.assertEqual(fitting._choose(whole, ranking, room),
                                     reference(whole, index, q, method, room))

    def test_the_ranking_visits_the_querys_postings(self):
        """Scoring a question looks at the parts holding its terms, not at every part."""
        corpus = [terms(f"note {i} weather") for i in range(5000)] + [terms("refund invoice")]
        index = BM25(corpus)
        self.assertEqual(index.visits(terms("refund")), 1)
        self.assertEqual(set(index.matched(terms("refund"))), {5000})
        full = index.scores(terms("refund invoice weather"))
        # every part holds one of these terms: each score as the full scoring gives it
        self.assertEqual(index.matched(terms("refund invoice weather")), dict(enumerate(full)))

    def test_the_meter_hears_the_prompts_before_any_part_is_counted(self):
        """Questions to cut are priced at their whole budget before the state's parts are
        split and counted: a refusal there tokenizes no part."""
        words = Words()
        meter = Meter(stop_at="prompts")
        with self.assertRaises(RuntimeError):
            fitting.fit(decision(state(2000), 30), PROFILE, LABELS, words, 300, meter)
        self.assertEqual(meter.told[0][0], "prompts")
        self.assertGreaterEqual(meter.told[0][1], 30 * 300)
        self.assertEqual(meter.work, 0)
        self.assertLessEqual(words.calls, 2)  # the whole state and the bare prompts


if __name__ == "__main__":
    unittest.main()
