"""Per-row attention flags (engine/onepass_engine/rows.py), without a server: which rows of a
step are two-way, the int32 `causal` tensor built from them (1 causal, 0 two-way, padding rows
causal) and put on full-attention layers only, the attention backends allowed to receive it, and
a step with a two-way row kept out of FULL CUDA graphs. Fakes stand for the runner, scheduler
output and input batch, the originals with the signatures contract.py pins; specs, CUDAGraphMode
and BatchExecutionDescriptor are vLLM's. Needs torch and vLLM (the venv); the stdlib run skips.
Run: .venv/bin/python -m unittest tests.unit.engine.test_rows
"""
import unittest
from types import SimpleNamespace
from unittest import mock

from tests.support.engine_fakes import engine, stand_in
from tests.support.venv_only import NO_VLLM

rows, sets = engine("rows", "sets")
if rows:
    import torch
    from vllm.config import CUDAGraphMode
    from vllm.platforms import current_platform
    from vllm.platforms.interface import DeviceCapability
    from vllm.v1 import kv_cache_interface as specs
    from vllm.v1.attention.backends import fa_utils
    from vllm.v1.worker.gpu.cudagraph_utils import BatchExecutionDescriptor

RUNNER_V1 = "vllm.v1.worker.gpu_model_runner", "GPUModelRunner"
GROUP = "vllm.v1.worker.utils", "AttentionGroup"
SHAPE = {"block_size": 16, "num_kv_heads": 2, "head_size": 32}


def spec(cls, **extra):
    return cls(**SHAPE, dtype=torch.float32, **extra)


def new_request(req_id, mode=None):
    """A NewRequestData stand-in; mode is its attention_mode, if any."""
    extra = {"attention_mode": mode} if mode else None
    return SimpleNamespace(req_id=req_id, sampling_params=SimpleNamespace(extra_args=extra))


def scheduler_output(new=(), scheduled=(), finished=()):
    return SimpleNamespace(scheduled_new_reqs=list(new), finished_req_ids=set(finished),
                           num_scheduled_tokens={rid: 1 for rid in scheduled})


def config(ubatching=False, cache_dtype="auto"):
    return SimpleNamespace(parallel_config=SimpleNamespace(use_ubatching=ubatching),
                           cache_config=SimpleNamespace(cache_dtype=cache_dtype))


def backend(name):
    return SimpleNamespace(get_name=lambda: name)


def flags(causal):
    return None if causal is None else causal.tolist()


@unittest.skipIf(rows is None, NO_VLLM)
class StepCase(unittest.TestCase):
    """Each test starts and ends with no step under way (STEP is per process)."""
    def setUp(self):
        self.addCleanup(self.reset)
        self.reset()
        self.calls = []

    @staticmethod
    def reset():
        rows.STEP.flagged, rows.STEP.causal = False, None
        sets.STEP.begin(())

    def record(self, arguments):
        """An original's call: its arguments and the step as it saw it."""
        self.calls.append((arguments, rows.STEP.flagged, flags(rows.STEP.causal)))
        return "original's result"


class TestRowFlags(StepCase):
    def test_two_way_rows_are_zero_padding_rows_causal(self):
        got = rows.row_flags(["a", "b", "c"], {"b", "z"}, 5, "cpu")
        self.assertEqual(got.dtype, torch.int32)
        self.assertEqual(got.tolist(), [1, 0, 1, 1, 1])
        self.assertEqual(rows.row_flags(["a", "b"], {"a", "b"}, 2, "cpu").tolist(), [0, 0])

    def test_no_tensor_without_a_two_way_row(self):
        self.assertIsNone(rows.row_flags(["a", "b"], {"z"}, 4, "cpu"))
        self.assertIsNone(rows.row_flags([], {"a"}, 0, "cpu"))

    def test_only_plain_full_attention_layers_take_flags(self):
        """Subclasses of FullAttentionSpec (MLA, sinks, hidden states) are not plain full
        attention; sliding-window, chunked, cross and encoder layers stay as they are."""
        self.assertTrue(rows.two_way_layer(spec(specs.FullAttentionSpec)))
        for cls in (specs.MLAAttentionSpec, specs.SinkFullAttentionSpec,
                    specs.HiddenStateCacheSpec, specs.CrossAttentionSpec,
                    specs.EncoderOnlyAttentionSpec):
            self.assertFalse(rows.two_way_layer(spec(cls)), cls.__name__)
        self.assertFalse(rows.two_way_layer(spec(specs.SlidingWindowSpec, sliding_window=8)))
        chunked = spec(specs.ChunkedLocalAttentionSpec, attention_chunk_size=8)
        self.assertFalse(rows.two_way_layer(chunked))


