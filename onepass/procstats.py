"""The process's own series (Prometheus' conventional process_* names), read at scrape time.

Owns: reading this process's CPU time (os.times), resident and virtual memory (/proc/self/status),
open and allowed file descriptors (/proc/self/fd, resource) and start time (/proc/self/stat).
Where /proc is absent a series that needs it is left out (its family has no sample), never
guessed; CPU time, the fd limit and the start time still come from os and resource.
Never: counts requests (telemetry.py) or renders text (metrics.py).
"""
from __future__ import annotations

import os
import time

try:
    import resource
except ImportError:  # not on every platform; the fd limit is then left out
    resource = None

PROC = "/proc"  # tests point it elsewhere to see the fallbacks
IMPORTED_AT = time.time()  # start time where /proc is absent: the shim imports this at start-up


def _proc_file(name: str) -> str | None:
    try:
        with open(f"{PROC}/{name}", encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def cpu_seconds() -> dict:
    t = os.times()
    return {(): t.user + t.system}


def memory() -> dict:
    """{"rss"|"vms": bytes} from /proc/self/status (VmRSS, VmSize in kB); {} without /proc."""
    text, out = _proc_file("self/status") or "", {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmSize") and rest.split():
            out["rss" if key == "VmRSS" else "vms"] = int(rest.split()[0]) * 1024
    return out


def open_fds() -> dict:
    for where in (f"{PROC}/self/fd", "/dev/fd"):
        try:
            return {(): len(os.listdir(where))}
        except OSError:
            continue
    return {}


def max_fds() -> dict:
    if resource is None:
        return {}
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return {} if soft == resource.RLIM_INFINITY else {(): soft}


def start_time() -> dict:
    """Boot time (/proc/stat btime) plus the process's start in clock ticks (field 22 of
    /proc/self/stat, counted after the command name, which may hold spaces and parentheses)."""
    stat, boot = _proc_file("self/stat"), _proc_file("stat")
    try:
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        btime = next(int(line.split()[1]) for line in boot.splitlines()
                     if line.startswith("btime "))
        return {(): btime + ticks / os.sysconf("SC_CLK_TCK")}
    except (AttributeError, IndexError, ValueError, StopIteration, OSError):
        return {(): IMPORTED_AT}


def register(registry) -> None:
    registry.counter("process_cpu_seconds_total", "user and system CPU time of the shim's "
                     "process, in seconds", read=cpu_seconds)
    for key, name, what in (("rss", "resident_memory", "resident memory (VmRSS)"),
                            ("vms", "virtual_memory", "virtual memory (VmSize)")):
        registry.gauge(f"process_{name}_bytes", f"the shim's {what} in bytes",
                       read=lambda key=key: {(): v for k, v in memory().items() if k == key})
    registry.gauge("process_open_fds", "file descriptors the shim has open", read=open_fds)
    registry.gauge("process_max_fds", "the most file descriptors the shim may open (its soft "
                   "limit)", read=max_fds)
    registry.gauge("process_start_time_seconds", "when the shim's process started, in Unix "
                   "time", read=start_time)
