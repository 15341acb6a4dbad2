#!/usr/bin/env python3
"""What one CPU profile needs: the first start's time (setup, then start and warm-up), the disk
it fills and the RAM the running stack holds, as `bash serve.sh` serves it.

Usage: python3 bench/measure/requirements.py --profile NAME [--cold] [--cpu native|avx2]
         [--keep DIR]
--cold: a first start with nothing set up: serve.sh's venv, model cache and pip's cache all in a
fresh folder (ONEPASS_VENV, ONEPASS_CACHE, PIP_CACHE_DIR), so it creates the venv, fetches and
builds the model, then starts (PIP_FIND_LINKS, when set, still serves wheels from its folder:
the figure says so). Without --cold: the machine's venv and model cache (set up before), so
only the start and warm-up are timed. --cpu avx2 serves as a CPU with AVX2 only would
(ATEN_CPU_CAPABILITY=avx2, and fp32, serve.sh's dtype there: docs/testing.md).
Once ready, the runbook smoke for the profile's kind runs (bench/measure/runbook_smoke.py:
jevbench for a text profile, imagejevbench-box for a vision one) and then the stack's memory
is read from /proc (bench/measure/stack_memory.py's PSS, summed over vLLM's and the shim's
process trees, and their RSS peaks). serve.sh is then stopped (SIGTERM) and the fresh folder
removed unless --keep (disk is measured on a --cold run only: the fresh folder holds this
profile's venv and builds alone). Prints serve.sh's phase lines as they come and one JSON line
at the end.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "bench" / "measure")]
import stack_memory  # noqa: E402
from tests.support.live_stack import free_port  # noqa: E402
from tests.support.tape_compare import machine  # noqa: E402

PHASE = re.compile(r"^serve\.sh: (setup|verify|start vLLM|start shim|warm-up): done.* in "
                   r"([\d.]+) s")
PID = re.compile(r"^serve\.sh: start (vLLM|shim): done \(pid (\d+)")
VISION = {"idefics3-tiny", "idefics3-grounding", "idefics3-grounding-yxyx"}


def du_bytes(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True)
    return int(out.stdout.split()[0]) if out.returncode == 0 and out.stdout else 0


def memory(pids: dict) -> dict:
    """MiB per process tree: PSS now, RSS peaks summed (stack_memory.py's reading)."""
    out = {}
    for name, pid in pids.items():
        _, pss, _, peak = stack_memory.held_kib(pid) or (0, 0, 0, 0)
        out[name] = {"pss_mib": round(pss / 1024), "rss_peaks_mib": round(peak / 1024)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", required=True)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--cpu", choices=("native", "avx2"), default="native")
    ap.add_argument("--keep", help="the fresh folder of a --cold run, kept here")
    args = ap.parse_args(argv)
    fresh = Path(args.keep or tempfile.mkdtemp(prefix="onepass-requirements-"))
    port = free_port()
    env = {**os.environ, "ONEPASS_PROFILE": args.profile, "ONEPASS_DEVICE": "cpu",
           "ONEPASS_PORT": str(port), "ONEPASS_VLLM_PORT": str(free_port()),
           "ONEPASS_LOG_DIR": str(fresh / "logs")}
    if args.cold:
        env.update(ONEPASS_VENV=str(fresh / "venv"), ONEPASS_CACHE=str(fresh / "cache"),
                   PIP_CACHE_DIR=str(fresh / "pip"))
    if args.cpu == "avx2":
        env.update(ATEN_CPU_CAPABILITY="avx2", ONEPASS_DTYPE="float32")
    venv = Path(env.get("ONEPASS_VENV") or ROOT / ".venv")
    cache = Path(env.get("ONEPASS_CACHE") or Path.home() / ".cache" / "onepass")
    began = time.monotonic()
    serve = subprocess.Popen(["bash", str(ROOT / "serve.sh")], env=env, cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
    phases, pids, ready, tail = {}, {}, None, []
    try:
        for line in serve.stdout:
            tail = (tail + [line])[-20:]
            if m := PHASE.match(line):
                phases[m.group(1)] = float(m.group(2))
                print(f"{time.monotonic() - began:7.1f} {line.rstrip()}", flush=True)
            if m := PID.match(line):
                pids[m.group(1).split()[-1]] = int(m.group(2))
            if line.startswith("onepass ready:"):
                ready = round(time.monotonic() - began, 1)
                print(f"{ready:7.1f} {line.rstrip()}", flush=True)
                break
        if ready is None:
            sys.stderr.write("".join(tail) + "requirements: serve.sh ended before ready\n")
            return 1
        smoke = "imagejevbench-box" if args.profile in VISION else "jevbench"
        ran = subprocess.run([sys.executable, str(ROOT / "bench/measure/runbook_smoke.py"),
                              smoke, "--url", f"http://127.0.0.1:{port}"],
                             capture_output=True, text=True)
        print(ran.stdout.strip().splitlines()[-1] if ran.stdout.strip() else ran.stderr[-500:])
        held = memory(pids)
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(120)
    models = sorted(p.name for p in (cache / "models").glob("*"))  # none: no such folder
    result = {"profile": args.profile, "cpu": args.cpu, "cold": args.cold,
              "flags": machine("")["isa"],  # the CPU flags that pick the kernels
              "ready_s": ready, "phases_s": phases,
              "smoke_ok": ran.returncode == 0, "memory": held,
              "pss_total_mib": sum(m["pss_mib"] for m in held.values()),
              "disk_gb": {"venv": round(du_bytes(venv) / 1e9, 2),
                          **{f"model {m}": round(du_bytes(cache / "models" / m) / 1e9, 2)
                             for m in models}} if args.cold else {}}
    print(json.dumps(result))
    if not args.keep:
        shutil.rmtree(fresh, ignore_errors=True)
    return 0 if ran.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