class TestExecuteModel(StepCase):
    def setUp(self):
        super().setUp()
        self.runner = SimpleNamespace()
        self.run = rows.wrap_execute_model(stand_in(*RUNNER_V1, "execute_model", self.record))

    def step(self, output, **kwargs):
        self.assertEqual(self.run(self.runner, output, **kwargs), "original's result")
        self.assertEqual((rows.STEP.flagged, rows.STEP.causal), (False, None))
        return self.calls[-1][1]

    def test_a_step_is_flagged_while_a_two_way_request_is_scheduled(self):
        """Flagged requests are remembered from their first step until they finish."""
        first = scheduler_output([new_request("a", "two-way"), new_request("b"),
                                  new_request("c", "causal")], scheduled="abc")
        self.assertTrue(self.step(first, intermediate_tensors="it"))
        self.assertEqual(self.calls[-1][0], {"self": self.runner, "scheduler_output": first,
                                             "intermediate_tensors": "it"})
        self.assertEqual(self.runner._onepass_two_way_ids, {"a"})
        self.assertFalse(self.step(scheduler_output(scheduled="bc")))  # a waits this step
        self.assertTrue(self.step(scheduler_output(scheduled="ab")))
        self.assertFalse(self.step(scheduler_output(scheduled="b", finished="a")))
        self.assertEqual(self.runner._onepass_two_way_ids, set())
        self.assertTrue(self.step(scheduler_output([new_request("d", "bidirectional")], "d")))

    def test_the_step_is_cleared_when_the_original_fails(self):
        sets.STEP.begin(("a set read",))

        def fails(runner, output):
            self.assertTrue(rows.STEP.flagged)
            rows.STEP.causal = torch.zeros(1, dtype=torch.int32)
            raise RuntimeError("mid-step")
        with self.assertRaisesRegex(RuntimeError, "mid-step"):
            rows.wrap_execute_model(fails)(
                self.runner, scheduler_output([new_request("a", "two-way")], "a"))
        self.assertEqual((rows.STEP.flagged, rows.STEP.causal), (False, None))
        self.assertEqual(sets.STEP.requests, ())


class TestMetadataV1(StepCase):
    """_build_attention_metadata: the flags of the batch's first num_reqs rows, padded."""
    def setUp(self):
        super().setUp()
        self.build = rows.wrap_build_attention_metadata_v1(
            stand_in(*RUNNER_V1, "_build_attention_metadata", self.record))
        # "d" sits past num_reqs (a row of an earlier, larger batch): never read
        self.runner = SimpleNamespace(input_batch=SimpleNamespace(req_ids=["a", "b", "c", "d"]),
                                      device="cpu", _onepass_two_way_ids={"b", "d"})

    def built(self, *args, **kwargs):
        self.assertEqual(self.build(self.runner, *args, **kwargs), "original's result")
        self.assertIsNone(rows.STEP.causal)
        return self.calls[-1][0], self.calls[-1][2]  # the arguments, the flags seen

    def test_flags_for_the_rows_of_a_flagged_step(self):
        rows.STEP.flagged = True
        arguments, causal = self.built(12, 3, 9, num_reqs_padded=4, logits_indices="li")
        self.assertEqual(causal, [1, 0, 1, 1])
        self.assertEqual((arguments["num_tokens"], arguments["num_reqs"],
                          arguments["max_query_len"], arguments["logits_indices"]),
                         (12, 3, 9, "li"))
        self.assertEqual(self.built(12, 3, 9)[1], [1, 0, 1])  # no padding

    def test_no_flags_outside_a_flagged_step_or_in_a_capture(self):
        self.assertIsNone(self.built(12, 3, 9)[1])
        rows.STEP.flagged = True
        self.assertIsNone(self.built(12, 3, 9, for_cudagraph_capture=True)[1])
        self.runner._onepass_two_way_ids = {"z"}
        self.assertIsNone(self.built(12, 3, 9)[1])

    def test_micro_batches_are_refused(self):
        rows.STEP.flagged = True
        with self.assertRaisesRegex(RuntimeError, "--enable-dbo"):
            self.build(self.runner, 12, 3, 9, ubatch_slices=["u0", "u1"])
        self.assertEqual(self.calls, [])

    def test_the_flags_are_dropped_when_the_original_fails(self):
        rows.STEP.flagged = True
        fails = stand_in(*RUNNER_V1, "_build_attention_metadata", lambda arguments: 1 / 0)
        with self.assertRaises(ZeroDivisionError):
            rows.wrap_build_attention_metadata_v1(fails)(self.runner, 12, 3, 9)
        self.assertIsNone(rows.STEP.causal)


