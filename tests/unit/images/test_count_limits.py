"""The image count is checked while counting (issue 25): a body with hundreds of thousands of
empty data URLs is refused at the one past the limit, so the refusal costs a scan of the bytes,
not a Source and a label each (tracemalloc's peak, and time against a plain scan of the text).
Run: python3 -m unittest tests.unit.images.test_count_limits
"""
import gc
import time
import tracemalloc
import unittest

from onepass.api import Limits, decisions, systemone
from onepass.errors import InvalidRequest

N = 440_000  # empty data URLs in a 10 MB state (the case had 16.8 MB)
EMPTY = "data:image/png;base64,"


def limits(most: int) -> Limits:
    return Limits(max_choice_options=255, max_questions=400, max_images=most, model="tiny")


def bodies() -> dict:
    return {
        "systemone state": (systemone, {"model": "m", "state": " ".join([EMPTY] * N),
                                        "questions": {"q": {"type": "noul",
                                                            "instructions": "x"}}}),
        "decisions parts": (decisions, {"model": "m", "input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": EMPTY}] * (N // 4)}],
            "questions": [{"type": "predicate", "instructions": "x"}]}),
    }


def refusal(api, body, most: int):
    """(the problems, peak bytes allocated, seconds) of parsing an already-decoded body."""
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    try:
        api.parse(body, None, limits(most))
    except InvalidRequest as e:
        problems = e.problems
    else:
        raise AssertionError("accepted")
    finally:
        took = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return problems, peak, took


class TestCountedWhileCounting(unittest.TestCase):
    def test_refused_at_the_one_past_the_limit(self):
        for most in (4, 0):  # a vision profile's 4, a text-only profile's none
            for kind, (api, body) in bodies().items():
                with self.subTest(kind=kind, most=most):
                    problems, peak, _ = refusal(api, body, most)
                    self.assertEqual(problems[-1].type, "too_long" if most else "unsupported")
                    self.assertLess(peak, 1 << 20)  # not 145 MiB of Sources and labels

    def test_the_refusal_costs_no_more_than_a_scan(self):
        api, body = bodies()["systemone state"]
        scan = min(_timed(lambda: body["state"].count("data:image/")) for _ in range(3))
        took = min(refusal(api, body, 4)[2] for _ in range(3))
        self.assertLess(took, 4 * scan + 0.005)


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


if __name__ == "__main__":
    unittest.main()
