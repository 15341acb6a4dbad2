"""Validation (onepass/api/checks.py) is linear in its input and lists at most MAX_PROBLEMS
problems (issue 25): n problems of each kind the issue found quadratic (non-text criteria values,
unknown fields, extra keys, invalid assets, `/v1/decisions` `input: [1] * n`) cost, at 16n, well
under 64x what they cost at n (linear is 16x, 20-30x here with the larger dicts' cache misses; the
old list scan 256x), best of 5, on any machine: a wide margin, since a loaded machine's jitter
moved a 4n/n ratio from 4 to 14.
Run: python3 -m unittest tests.unit.api.test_checks
"""
import gc
import time
import unittest

from onepass.api import Limits, decisions, systemone
from onepass.api.checks import MAX_PROBLEMS
from onepass.errors import InvalidRequest

LIMITS = Limits(max_options=255, max_questions=400)
N = 1000  # problems at n: a few ms here, few enough for the old code at 16n (minutes)
SCALE, RATIO = 16, 64  # at SCALE x n against n


def bodies(n: int) -> dict:
    """(adapter, body with n problems of one kind) per kind."""
    def ask(**fields):
        return {"model": "m", "state": "s", "questions": {"q": {"type": "noul",
                                                                "instructions": "x", **fields}}}
    return {
        "non-text criteria values": (systemone, {"model": "m", "state": "s", "questions": {
            "q": {"type": "choice", "criteria": {f"o{i}": 5 for i in range(n)}}}}),
        "unknown fields": (systemone, ask(**{f"x{i}": 1 for i in range(n)})),
        "extra noul criteria keys": (systemone, ask(criteria={f"k{i}": "a" for i in range(n)})),
        "invalid assets": (systemone, {**ask(), "assets": {f"<{i}>": 1 for i in range(n)}}),
        "input items": (decisions, {"model": "m", "input": [1] * n, "questions": [
            {"type": "predicate", "instructions": "x"}]}),
    }


def refused(api, body) -> InvalidRequest:
    try:
        api.parse(body, None, LIMITS)
    except InvalidRequest as e:
        return e
    raise AssertionError("the body was accepted")


def seconds(api, body) -> float:
    """One parse, the cyclic collector off (its passes land anywhere and are not the parse's)."""
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        refused(api, body)
        return time.perf_counter() - started
    finally:
        gc.enable()


class TestValidationCost(unittest.TestCase):
    def test_linear_in_the_problems(self):
        small, large = bodies(N), bodies(SCALE * N)
        for kind, (api, body) in small.items():
            with self.subTest(kind):
                at_n = min(seconds(api, body) for _ in range(5))
                best = float("inf")
                for _ in range(5):  # best of 5; stop once one run shows it
                    best = min(best, seconds(*large[kind]))
                    if best < RATIO * at_n:
                        break
                self.assertLess(best, RATIO * at_n, f"{kind}: {at_n:.4f} s at n={N}, "
                                f"{best:.4f} s at {SCALE}n")

    def test_at_most_max_problems_listed_and_the_rest_counted(self):
        for kind, (api, body) in bodies(4 * N).items():
            with self.subTest(kind):
                problems = refused(api, body).problems
                self.assertEqual(len(problems), MAX_PROBLEMS + 1)
                self.assertEqual(problems[-1].type, "too_many_problems")
                self.assertRegex(problems[-1].msg, r"^\d+ more problems")

    def test_a_few_problems_are_all_listed_once(self):
        api, body = bodies(3)["unknown fields"]
        problems = refused(api, body).problems
        self.assertEqual([p.loc[-1] for p in problems], ["x0", "x1", "x2"])


if __name__ == "__main__":
    unittest.main()
