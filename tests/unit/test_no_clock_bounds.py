"""No assertion in the test sources holds a wall-clock duration to a constant (docs/testing.md,
"No clocks in assertions"): tests/support/clock_asserts.py reads every test source's AST, and
first proves it finds the planted forms below and passes the allowed ones.
Run: python3 -S -m unittest tests.unit.test_no_clock_bounds
"""
import ast
import unittest

from tests.support import clock_asserts
from tests.support.paths import ROOT

PLANTED = '''
import time
from time import perf_counter
import timeit

def helper(addr):
    started = time.monotonic()
    return addr, time.monotonic() - started

class T:
    @classmethod
    def setUpClass(cls):
        cls.out, cls.seconds = helper(0)

    def run_it(self):
        started = time.monotonic()
        self.took = time.monotonic() - started

    def test_forms(self):
        t0 = time.monotonic()
        self.assertLess(time.monotonic() - t0, 1.9)                 # 1 a difference, inline
        took = perf_counter() - t0
        self.assertLess(took, 2)                                     # 2 a name
        assert 1.5 <= took < 3.0                                     # 3 a chained assert
        times = [time.time() - t0 for _ in range(3)]
        self.assertGreaterEqual(max(times), 0.2)                     # 4 a list's max
        _, secs = helper(1)
        self.assertTrue(secs < 5)                                    # 5 a helper's return
        scan = min(timeit.repeat(lambda: 1, number=1, repeat=3))
        self.assertLess(took, 4 * scan + 0.005)                      # 6 a ratio plus seconds
        self.assertLess(self.took, 2)                                # 7 set in another method
        deadline = time.monotonic() + 5
        assert time.monotonic() < deadline or True                   # (an instant: allowed)
        if took > 2:                                                 # 8 an if that fails
            self.fail("slow")
        self.assertLess(self.seconds, 2.0 * 4)                       # 10 set in setUpClass
        late = [t for t in times if t >= 5]                          # 9 a filter on seconds
        assert not late

    def test_allowed(self):
        t0 = time.monotonic()
        step = time.monotonic() - t0
        took = time.monotonic() - t0
        self.assertLess(took, 3 * step)                  # a ratio to a duration of this run
        self.assertLess(took / step, 4)                  # the same, as a ratio
        self.assertLessEqual(took, DEADLINE_S + step)    # the deadline it asked for + measured
        self.assertEqual(len([took]), 1)                 # a count
        while time.monotonic() - t0 < 5:                 # a polling guard, no assertion
            break
'''


def planted_lines(marker: str) -> list:
    return [i for i, line in enumerate(PLANTED.splitlines(), 1) if marker in line]


class TestClockAsserts(unittest.TestCase):
    def test_the_planted_bounds_are_found_and_the_allowed_forms_pass(self):
        found = [int(f.split(":")[1]) for f in clock_asserts.offenders(PLANTED)]
        self.assertEqual(found, sorted(planted_lines(f"# {n} ")[0] for n in range(1, 11)))

    def test_no_test_source_compares_a_duration_with_a_constant(self):
        files = clock_asserts.sources(ROOT)
        self.assertIn(ROOT / "test_security.py", files)
        self.assertGreater(len(files), 100)
        helpers = [ast.parse(f.read_text()) for f in files if f.parent.name == "support"]
        returns = clock_asserts.returns_of(helpers)
        found = [o for f in files for o in clock_asserts.offenders(
            f.read_text(encoding="utf-8"), str(f.relative_to(ROOT)), returns)]
        self.assertEqual(found, [], "a bound is a count or a ratio to a duration measured in "
                         "the same run; wall-clock budgets go in bench/")


if __name__ == "__main__":
    unittest.main()
