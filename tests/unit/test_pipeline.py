"""Stdlib-only tests of the decision core's shape (onepass/pipeline.py): the ten steps are ten
marked lines of one function, Pipeline.decide, in the order onepass.STEPS lists them, each a
call into the module named for its step, and no other line in onepass/ is marked. What the
steps do is tested per module (tests/unit/test_<step>.py) and end to end against a real vLLM
(tests/live/test_core_live.py runs a request under a line tracer).
Run: python3 -S -m unittest tests.unit.test_pipeline
"""
import inspect
import re
import unittest

import onepass
from onepass import pipeline
from tests.support.paths import ROOT

# the module (or the route's adapter) each step's line calls into
CALLS = {"parse": "adapter.parse", "resolve": "resolve.", "images": "inputs.", "fit": "fit.",
         "reads": "reads.", "readout": "readout.", "reread": "reread.", "think": "think.",
         "generate": "generate.", "render": "adapter.render"}


class TestDecide(unittest.TestCase):
    def test_the_ten_steps_are_ten_lines_of_decide_in_order(self):
        source = inspect.getsource(pipeline.Pipeline.decide)
        marked = [(line, m.group(1)) for line in source.splitlines()
                  if (m := re.search(r"# step: (\w+)", line))]
        self.assertEqual(tuple(step for _, step in marked), onepass.STEPS)
        for line, step in marked:
            with self.subTest(step=step):
                self.assertIn(CALLS[step], line.split("#")[0])

    def test_no_other_line_is_a_step(self):
        outside = [(str(path.relative_to(ROOT)), n)
                   for path in (ROOT / "onepass").rglob("*.py") if path.name != "pipeline.py"
                   for n, line in enumerate(path.read_text().splitlines(), 1)
                   if re.search(r"# step: \w", line)]
        self.assertEqual(outside, [])

    def test_each_step_module_is_named_for_its_step(self):
        for step in ("resolve", "fit", "reads", "readout", "reread", "think", "generate"):
            with self.subTest(step=step):
                self.assertTrue((ROOT / "onepass" / f"{step}.py").is_file())


if __name__ == "__main__":
    unittest.main()
