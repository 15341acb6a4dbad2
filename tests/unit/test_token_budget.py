"""The token budget (onepass/work.py, --max-prompt-tokens): a request is priced in tokens of
work before its first read (the prompt tokens its label reads make the engine compute, a head
shared by several reads once; each /tokenize call; fitting's ranking and scanning), and over
the limit it is a 422 saying the limit and the price, with no read made. Layout overrides that
multiply the reads or drop the shared head are priced in the same budget.
Run: python3 -S -m unittest tests.unit.test_token_budget
"""
import unittest
from dataclasses import replace

from onepass import config, work
from onepass.backend.probes import Facts
from onepass.decision_model import Option, Question
from onepass.errors import InvalidRequest
from onepass.pipeline import Pipeline
from onepass.steps import fit
from onepass.steps.record import Record
from onepass.tokenizer_contract import Floor
from tests.support.build_decision import decision, resolved
from tests.support.kind_names import NOUL
from tests.support.unit_profile import LABELS, PROFILE
from tests.unit.test_work import CountingEngine

YES = (Option("true", None), Option("false", None))
TICKET = " ".join(f"The customer wrote line {i} about the order and its refund." for i in range(60))


def pipeline(max_prompt_tokens: int, context: int = 100_000, profile=PROFILE) -> Pipeline:
    settings = config.load(["--port", "0", "--max-prompt-tokens", str(max_prompt_tokens)],
                           environ={})
    pipe = Pipeline(settings, CountingEngine(), None, Facts(LABELS, context, False, ""))
    pipe.serving.calls.profile = profile
    pipe.serving = replace(pipe.serving, profile=profile)
    return pipe


def fitted(pipe, d) -> Record:
    return fit.fit(Record(pipe.serving, decision=resolved(d, PROFILE)))


def questions(n: int, state: str = TICKET, **layout):
    return decision((Question(NOUL, f"Is point {i} about a refund?", YES) for i in range(n)),
                    state, layout=replace(PROFILE.layout, **layout))


class TestTokenBudget(unittest.TestCase):
    def test_a_layout_that_multiplies_the_cost_is_priced_and_refused(self):
        """The same questions with question_first and repeat 4 (no head to share, every read
        four copies of the state) cost many times the plain layout: within a limit twice the
        plain price they are a 422 naming the limit and the price, before any read."""
        plain = fitted(pipeline(1 << 30), questions(40)).budget.price
        costly = fitted(pipeline(1 << 30), questions(40, question_first=True, repeat=4))
        self.assertGreater(costly.budget.price, 8 * plain)  # priced, not merely counted
        pipe = pipeline(2 * plain)
        self.assertLessEqual(fitted(pipe, questions(40)).budget.price, 2 * plain)
        with self.assertRaises(InvalidRequest) as ctx:
            fitted(pipe, questions(40, question_first=True, repeat=4))
        msg = ctx.exception.problems[0].msg
        self.assertIn(f"at most {2 * plain} per request (--max-prompt-tokens)", msg)
        self.assertIn(f"cost about {costly.budget.price} tokens", msg)
        self.assertEqual(pipe.engine.calls, 0)

    def test_a_shared_head_is_priced_once(self):
        """Reads over one state share its head: 40 questions cost far less than 40 prompts."""
        r = fitted(pipeline(1 << 30), questions(40))
        whole = sum(len(read.prompt.encode()) for read in r.fitted)
        self.assertLess(r.budget.prompt_tokens, whole / 4)
        self.assertEqual(r.budget.prompt_tokens, work.computed(
            r.fitted, [len(read.prompt.encode()) for read in r.fitted]))

    def test_many_questions_on_a_long_state_are_refused_before_it_is_cut(self):
        """A state longer than the context asked 200 questions: each would be cut to the
        context, so the price passes the limit before any part is ranked or counted."""
        long = "\n\n".join(f"Paragraph {i} says the order {i} shipped late." for i in range(3000))
        pipe = pipeline(50 * 2000, context=2000)
        with self.assertRaises(InvalidRequest) as ctx:
            fitted(pipe, questions(200, long))
        self.assertIn("--max-prompt-tokens", ctx.exception.problems[0].msg)
        self.assertEqual(pipe.engine.calls, 0)
        r = fitted(pipeline(1 << 30, context=2000), questions(20, long))
        self.assertEqual(len(r.selections), 20)  # cut within a budget that holds them
        self.assertGreater(r.budget.work, 0)

    def test_a_state_long_by_its_bytes_is_refused_before_it_is_counted(self):
        """With the tokenizer's floor (its contract's max_token_bytes: CountingEngine's token
        is 4 bytes, so 8 bounds it) the state's bytes prove that every question must be cut:
        the request is priced and refused without the state sent to /tokenize. Without the
        floor the state is counted first. Within the limit the floor changes no read."""
        long = "\n\n".join(f"Paragraph {i} says the order {i} shipped late." for i in range(3000))
        floored, bare = (replace(PROFILE, token_floor=f) for f in (Floor(8, 8, None), None))
        for profile, counted in ((floored, False), (bare, True)):
            pipe, texts = pipeline(50 * 2000, 2000, profile), []
            count = pipe.engine.count
            pipe.engine.count = lambda batch, *a, **k: texts.extend(batch) or count(batch)
            with self.assertRaises(InvalidRequest):
                fitted(pipe, questions(200, long))
            self.assertEqual(any("Paragraph 2999 " in t for t in texts), counted, profile.token_floor)
        cut = [fitted(pipeline(1 << 30, 2000, p), questions(20, long)) for p in (floored, bare)]
        self.assertEqual(*[[(r.prompt, r.label_token_ids) for r in c.fitted] for c in cut])
        self.assertEqual(*[c.selections for c in cut])
        self.assertEqual(len(cut[0].selections), 20)

    def test_tokenize_calls_and_fitting_work_are_priced(self):
        budget = work.Budget(10, work.Calls(1, 0, 0, 0), 1000)
        budget.tokenized(3)
        budget.fitting(work.FIT_WORK_PER_TOKEN * 5 + 1)
        self.assertEqual(budget.price, 3 * work.TOKENIZE_CALL_TOKENS + 6)
        with self.assertRaises(InvalidRequest) as ctx:
            budget.tokenized(1000 // work.TOKENIZE_CALL_TOKENS)
        self.assertIn("/tokenize calls", ctx.exception.problems[0].msg)

    def test_no_token_budget_when_zero(self):
        self.assertEqual(config.load(["--port", "0", "--max-prompt-tokens", "0"],
                                     environ={}).max_prompt_tokens, 0)
        r = fitted(pipeline(0), questions(40, question_first=True, repeat=4))
        self.assertIsNone(r.budget.limit_tokens)


if __name__ == "__main__":
    unittest.main()
