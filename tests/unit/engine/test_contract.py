"""What the plugin assumes about vLLM (engine/onepass_engine/contract.py), without a server: the
venv's vLLM passes the check; a signature and a field are pinned for every hook; stand-ins for
vLLM's classes with a renamed parameter, a changed default, a missing method or field, and
another version fail it, every mismatch listed in one EngineContractError. Needs vLLM (the
venv); the stdlib run skips it.
Run: .venv/bin/python -m unittest tests.unit.engine.test_contract
"""
import contextlib
import dataclasses
import importlib
import unittest
from unittest import mock

from tests.support.engine_fakes import engine
from tests.support.venv_only import NO_VLLM

contract, hooks = engine("contract", "hooks")
if contract:
    import vllm


def module(name):
    return importlib.import_module(name)


@unittest.skipIf(contract is None, NO_VLLM)
class TestContract(unittest.TestCase):
    def test_the_installed_vllm_passes(self):
        self.assertEqual(vllm.__version__, contract.VLLM_VERSION)
        self.assertEqual(contract.problems(), [])
        contract.check()

    def test_every_hook_has_its_signature_pinned_and_no_other(self):
        hooked = [(m, c, a) for m, c, a, _ in hooks.HOOKS + hooks.INVARIANT_HOOKS]
        self.assertEqual(len(hooked), len(set(hooked)))
        self.assertEqual(set(hooked), set(contract.SIGNATURES))

    def test_bare_signature_keeps_names_kinds_and_defaults_only(self):
        def f(self, a: int, /, b: "str" = "x", *rest: float, c: list | None = None,
              **more) -> bool:
            return True
        self.assertEqual(contract.bare_signature(f), "(self, a, /, b='x', *rest, c=None, **more)")

    def test_every_mismatch_is_listed(self):
        """A Scheduler with a renamed parameter and without one hooked method, a coordinator
        with a changed default, metadata and SamplingParams each missing a field, and another
        version: six problems, one error naming them all."""
        class Scheduler:  # no _mamba_block_aligned_split
            def _reserve_prefill_lookahead(self, request, num_computed, num_new_tokens):
                pass

        class KVCacheCoordinator:
            def cache_blocks(self, request, num_computed_tokens=0):
                pass

        @dataclasses.dataclass
        class CommonAttentionMetadata:  # no `causal`
            num_reqs: int

        class SamplingParams:
            __struct_fields__ = ("extra_args", "max_tokens", "skip_reading_prefix_cache")

        stand_ins = {("vllm.v1.core.sched.scheduler", "Scheduler"): Scheduler,
                     ("vllm.v1.core.kv_cache_coordinator", "KVCacheCoordinator"):
                         KVCacheCoordinator,
                     ("vllm.v1.attention.backend", "CommonAttentionMetadata"):
                         CommonAttentionMetadata,
                     ("vllm.sampling_params", "SamplingParams"): SamplingParams}
        with contextlib.ExitStack() as patches:
            patches.enter_context(mock.patch.object(vllm, "__version__", "0.33.0"))
            for (name, cls), stand_in in stand_ins.items():
                patches.enter_context(mock.patch.object(module(name), cls, stand_in))
            found = contract.problems()
            with self.assertRaises(contract.EngineContractError) as caught:
                contract.check()
        self.assertEqual(len(found), 6, found)
        wants = ["vLLM is 0.33.0; this plugin was written for 0.32.0",
                 "vllm.v1.core.sched.scheduler.Scheduler._mamba_block_aligned_split is missing "
                 "(KeyError",
                 "vllm.v1.core.sched.scheduler.Scheduler._reserve_prefill_lookahead(self, "
                 "request, num_computed, num_new_tokens) differs from the expected (self, "
                 "request, num_computed_tokens, num_new_tokens)",
                 "vllm.v1.core.kv_cache_coordinator.KVCacheCoordinator.cache_blocks(self, "
                 "request, num_computed_tokens=0) differs from the expected (self, request, "
                 "num_computed_tokens)",
                 "vllm.v1.attention.backend.CommonAttentionMetadata has no field 'causal'",
                 "SamplingParams has no field 'min_tokens'"]
        message = str(caught.exception)
        self.assertTrue(message.startswith("onepass engine plugin refuses to start"))
        for want in wants:
            self.assertEqual(sum(p.startswith(want) for p in found), 1, want)
            self.assertIn("\n  - " + want, message)
        self.assertEqual(contract.problems(), [])  # the stand-ins are gone

    def test_an_installed_hook_is_checked_as_the_original_it_wraps(self):
        """register() may run twice in a process: the check reads through a wrapper."""
        owner = module("vllm.v1.core.kv_cache_coordinator").KVCacheCoordinator
        original = owner.__dict__["cache_blocks"]

        def wrapper(*args, **kwargs):
            return original(*args, **kwargs)
        setattr(wrapper, hooks.MARK, original)
        with mock.patch.object(owner, "cache_blocks", wrapper):
            self.assertEqual(contract.problems(), [])


if __name__ == "__main__":
    unittest.main()
