"""The same request, the same answer, on the dtype serve.sh ships on this CPU
(tools/serve/cpu_dtype.py's choice, not the fp32 the other live tests pin when it differs): fresh
requests with every read kind, a number question and, for some, thoughts (reasoning on, trace)
answered alone with a cold prefix cache, then beside background requests of other shapes, then
again warm: byte-identical answers and thoughts. bench/measure/determinism.py runs the same loop
over 200 pairs and more."""
import sys

import pytest

from tests.support.live_stack import ROOT

sys.path.insert(0, str(ROOT / "bench" / "measure"))
import determinism  # noqa: E402


def test_the_same_request_gets_the_same_answer_alone_loaded_and_warm(shipped):
    stack, dtype = shipped
    got = determinism.compare(stack.url, requests=2, reasoning_every=2, first=7000)
    assert got["pairs"] == 4  # the first request thinks (with a trace), the second does not
    assert got["differing"] == 0, (dtype, got)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fixed_row_gemm_gives_a_row_the_same_bits_at_any_place(dtype):
    """The engine plugin's GEMM (vLLM's CPU linear called in fixed rows, invariant.py): a slice
    of a batch comes out with the bits it has inside the batch, for SmolLM2's projection and
    head shapes, in both dtypes. Called plainly, oneDNN's GEMM broke this on an AMX CPU in bf16
    and fp32 (bench/measure/kernel_invariance.py; docs/determinism.md)."""
    import torch
    from onepass_engine.invariant import cast_linear, fixed_rows, rows_per_call
    torch.manual_seed(0)
    dt = getattr(torch, dtype)
    for k, n in ((576, 960), (576, 3072), (1536, 576), (576, 49152)):
        # vLLM's oneDNN GEMM where it can build one for the dtype here, else torch's linear
        plain = cast_linear(torch.randn(n, k, dtype=dt) * 0.05, dt)
        gemm = fixed_rows(plain, rows_per_call(dt, n))
        x = torch.randn(300, k, dtype=dt)
        whole, direct = gemm(x, None, None), plain(x, None, None).float()
        assert whole.shape == (300, n)  # the same product as one plain call, to rounding:
        gap = (whole.float() - direct).abs().max()  # one output ulp of the largest entry
        assert gap <= torch.finfo(dt).eps * direct.abs().max(), (dtype, k, n, float(gap))
        for at, m in ((0, 1), (1, 1), (5, 3), (17, 16), (31, 40), (100, 64), (233, 67)):
            assert torch.equal(gemm(x[at:at + m], None, None), whole[at:at + m]), \
                (dtype, k, n, at, m)
