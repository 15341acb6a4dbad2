"""The plugin's entry points (engine/onepass_engine/__init__.py), without vLLM: each checks the
contract before it installs anything, `register` installs the two-way table (install's default)
and `register_batch_invariant` the invariant one; a failed check installs nothing and stops
vLLM's start-up with its error. contract and hooks are stand-ins on the package here, so this
runs in the stdlib run too.
Run: python3 -S -m unittest tests.unit.engine.test_init
"""
import sys
import unittest
from types import SimpleNamespace
from unittest import mock

from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "engine"))
import onepass_engine  # noqa: E402


class TestEntryPoints(unittest.TestCase):
    def setUp(self):
        self.calls = []
        self.contract = SimpleNamespace(check=lambda: self.calls.append("check"))
        self.hooks = SimpleNamespace(HOOKS=("two-way hooks",),
                                     INVARIANT_HOOKS=("invariant hooks",),
                                     install=lambda *args: self.calls.append(("install", args)))
        # `from . import contract, hooks` reads the package's attributes first
        for name, stand_in in (("contract", self.contract), ("hooks", self.hooks)):
            patch = mock.patch.object(onepass_engine, name, stand_in, create=True)
            patch.start()
            self.addCleanup(patch.stop)

    def test_register_checks_then_installs_the_two_way_hooks(self):
        onepass_engine.register()
        self.assertEqual(self.calls, ["check", ("install", ())])

    def test_register_batch_invariant_checks_then_installs_the_invariant_hooks(self):
        onepass_engine.register_batch_invariant()
        self.assertEqual(self.calls, ["check", ("install", (self.hooks.INVARIANT_HOOKS,))])
        self.assertIs(self.calls[1][1][0], self.hooks.INVARIANT_HOOKS)

    def test_a_failed_check_installs_nothing(self):
        def refuses():
            raise RuntimeError("the installed vLLM is not the one")
        self.contract.check = refuses
        for entry in (onepass_engine.register, onepass_engine.register_batch_invariant):
            with self.assertRaisesRegex(RuntimeError, "not the one"):
                entry()
        self.assertEqual(self.calls, [])


if __name__ == "__main__":
    unittest.main()
