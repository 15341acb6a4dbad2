"""The dtype serve.sh gives vLLM on a CPU.

Usage: PY tools/serve/cpu_dtype.py [auto|float32|bfloat16] [CPUINFO]   prints the dtype, then why
`auto`: fp32 on CPUs without native bf16 (no avx512_bf16 or amx_bf16 flag in /proc/cpuinfo: bf16
would be emulated); on CPUs with it, bf16 only if torch's matmuls in bf16 measure at least
BF16_MARGIN x their fp32 rate here and now (about 2 s). The flag alone does not decide: on the
reporter's AVX-512 EPYC bf16 was 1.6-2.2x faster, on this project's avx512_bf16 Xeon it was slower
than fp32 (docs/measured.md, bench/measure/engine_options.sh). Without torch (python3 outside the
venv) the flag decides. bf16 also needs vLLM's bf16 GEMM, as the engine plugin calls it (in fixed
rows), to be row-invariant here (the same bits for a row whatever the batch), else answers would
move with load. ONEPASS_DTYPE (serve.sh) overrides `auto`. Standard library, torch if present.
"""
import sys

NATIVE_BF16 = ("avx512_bf16", "amx_bf16")
DTYPES = ("float32", "bfloat16")
BF16_MARGIN = 1.2  # a near tie stays fp32, so restarts do not flip the dtype (and the answers)
PREFILL_SHAPES = ((1024, 576, 1536), (1024, 1536, 576))  # tokens x in @ in x out, SmolLM2's MLP


def matmul_rate(dtype: str, shapes=PREFILL_SHAPES, seconds: float = 0.5) -> float:
    """The best FLOP/s of torch matmuls of these shapes on every core (needs torch)."""
    import time
    import os
    import torch
    torch.set_num_threads(os.cpu_count())
    dt, best = getattr(torch, dtype), 0.0
    for tokens, k, n in shapes:
        a, b = torch.randn(tokens, k, dtype=dt), torch.randn(k, n, dtype=dt)
        for _ in range(3):
            a @ b
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            a @ b
            count += 1
        best = max(best, count * 2 * tokens * k * n / (time.perf_counter() - start))
    return best


def cpu_flags(cpuinfo: str) -> set[str]:
    """The union of every processor's `flags` line."""
    flags = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags.update(value.split())
    return flags


def choose(requested: str, flags: set[str], measure=None, invariant=None) -> tuple[str, str]:
    """(dtype, reason). `measure()`: FLOP/s per dtype, or None where they cannot be measured
    (default measured_rates); called only where the flags leave the choice open. `invariant()`:
    whether vLLM's bf16 GEMM is row-invariant here (default bf16_rows_invariant)."""
    if requested in DTYPES:
        return requested, f"ONEPASS_DTYPE={requested}"
    if requested != "auto":
        raise ValueError(f"ONEPASS_DTYPE must be auto, float32 or bfloat16, not {requested!r}")
    native = ", ".join(sorted(flags.intersection(NATIVE_BF16)))
    if not native:
        return "float32", "the CPU has no native bf16 (no avx512_bf16 or amx_bf16): fp32 is faster"
    rates = (measure or measured_rates)()
    if rates is None:
        return "bfloat16", f"the CPU computes bf16 natively ({native}); not measured (no torch)"
    bf16, fp32 = rates["bfloat16"] / 1e9, rates["float32"] / 1e9
    measured = f"matmuls {bf16:.0f} GFLOP/s in bf16, {fp32:.0f} in fp32"
    if bf16 >= BF16_MARGIN * fp32:
        if not (invariant or bf16_rows_invariant)():
            return "float32", (f"native bf16 ({native}) and faster here ({measured}), but "
                               "vLLM's bf16 GEMM gives a row other bits when the batch has "
                               "more rows: answers would move with load")
        return "bfloat16", f"native bf16 ({native}), faster here and row-invariant: {measured}"
    return "float32", f"native bf16 ({native}) but not {BF16_MARGIN}x faster here: {measured}"


def bf16_rows_invariant(places=((0, 1), (5, 3), (17, 40), (100, 67), (233, 16))) -> bool:
    """Whether the bf16 GEMM as vLLM computes it under the onepass_batch_invariant entry point
    (oneDNN where it can build one, else torch's linear, in fixed rows: invariant.py) gives
    every row the same bits at any place in any batch: the condition for answers that
    do not move with what shares an engine step. Called plainly, oneDNN's bf16 GEMM on an AMX
    CPU did not (docs/determinism.md)."""
    import torch
    from onepass_engine.invariant import cast_linear, fixed_rows, rows_per_call
    torch.manual_seed(0)
    w = torch.randn(1536, 576, dtype=torch.bfloat16)
    x = torch.randn(300, 576, dtype=torch.bfloat16)
    gemm = fixed_rows(cast_linear(w, torch.bfloat16), rows_per_call(torch.bfloat16, 1536))
    whole = gemm(x, None, None)
    return all(torch.equal(gemm(x[at:at + m], None, None), whole[at:at + m])
               for at, m in places)


def measured_rates() -> dict | None:
    try:
        return {dtype: matmul_rate(dtype) for dtype in DTYPES}
    except ImportError:
        return None


def main(argv: list[str]) -> int:
    requested = argv[0] if argv else "auto"
    path = argv[1] if len(argv) > 1 else "/proc/cpuinfo"
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            flags = cpu_flags(f.read())
    except OSError:
        flags = set()
    try:
        dtype, reason = choose(requested, flags)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    print(dtype)
    print(reason)
    return 0


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # usage, and nothing run
        sys.exit(print(__doc__))
    sys.exit(main(sys.argv[1:]))
