"""The dtype serve.sh gives vLLM on a CPU (standard library only).

Usage: python3 tools/cpu_dtype.py [auto|float32|bfloat16] [CPUINFO]   prints the dtype, then why
bf16 where the CPU computes it natively (the avx512_bf16 or amx_bf16 flag in /proc/cpuinfo),
fp32 elsewhere: AVX2-only CPUs emulate bf16 and run it slower than fp32. Measured in the README
(bench/latency.py, both dtypes). ONEPASS_DTYPE (serve.sh) overrides `auto`.
"""
import sys

NATIVE_BF16 = ("avx512_bf16", "amx_bf16")
DTYPES = ("float32", "bfloat16")


def cpu_flags(cpuinfo: str) -> set[str]:
    """The union of every processor's `flags` line."""
    flags = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags.update(value.split())
    return flags


def choose(requested: str, flags: set[str]) -> tuple[str, str]:
    """(dtype, reason)."""
    if requested in DTYPES:
        return requested, f"ONEPASS_DTYPE={requested}"
    if requested != "auto":
        raise ValueError(f"ONEPASS_DTYPE must be auto, float32 or bfloat16, not {requested!r}")
    native = sorted(flags.intersection(NATIVE_BF16))
    if native:
        return "bfloat16", f"the CPU computes bf16 natively ({', '.join(native)})"
    return "float32", "the CPU has no native bf16 (no avx512_bf16 or amx_bf16): fp32 is faster"


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
    sys.exit(main(sys.argv[1:]))
