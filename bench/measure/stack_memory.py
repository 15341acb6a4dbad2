#!/usr/bin/env python3
"""The memory a running stack holds: for each process given and every process below it, its
proportional set now (Pss: a page shared by n processes counts 1/n in each, so the sum is what
the tree holds), its resident set now (VmRSS, shared pages in every process that maps them) and
its peak (VmHWM, the kernel's high-water mark of VmRSS), summed per tree, read from /proc.
Standard library only; Linux.

Usage: python3 bench/measure/stack_memory.py [--label NAME=PID ...]
    e.g. --label vllm=$(pgrep -f 'vllm.entrypoints' | head -1) --label shim=<shim pid>
Prints one line per tree (its processes, PSS and RSS now, the sum of their RSS peaks) and the
total. PSS is what the machine must have for the tree now; the RSS peaks, summed, bound it from
above at the tree's worst moment (shared pages counted in each process, and each process's
peak perhaps at another time).
"""
import argparse
import sys
from pathlib import Path


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        out += [int(c) for c in text.split()]
    return out


def tree(pid: int) -> list[int]:
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in seen or not Path(f"/proc/{p}").exists():
            continue
        seen.append(p)
        todo += children(p)
    return seen


def status_kib(pid: int, field: str, name: str = "status") -> int:
    for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def held_kib(pid: int) -> tuple[int, int, int, int] | None:
    """(processes, PSS now, RSS now, RSS peaks summed) in KiB of a process and everything
    below it; None when there is no such process."""
    pids = tree(pid)
    if not pids:
        return None
    return (len(pids), sum(status_kib(p, "Pss", "smaps_rollup") for p in pids),
            sum(status_kib(p, "VmRSS") for p in pids), sum(status_kib(p, "VmHWM") for p in pids))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--label", action="append", default=[], metavar="NAME=PID",
                    help="a process (and everything below it) to count, by a name")
    args = ap.parse_args(argv)
    total_pss = total_now = total_peak = 0
    for item in args.label:
        name, _, pid = item.partition("=")
        held = held_kib(int(pid))
        if held is None:
            print(f"{name}: no process {pid}", file=sys.stderr)
            return 1
        processes, pss, now, peak = held
        total_pss, total_now, total_peak = total_pss + pss, total_now + now, total_peak + peak
        print(f"{name}: {processes} processes, PSS {pss / 1024:,.0f} MiB now, RSS "
              f"{now / 1024:,.0f} MiB now, RSS peaks summed {peak / 1024:,.0f} MiB")
    print(f"total: PSS {total_pss / 1024:,.0f} MiB now, RSS {total_now / 1024:,.0f} MiB now, "
          f"RSS peaks summed {total_peak / 1024:,.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
