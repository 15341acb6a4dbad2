"""Batch-invariant CPU attention and linear layers (engine/onepass_engine/invariant.py), on small
CPU tensors without a server. Attention: the rewritten metadata against a straightforward
recomputation (each query token its own one-query request, its KV length its position + 1, the
whole prompt for a two-way row, no KV split), and vLLM's CPU kernel run with it against a float64
softmax, giving a token the same bits cold, warm and beside other requests. Linear layers: every
call of `rows` rows (the last zero-padded), vLLM's own CPU GEMM wrapped at load, and an fp32 head
cast once. Needs torch and vLLM's CPU build (the venv); the stdlib run skips it.
Run: .venv/bin/python -m unittest tests.unit.engine.test_invariant
"""
import unittest
from types import SimpleNamespace
from unittest import mock

from tests.support.cpu_attention import (HEAD, HEADS, KV_HEADS, REQUESTS, Step, expected,
                                         ops)
from tests.support.engine_fakes import engine
from tests.support.venv_only import NO_VLLM

(invariant,) = engine("invariant")
if ops:
    import torch
    from vllm.model_executor.layers.linear import UnquantizedLinearMethod
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionMetadata


@unittest.skipIf(ops is None, NO_VLLM)
class TestPerQuery(unittest.TestCase):
    def test_each_query_token_is_its_own_request(self):
        for requests in (REQUESTS, tuple((n, new, False) for n, new, _ in REQUESTS)):
            step = Step(requests)
            meta = step.metadata()
            made, real = [], ops.cpu_attn_get_scheduler_metadata
            spy = mock.Mock(side_effect=lambda **kw: made.append(real(**kw)) or made[-1])
            with mock.patch.object(ops, "cpu_attn_get_scheduler_metadata", spy):
                got = invariant.per_query(step.builder, meta)
            reqs, lengths = expected(requests)
            n = len(reqs)
            self.assertEqual(got.num_actual_tokens, n)
            self.assertEqual(got.query_start_loc.tolist(), list(range(n + 1)))
            self.assertEqual(got.seq_lens.tolist(), lengths)
            self.assertEqual((got.query_start_loc.dtype, got.seq_lens.dtype),
                             (torch.int32, torch.int32))
            self.assertEqual((got.max_query_len, got.max_seq_len), (1, max(lengths)))
            self.assertTrue(torch.equal(got.block_table, step.table[reqs]))
            if meta.dynamic_causal is None:
                self.assertIsNone(got.dynamic_causal)
            else:
                self.assertEqual(got.dynamic_causal.tolist(),
                                 [0 if requests[r][2] else 1 for r in reqs])
            # untouched: the cache writes, the batch's causal setting, and the given metadata
            self.assertIs(got.slot_mapping, meta.slot_mapping)
            self.assertEqual(got.causal, meta.causal)
            self.assertEqual(meta.seq_lens.tolist(), [r[0] for r in requests])
            self.assertEqual(spy.call_count, 1)
            asked = spy.call_args.kwargs
            self.assertEqual({k: asked[k] for k in ("num_reqs", "num_heads", "num_kv_heads",
                                                    "head_dim", "dtype", "causal", "isa",
                                                    "sliding_window_size", "enable_kv_split",
                                                    "kv_cache_dtype")},
                             {"num_reqs": n, "num_heads": HEADS, "num_kv_heads": KV_HEADS,
                              "head_dim": HEAD, "dtype": torch.float32, "causal": meta.causal,
                              "isa": step.isa, "sliding_window_size": -1,
                              "enable_kv_split": False, "kv_cache_dtype": "auto"})
            self.assertIs(asked["seq_lens"], got.seq_lens)
            self.assertIs(asked["query_start_loc"], got.query_start_loc)
            self.assertIs(asked["dynamic_causal"], got.dynamic_causal)
            self.assertIs(got.scheduler_metadata, made[0])

    def test_the_kernel_reads_each_token_as_written_out(self):
        step = Step(REQUESTS)
        got = step.attend(invariant.per_query(step.builder, step.metadata()))
        torch.testing.assert_close(got.double(), step.reference(), rtol=1e-5, atol=1e-5)
        # vLLM's own metadata reads them the same way (the rewrite changes no answer)
        torch.testing.assert_close(step.attend(step.metadata()).double(), step.reference(),
                                   rtol=1e-5, atol=1e-5)

    def test_a_token_has_the_same_bits_cold_warm_and_beside_others(self):
        """The 20-token prompt: whole (cold), its last 8 after 12 cached (warm), and warm
        between other requests; its keys and queries the same in each step (same seed)."""
        def last_8(requests, at):
            step = Step(requests, seed=3)
            out = step.attend(invariant.per_query(step.builder, step.metadata()))
            start = sum(new for _, new, _ in requests[:at])
            return out[start + requests[at][1] - 8:start + requests[at][1]]
        cold = last_8(((20, 20, False),), 0)
        self.assertTrue(torch.equal(last_8(((20, 8, False),), 0), cold))
        beside = ((20, 8, False), (37, 30, False), (9, 9, True))
        self.assertTrue(torch.equal(last_8(beside, 0), cold))

    def test_the_builder_rewrites_decoder_steps_only(self):
        meta = Step(REQUESTS).metadata()
        empty = CPUAttentionMetadata(0, 0, meta.query_start_loc, 0, meta.seq_lens,
                                     meta.block_table, meta.slot_mapping, None)
        build = invariant.wrap_cpu_build(lambda self, prefix, common, fast: common)
        rewritten = object()
        with mock.patch.object(invariant, "per_query", return_value=rewritten) as per_query:
            for cross, encoder, given in ((True, False, meta), (False, True, meta),
                                          (False, False, empty)):
                builder = SimpleNamespace(is_cross_attention=cross,
                                          is_encoder_only_attention=encoder)
                self.assertIs(build(builder, 0, given), given)
            self.assertEqual(per_query.call_count, 0)
            decoder = SimpleNamespace(is_cross_attention=False, is_encoder_only_attention=False)
            self.assertIs(build(decoder, 0, meta, True), rewritten)
            per_query.assert_called_once_with(decoder, meta)


