"""Stdlib tests of the start-up tools serve.sh runs (tools/)."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import cpu_dtype  # noqa: E402

AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu avx2\n"
SAPPHIRE = "flags\t\t: avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
ZEN4 = "flags\t\t: avx2 avx512f avx512_bf16\n"


class CpuDtypeTest(unittest.TestCase):
    def test_native_bf16_only_where_the_cpu_has_it(self):
        """cpu_dtype: bf16 with avx512_bf16 or amx_bf16, fp32 on AVX2-only CPUs."""
        self.assertEqual(cpu_dtype.choose("auto", cpu_dtype.cpu_flags(AVX2))[0], "float32")
        self.assertEqual(cpu_dtype.choose("auto", cpu_dtype.cpu_flags(ZEN4))[0], "bfloat16")
        dtype, why = cpu_dtype.choose("auto", cpu_dtype.cpu_flags(SAPPHIRE))
        self.assertEqual(dtype, "bfloat16")
        self.assertIn("amx_bf16", why)

    def test_override_and_refusal(self):
        """cpu_dtype: ONEPASS_DTYPE wins over the flags; anything else is refused."""
        self.assertEqual(cpu_dtype.choose("float32", cpu_dtype.cpu_flags(ZEN4))[0], "float32")
        self.assertEqual(cpu_dtype.choose("bfloat16", set())[0], "bfloat16")
        with self.assertRaises(ValueError):
            cpu_dtype.choose("fp16", set())


if __name__ == "__main__":
    unittest.main()