class TestMetadataV2(StepCase):
    """V2: prepare_attn builds the flags; they stay until execute_model ends, through the
    AttentionGroup.build_metadata calls of the step."""
    def test_the_flags_reach_full_attention_groups_only(self):
        full = SimpleNamespace(kv_cache_spec=spec(specs.FullAttentionSpec))
        window = SimpleNamespace(kv_cache_spec=spec(specs.SlidingWindowSpec, sliding_window=8))
        build = rows.wrap_build_metadata(stand_in(*GROUP, "build_metadata", self.record))
        prepare = rows.wrap_prepare_attn_v2(lambda runner, batch: "prepared")
        batch = SimpleNamespace(req_ids=["a", "b", "c"], num_reqs=2, num_reqs_after_padding=4)
        common = SimpleNamespace(num_reqs=2, causal=True)

        def execute_model(runner, output):
            self.assertEqual(prepare(runner, batch), "prepared")
            build(full, common, 1, common_prefix_len=5, fast_build=True)
            build(window, common)
            return flags(rows.STEP.causal)
        runner = SimpleNamespace(device="cpu")
        run = rows.wrap_execute_model(execute_model)
        flagged = scheduler_output([new_request("b", "two-way"), new_request("c", "two-way")],
                                   scheduled="bc")
        self.assertEqual(run(runner, flagged), [1, 0, 1, 1])  # c is past num_reqs
        self.assertIsNone(rows.STEP.causal)
        (to_full, _, _), (to_window, _, _) = self.calls
        self.assertEqual(to_full["common_attn_metadata"].causal.tolist(), [1, 0])
        self.assertIsNot(to_full["common_attn_metadata"], common)  # a copy: common unchanged
        self.assertEqual((to_full["ubatch_idx"], to_full["common_prefix_len"],
                          to_full["kwargs"]), (1, 5, {"fast_build": True}))
        self.assertIs(to_window["common_attn_metadata"], common)
        self.assertIs(common.causal, True)
        self.calls.clear()
        self.assertIsNone(run(runner, scheduler_output(scheduled="a")))
        self.assertEqual([c[0]["common_attn_metadata"] for c in self.calls], [common, common])


