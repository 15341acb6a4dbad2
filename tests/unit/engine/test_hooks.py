"""Installing the plugin's wrappers (engine/onepass_engine/hooks.py), on fake targets: each
target wrapped once however often install runs, the wrapper named as its original and marked
with it, a method only inherited never wrapped, and every factory of the real tables building a
wrapper from the venv's vLLM original (nothing of vLLM is patched here). Needs vLLM (hooks
imports the wrappers' modules); the stdlib run skips it.
Run: .venv/bin/python -m unittest tests.unit.engine.test_hooks
"""
import inspect
import sys
import types
import unittest
from unittest import mock

from tests.support.engine_fakes import engine
from tests.support.venv_only import NO_VLLM

(hooks,) = engine("hooks")
FAKE = "onepass_fake_vllm_module"


def fake_module():
    """A module of two classes standing for vLLM's: Runner.step and Runner.plan, Other.step,
    and Child, which only inherits step."""
    class Runner:
        def step(self, x):
            """Runner.step's doc."""
            return ("step", x)

        def plan(self):
            return "plan"

    class Other:
        def step(self, x):
            return ("other", x)

    class Child(Runner):
        pass
    mod = types.ModuleType(FAKE)
    mod.Runner, mod.Other, mod.Child = Runner, Other, Child
    return mod


@unittest.skipIf(hooks is None, NO_VLLM)
class TestInstall(unittest.TestCase):
    def setUp(self):
        self.mod = fake_module()
        patch = mock.patch.dict(sys.modules, {FAKE: self.mod})
        patch.start()
        self.addCleanup(patch.stop)
        self.made = []

    def factory(self, tag):
        """A wrapper factory recording what it wrapped; its wrapper tags the result."""
        def make(original):
            self.made.append((tag, original))

            def wrapper(*args, **kwargs):
                return tag, original(*args, **kwargs)
            return wrapper
        return make

    def test_each_target_is_wrapped_once(self):
        runner_step, other_step = self.mod.Runner.step, self.mod.Other.step
        runner_plan = self.mod.Runner.plan
        table = ((FAKE, "Runner", "step", self.factory("a")),
                 (FAKE, "Other", "step", self.factory("a")),
                 (FAKE, "Runner", "plan", self.factory("p")))
        for _ in range(3):  # vLLM may load the plugin more than once in a process
            hooks.install(table)
        self.assertEqual(self.made, [("a", runner_step), ("a", other_step), ("p", runner_plan)])
        self.assertEqual(self.mod.Runner().step(1), ("a", ("step", 1)))
        self.assertEqual(self.mod.Other().step(2), ("a", ("other", 2)))
        self.assertEqual(self.mod.Runner().plan(), ("p", "plan"))
        self.assertEqual(self.mod.Child().step(3), ("a", ("step", 3)))  # through its base

    def test_a_wrapper_carries_its_originals_name_and_mark(self):
        original = self.mod.Runner.step
        hooks.install(((FAKE, "Runner", "step", self.factory("a")),))
        wrapper = self.mod.Runner.__dict__["step"]
        self.assertIsNot(wrapper, original)
        self.assertIs(getattr(wrapper, hooks.MARK), original)
        self.assertEqual((wrapper.__name__, wrapper.__qualname__, wrapper.__doc__),
                         (original.__name__, original.__qualname__, "Runner.step's doc."))
        self.assertEqual(hooks.target(FAKE, "Runner", "step"), (self.mod.Runner, original))

    def test_a_table_installed_after_another_adds_its_own_targets_only(self):
        hooks.install(((FAKE, "Runner", "step", self.factory("a")),))
        hooks.install(((FAKE, "Runner", "step", self.factory("b")),
                       (FAKE, "Other", "step", self.factory("b"))))
        self.assertEqual([tag for tag, _ in self.made], ["a", "b"])
        self.assertEqual(self.mod.Runner().step(1), ("a", ("step", 1)))
        self.assertEqual(self.mod.Other().step(1), ("b", ("other", 1)))

    def test_an_inherited_method_is_no_target(self):
        """Wrapping it on the subclass would hide the base's own; the contract lists it."""
        with self.assertRaises(KeyError):
            hooks.target(FAKE, "Child", "step")
        with self.assertRaises(KeyError):
            hooks.install(((FAKE, "Child", "step", self.factory("a")),))
        self.assertEqual(self.made, [])
        self.assertNotIn("step", self.mod.Child.__dict__)

    def test_install_defaults_to_the_two_way_table(self):
        default = inspect.signature(hooks.install).parameters["hooks"].default
        self.assertIs(default, hooks.HOOKS)
        self.assertFalse({h[:3] for h in hooks.HOOKS} & {h[:3] for h in hooks.INVARIANT_HOOKS})

    def test_every_factory_builds_a_wrapper_from_its_vllm_original(self):
        for module, cls, attr, make in hooks.HOOKS + hooks.INVARIANT_HOOKS:
            owner, original = hooks.target(module, cls, attr)
            self.assertIs(owner.__dict__[attr], original, (cls, attr))  # not installed here
            self.assertTrue(callable(make(original)), (cls, attr))


if __name__ == "__main__":
    unittest.main()
