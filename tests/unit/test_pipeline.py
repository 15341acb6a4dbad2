"""Stdlib-only tests of the decision core's shape (onepass/pipeline.py): STEPS is the ten
functions `step(record) -> record` that Pipeline.decide runs in order, each in the module named
for it under onepass/steps/ and named as that module; every step is in STEPS once; the engine's
turn is around the steps between images and render; and decide runs them in STEPS' order with
one Record passed from each to the next. What each step does is tested per module
(tests/unit/steps/) and end to end against a real vLLM (tests/live/test_core_live.py).
Run: python3 -S -m unittest tests.unit.test_pipeline
"""
import contextlib
import unittest
from types import SimpleNamespace
from unittest import mock

from onepass import pipeline
from onepass.steps.record import Record
from tests.support.paths import ROOT


class TestSteps(unittest.TestCase):
    def test_ten_steps_each_in_its_own_module_named_for_it(self):
        self.assertEqual(pipeline.NAMES, ("parse", "resolve", "images", "fit", "read",
                                          "readout", "reread", "think", "generate", "render"))
        for step in pipeline.STEPS:
            with self.subTest(step=step.__name__):
                self.assertEqual(step.__module__, f"onepass.steps.{step.__name__}")
                self.assertTrue((ROOT / "onepass" / "steps" / f"{step.__name__}.py").is_file())

    def test_every_step_module_is_in_steps(self):
        """A module under steps/ is a step, the record, or what the steps share to call the
        engine: nothing else hides there."""
        found = {p.stem for p in (ROOT / "onepass" / "steps").glob("*.py")}
        self.assertEqual(found - set(pipeline.NAMES), {"__init__", "record", "engine_calls"})

    def test_the_turn_is_around_the_engine_steps_only(self):
        self.assertEqual(pipeline.STEPS, pipeline.BEFORE_ENGINE + pipeline.AT_ENGINE
                         + pipeline.AFTER_ENGINE)
        self.assertEqual([s.__name__ for s in pipeline.BEFORE_ENGINE],
                         ["parse", "resolve", "images"])
        self.assertEqual([s.__name__ for s in pipeline.AFTER_ENGINE], ["render"])


class TestDecide(unittest.TestCase):
    def test_decide_runs_the_steps_in_order_passing_one_record(self):
        """Each step is handed the record the step before returned; the turn is held exactly
        while the engine steps run; decide returns the last record's response."""
        ran, held = [], []

        @contextlib.contextmanager
        def turn():
            held.append("in")
            yield
            held.append("out")

        def stand_in(name):
            def step(r):
                self.assertIsInstance(r, Record)
                self.assertEqual(r.raw, b"body")
                self.assertEqual(r.response, ran[-1] if ran else None)
                ran.append(name)
                self.assertEqual(held, ["in"] if name in engine_steps else
                                 ([] if not held else ["in", "out"]))
                return Record(r.serving, r.adapter, r.raw, r.headers, r.hold, response=name)
            step.__name__ = name
            return step

        engine_steps = {s.__name__ for s in pipeline.AT_ENGINE}
        swap = {n: tuple(stand_in(s.__name__) for s in getattr(pipeline, n))
                for n in ("BEFORE_ENGINE", "AT_ENGINE", "AFTER_ENGINE")}
        pipe = object.__new__(pipeline.Pipeline)
        pipe.serving, pipe.turn = None, turn
        pipe.engine = SimpleNamespace(request=contextlib.nullcontext)
        with mock.patch.multiple(pipeline, **swap):
            self.assertEqual(pipe.decide(None, b"body", {}), "render")
        self.assertEqual(tuple(ran), pipeline.NAMES)
        self.assertEqual(held, ["in", "out"])


if __name__ == "__main__":
    unittest.main()
