"""Stdlib tests of the start-up tools serve.sh runs (tools/)."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "serve"))
import cpu_dtype  # noqa: E402

AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu avx2\n"
SAPPHIRE = "flags\t\t: avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
ZEN4 = "flags\t\t: avx2 avx512f avx512_bf16\n"


class CpuDtypeTest(unittest.TestCase):
    def test_native_bf16_only_where_the_cpu_has_it(self):
        """cpu_dtype: fp32 on AVX2-only CPUs whatever is measured; with avx512_bf16 or amx_bf16,
        bf16 only if it measures BF16_MARGIN x fp32's rate (the flag decides without torch)."""
        fast, slow = {"bfloat16": 2.2e11, "float32": 1e11}, {"bfloat16": 1.36e11, "float32": 2.5e11}
        def unmeasured():
            raise AssertionError("an AVX2-only CPU is not measured: bf16 would be emulated")
        avx2, zen4 = cpu_dtype.cpu_flags(AVX2), cpu_dtype.cpu_flags(ZEN4)
        self.assertEqual(cpu_dtype.choose("auto", avx2, unmeasured)[0], "float32")
        same = lambda: True  # noqa: E731  (vLLM's bf16 GEMM row-invariant on that CPU)
        self.assertEqual(cpu_dtype.choose("auto", zen4, lambda: fast, same)[0], "bfloat16")
        dtype, why = cpu_dtype.choose("auto", cpu_dtype.cpu_flags(SAPPHIRE), lambda: fast, same)
        self.assertEqual(dtype, "bfloat16")
        self.assertIn("amx_bf16", why)
        dtype, why = cpu_dtype.choose("auto", cpu_dtype.cpu_flags(ZEN4), lambda: slow)
        self.assertEqual(dtype, "float32")
        self.assertIn("136 GFLOP/s in bf16, 250 in fp32", why)
        dtype, why = cpu_dtype.choose("auto", zen4, lambda: fast, lambda: False)
        self.assertEqual(dtype, "float32")  # faster, but answers would move with load
        self.assertIn("row", why)
        tie = {"bfloat16": 1.1e11, "float32": 1e11}  # under the margin: no flip between restarts
        self.assertEqual(cpu_dtype.choose("auto", zen4, lambda: tie)[0], "float32")
        dtype, why = cpu_dtype.choose("auto", cpu_dtype.cpu_flags(ZEN4), lambda: None)
        self.assertEqual(dtype, "bfloat16")
        self.assertIn("not measured", why)

    def test_the_tool_measures_with_torch_and_falls_back_without(self):
        """cpu_dtype.main: without torch (this stdlib interpreter) a native-bf16 cpuinfo gets
        bf16 by its flag; an AVX2 one fp32 without measuring."""
        import io, contextlib, tempfile, os
        for info, want in ((ZEN4, "bfloat16"), (AVX2, "float32")):
            with tempfile.NamedTemporaryFile("w", suffix=".cpuinfo", delete=False) as f:
                f.write(info)
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    self.assertEqual(cpu_dtype.main(["auto", f.name]), 0)
            finally:
                os.unlink(f.name)
            dtype, why = out.getvalue().splitlines()
            if info == AVX2:
                self.assertEqual(dtype, want)
                continue
            try:
                import torch  # noqa: F401  (under coverage in the venv: measured, either dtype)
                self.assertIn("GFLOP/s", why)
            except ImportError:
                self.assertEqual((dtype, "not measured" in why), (want, True))

    def test_override_and_refusal(self):
        """cpu_dtype: ONEPASS_DTYPE wins over the flags; anything else is refused."""
        self.assertEqual(cpu_dtype.choose("float32", cpu_dtype.cpu_flags(ZEN4))[0], "float32")
        self.assertEqual(cpu_dtype.choose("bfloat16", set())[0], "bfloat16")
        with self.assertRaises(ValueError):
            cpu_dtype.choose("fp16", set())


if __name__ == "__main__":
    unittest.main()