@unittest.skipIf(ops is None, NO_VLLM)
class TestFixedRows(unittest.TestCase):
    def setUp(self):
        self.calls = []

    def linear(self, x, weight, bias):
        self.calls.append(x.clone())
        return torch.nn.functional.linear(x, weight, bias)

    def test_rows_per_call(self):
        self.assertEqual(invariant.rows_per_call(torch.bfloat16, 4096), invariant.HALF_ROWS)
        self.assertEqual(invariant.rows_per_call(torch.float16, invariant.WIDE),
                         invariant.HALF_ROWS)
        self.assertEqual(invariant.rows_per_call(torch.bfloat16, invariant.WIDE + 1),
                         invariant.FP32_ROWS)  # the lm_head: one row per request
        self.assertEqual(invariant.rows_per_call(torch.float32, 64), invariant.FP32_ROWS)

    def test_every_call_has_the_same_number_of_rows(self):
        gen = torch.Generator().manual_seed(0)
        weight, bias = torch.randn(6, 8, generator=gen), torch.randn(6, generator=gen)
        for shape in ((2, 19, 8), (32, 8), (3, 8), (1, 8)):
            self.calls.clear()
            x = torch.randn(*shape, generator=gen)
            got = invariant.fixed_rows(self.linear, 16)(x, weight, bias)
            self.assertEqual(got.shape, (*shape[:-1], 6))
            torch.testing.assert_close(got, torch.nn.functional.linear(x, weight, bias))
            self.assertEqual([c.shape for c in self.calls], [(16, 8)] * -(-x.numel() // 128))
            flat = x.reshape(-1, 8)
            sent = torch.cat(self.calls)
            self.assertTrue(torch.equal(sent[:len(flat)], flat))  # in order, each row once
            self.assertTrue(torch.equal(sent[len(flat):], torch.zeros_like(sent[len(flat):])))

    def test_no_rows_is_one_empty_call(self):
        """fixed_rows' branch for an input of no rows: one call, an output of no rows."""
        got = invariant.fixed_rows(self.linear, 16)(torch.zeros(0, 8), torch.ones(6, 8), None)
        self.assertEqual(got.shape, (0, 6))
        self.assertEqual([c.shape for c in self.calls], [(0, 8)])

    def test_vllms_cpu_gemm_is_wrapped_at_load_its_rows_invariant(self):
        """The real UnquantizedLinearMethod on a small layer: the GEMM vLLM picked (which
        empties the weight) is called in fixed rows; a row's bits are the same alone, in a short
        batch and in a long one."""
        method = UnquantizedLinearMethod()
        load = invariant.wrap_process_weights(type(method).process_weights_after_loading)
        gen = torch.Generator().manual_seed(1)
        for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 0.1)):
            weight = torch.randn(48, 64, generator=gen).to(dtype)
            layer = torch.nn.Module()
            layer.weight = torch.nn.Parameter(weight.clone(), requires_grad=False)
            rows = mock.Mock(wraps=invariant.fixed_rows)
            with mock.patch.object(invariant, "fixed_rows", rows):
                load(method, layer)
            self.assertEqual(rows.call_args.args[1], invariant.rows_per_call(dtype, 48))
            x = torch.randn(150, 64, generator=gen).to(dtype)
            whole = layer.cpu_linear(x, layer.weight, None)
            torch.testing.assert_close(whole.double(), x.double() @ weight.double().T,
                                       rtol=tol, atol=tol)
            for start, count in ((0, 1), (5, 3), (17, 40), (100, 50), (149, 1)):
                part = layer.cpu_linear(x[start:start + count], layer.weight, None)
                self.assertTrue(torch.equal(part, whole[start:start + count]), (dtype, start))

    def test_the_rows_are_read_before_vllm_empties_the_weight(self):
        def original(method, layer):
            layer.weight = torch.empty(0, dtype=layer.weight.dtype)
            layer.cpu_linear = self.linear
        load = invariant.wrap_process_weights(original)
        for dtype, columns, rows in ((torch.bfloat16, 32, invariant.HALF_ROWS),
                                     (torch.bfloat16, invariant.WIDE + 1, invariant.FP32_ROWS),
                                     (torch.float32, 32, invariant.FP32_ROWS)):
            layer = SimpleNamespace(weight=torch.zeros(columns, 1, dtype=dtype))
            load(None, layer)
            self.calls.clear()
            layer.cpu_linear(torch.ones(3, 1, dtype=dtype), torch.ones(columns, 1, dtype=dtype),
                             None)
            self.assertEqual([c.shape[0] for c in self.calls], [rows], (dtype, columns))

    def test_layers_without_a_cpu_gemm_or_a_matrix_are_left_alone(self):
        def original(method, layer):
            layer.loaded = True
        load = invariant.wrap_process_weights(original)
        no_gemm = SimpleNamespace(weight=torch.zeros(4, 4))
        load(None, no_gemm)
        self.assertEqual(vars(no_gemm).keys(), {"weight", "loaded"})
        linear = self.linear
        for weight in (None, torch.zeros(4, 1, 4)):  # none, or a conv/MoE weight
            layer = SimpleNamespace(weight=weight, cpu_linear=linear)
            load(None, layer)
            self.assertIs(layer.cpu_linear, linear)