class TestBackends(StepCase):
    def test_backends_that_read_a_flag_per_row(self):
        for name in sorted(rows.ROW_FLAG_BACKENDS):
            rows.check_backend(backend(name), config())
        for name in ("FLASH_ATTN", "FLASHINFER", "FLEX_ATTENTION", "TREE_ATTN"):
            with self.assertRaisesRegex(RuntimeError, f"backend {name} cannot honour .* "
                                        "--attention-backend TRITON_ATTN"):
                rows.check_backend(backend(name), config())
        with mock.patch.object(rows, "_fa4_row_flags", return_value=True):
            rows.check_backend(backend("FLASH_ATTN"), config())

    def test_fa4_takes_row_flags_on_sm90_only(self):
        self.assertFalse(rows._fa4_row_flags())  # this CPU: no device capability
        for capability, version, takes in (((9, 0), 4, True), ((9, 0), 3, False),
                                           ((10, 0), 4, False), ((8, 0), 4, False)):
            with mock.patch.object(current_platform, "get_device_capability",
                                   return_value=DeviceCapability(*capability)), \
                    mock.patch.object(fa_utils, "get_flash_attn_version",
                                      return_value=version):
                self.assertIs(rows._fa4_row_flags(), takes, (capability, version))

    def test_causal_only_caches_and_micro_batching_are_refused(self):
        with self.assertRaisesRegex(RuntimeError, "KV cache dtype int4_per_token_head"):
            rows.check_backend(backend("TRITON_ATTN"), config(cache_dtype="int4_per_token_head"))
        rows.check_backend(backend("TRITON_ATTN"), config(cache_dtype="fp8"))
        with self.assertRaisesRegex(RuntimeError, "does not support micro-batching"):
            rows.check_backend(backend("CPU_ATTN"), config(ubatching=True))

    def test_the_backend_is_checked_for_full_attention_groups_only(self):
        create = rows.wrap_create_metadata_builders(
            stand_in(*GROUP, "create_metadata_builders", self.record))
        window = SimpleNamespace(kv_cache_spec=spec(specs.SlidingWindowSpec, sliding_window=8),
                                 backend=backend("FLASHINFER"))
        self.assertEqual(create(window, config(), "cpu", 32), "original's result")
        self.assertEqual(self.calls[-1][0]["kernel_block_size"], 32)
        full = SimpleNamespace(kv_cache_spec=spec(specs.FullAttentionSpec),
                               backend=backend("FLASHINFER"))
        with self.assertRaisesRegex(RuntimeError, "FLASHINFER"):
            create(full, config(), "cpu")
        self.assertEqual(len(self.calls), 1)
        full.backend = backend("CPU_ATTN")
        self.assertEqual(create(full, config(), "cpu", num_metadata_builders=2),
                         "original's result")
        self.assertEqual(self.calls[-1][0]["num_metadata_builders"], 2)


class TestCudaGraphs(StepCase):
    def test_v1_dispatch_never_picks_a_full_graph_in_a_flagged_step(self):
        dispatch = rows.wrap_dispatch_v1(stand_in(
            "vllm.v1.cudagraph_dispatcher", "CudagraphDispatcher", "dispatch", self.record))
        me = object()
        dispatch(me, 8, True)
        self.assertIsNone(self.calls[-1][0]["invalid_modes"])  # unflagged: as called
        rows.STEP.flagged = True
        for given, want in ((None, {CUDAGraphMode.FULL}),
                            ({CUDAGraphMode.PIECEWISE},
                             {CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL})):
            self.assertEqual(dispatch(me, 8, True, invalid_modes=given), "original's result")
            arguments = self.calls[-1][0]
            self.assertEqual(arguments["invalid_modes"], want)
            self.assertEqual((arguments["self"], arguments["num_tokens"],
                              arguments["uniform_decode"]), (me, 8, True))
        dispatch(me, 8, False, False, 0, None, {CUDAGraphMode.PIECEWISE})  # all positional
        self.assertEqual(self.calls[-1][0]["invalid_modes"],
                         {CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL})

    def test_v2_dispatch_runs_a_flagged_step_eagerly_instead_of_in_a_full_graph(self):
        def dispatched(mode):
            desc = BatchExecutionDescriptor(cg_mode=mode, num_tokens=8, num_reqs=2,
                                            uniform_token_count=4)
            return desc, rows.wrap_dispatch_v2(lambda *args, **kwargs: desc)(object(), 2, 8)
        self.assertIs(*dispatched(CUDAGraphMode.FULL))  # unflagged: as dispatched
        rows.STEP.flagged = True
        desc, got = dispatched(CUDAGraphMode.FULL)
        self.assertEqual(got.cg_mode, CUDAGraphMode.NONE)
        self.assertEqual((got.num_tokens, got.num_reqs, got.uniform_token_count), (8, 2, 4))
        for mode in (CUDAGraphMode.PIECEWISE, CUDAGraphMode.NONE):
            self.assertIs(*dispatched(mode))


if __name__ == "__main__":
    unittest.main()