@unittest.skipIf(ops is None, NO_VLLM)
class TestHead(unittest.TestCase):
    def setUp(self):
        gen = torch.Generator().manual_seed(2)
        self.weight = torch.randn(40, 16, generator=gen).to(torch.bfloat16)
        self.hidden = torch.randn(5, 16, generator=gen).to(torch.bfloat16)
        self.bias = torch.randn(40, generator=gen).to(torch.bfloat16)
        self.calls = []
        self.apply = invariant.wrap_apply_head(
            lambda me, head, hidden, bias: self.calls.append((head, hidden, bias)) or "stock")

    def want(self, bias=None):
        out = self.hidden.double() @ self.weight.double().T
        return out if bias is None else out + bias.double()

    def test_an_fp32_head_is_cast_once_and_called_in_fixed_rows(self):
        me = SimpleNamespace(head_dtype=torch.float32)
        lm_head = SimpleNamespace(weight=self.weight)
        rows = mock.Mock(wraps=invariant.fixed_rows)
        with mock.patch.object(invariant, "fixed_rows", rows):
            got = self.apply(me, lm_head, self.hidden, self.bias)
            self.assertEqual(got.dtype, torch.float32)
            torch.testing.assert_close(got.double(), self.want(self.bias), rtol=1e-5, atol=1e-5)
            lm_head.weight = torch.zeros_like(self.weight)  # cast once: the first stays
            again = self.apply(me, lm_head, self.hidden, None)
        torch.testing.assert_close(again.double(), self.want(), rtol=1e-5, atol=1e-5)
        self.assertEqual(rows.call_count, 1)
        self.assertEqual(rows.call_args.args[1], invariant.FP32_ROWS)
        self.assertEqual(self.calls, [])

    def test_other_heads_run_as_vllm_runs_them(self):
        meta = self.hidden.to("meta")
        for head, hidden in ((None, self.hidden), (torch.bfloat16, self.hidden),
                             (torch.float32, meta)):
            lm_head = SimpleNamespace(weight=self.weight)
            self.assertEqual(self.apply(SimpleNamespace(head_dtype=head), lm_head, hidden,
                                        self.bias), "stock")
            self.assertIs(self.calls[-1][1], hidden)
            self.assertFalse(hasattr(lm_head, "_onepass_head"))

    def test_the_cast_falls_back_to_torch_without_onednn(self):
        x = self.hidden.float()
        via_onednn = invariant.cast_linear(self.weight, torch.float32)(x, None, self.bias.float())
        torch.testing.assert_close(via_onednn.double(), self.want(self.bias), rtol=1e-5,
                                   atol=1e-5)
        for error in (RuntimeError("no oneDNN"), AttributeError("no such op")):
            with mock.patch.object(ops, "create_onednn_mm", side_effect=error):
                linear = invariant.cast_linear(self.weight, torch.float32)
            got = linear(x, None, self.bias.float())
            want = torch.nn.functional.linear(x, self.weight.float(), self.bias.float())
            self.assertTrue(torch.equal(got, want), error)


if __name__ == "__main__":
    unittest.main()
