"""Start the onepass image the way deploy/k8s.yaml runs it, time each start, and send it the
README's example request.

Usage: python3 bench/measure/image_smoke.py --image localhost/onepass:0.1.0-vllm0.32.0-cpu
           [--port 8861] [--starts 2] [--volume onepass-smoke-home] [--json out.json]
Each start is `podman run` on the host network with the shim on 127.0.0.1:PORT and vLLM on
PORT+1, as user 10001 with a read-only root file system, every capability dropped, no new
privileges, /tmp a tmpfs, a 2 GB /dev/shm and a named volume at /home/onepass (logs, caches):
the pod's securityContext and volumes. The first start gets the volume fresh, later starts reuse
it (a container restart in a pod keeps its emptyDir). Per start it prints, in seconds from
`podman run`: the shim listening (`/health?live=1` 200: the startupProbe's moment), ready
(`/health` 200) and serve.sh's ready line; then the README example's answer and its latency,
the container's memory, and the stop (SIGTERM: drain, then vLLM) with its exit code.
Exit 1 when a start fails or the answer is not the README's shape. ONEPASS_PODMAN_ARGS (podman's
global flags) and ONEPASS_PODMAN_RUN_ARGS (`podman run` flags) as for deploy/build_image.sh.
Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "lib"))
import shim_auth  # noqa: E402
GLOBAL = shlex.split(os.environ.get("ONEPASS_PODMAN_ARGS", ""))
RUN = shlex.split(os.environ.get("ONEPASS_PODMAN_RUN_ARGS", ""))


def readme_example() -> dict:
    """The body of the README's first curl to /v1/systemone."""
    text = (ROOT / "README.md").read_text()
    m = re.search(r"curl -s http://127\.0\.0\.1:8741/v1/systemone .*?-d '(.*?)'\n", text, re.S)
    return json.loads(m.group(1))


def get(url: str, timeout: float = 2) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def podman(*args: str, check: bool = True) -> str:
    out = subprocess.run(["podman", *GLOBAL, *args], capture_output=True, text=True)
    if check and out.returncode:
        raise RuntimeError(f"podman {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout.strip()


def one_start(args, name: str, t0: float) -> dict:
    """One container from `podman run` to stopped; the times in seconds from t0."""
    base = f"http://127.0.0.1:{args.port}"
    podman("run", "-d", *RUN, "--name", name, "--network", "host", "--user", "10001:10001",
           "--read-only", "--tmpfs", "/tmp", "--cap-drop", "ALL",
           "--security-opt", "no-new-privileges", "--shm-size", "2g",
           "-v", f"{args.volume}:/home/onepass", "-e", "ONEPASS_HOST=127.0.0.1",
           "-e", f"ONEPASS_PORT={args.port}", "-e", f"ONEPASS_VLLM_PORT={args.port + 1}",
           args.image)
    seen: dict = {}
    logs = subprocess.Popen(["podman", *GLOBAL, "logs", "-f", name], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)

    def read():
        for line in logs.stdout:
            print("  | " + line.rstrip(), flush=True)
            if line.startswith("onepass ready:"):
                seen.setdefault("ready_line_s", round(time.monotonic() - t0, 1))
    threading.Thread(target=read, daemon=True).start()
    deadline = t0 + args.timeout_s
    while "ready_s" not in seen and time.monotonic() < deadline:
        if podman("inspect", "-f", "{{.State.Running}}", name) != "true":
            break
        if "live_s" not in seen and get(base + "/health?live=1") == 200:
            seen["live_s"] = round(time.monotonic() - t0, 1)
        if get(base + "/health") == 200:
            seen["ready_s"] = round(time.monotonic() - t0, 1)
        time.sleep(0.5)
    if "ready_s" in seen:
        started = time.monotonic()
        req = urllib.request.Request(base + "/v1/systemone", json.dumps(readme_example()).encode(),
                                     shim_auth.headers())
        with urllib.request.urlopen(req, timeout=120) as r:
            seen["answer"] = json.loads(r.read())
        seen["answer_ms"] = round((time.monotonic() - started) * 1000)
        stats = podman("stats", "--no-stream", "--format", "{{.MemUsage}}", name, check=False)
        seen["memory"] = stats
    started = time.monotonic()
    podman("stop", "-t", "60", name, check=False)
    seen["stop_s"] = round(time.monotonic() - started, 1)
    seen["exit_code"] = podman("inspect", "-f", "{{.State.ExitCode}}", name, check=False)
    logs.wait(timeout=10)
    podman("rm", name, check=False)
    return seen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", required=True)
    ap.add_argument("--port", type=int, default=8861, help="the shim's port; vLLM's is PORT+1")
    ap.add_argument("--starts", type=int, default=2, help="the first fresh, then cached")
    ap.add_argument("--volume", default="onepass-smoke-home")
    ap.add_argument("--timeout-s", type=float, default=1200)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    podman("volume", "rm", "-f", args.volume, check=False)
    podman("volume", "create", args.volume)
    runs, ok = [], True
    for i in range(args.starts):
        kind = "fresh" if i == 0 else "cached"
        print(f"image_smoke: start {i + 1} ({kind} /home/onepass volume)", flush=True)
        seen = one_start(args, f"onepass-smoke-{i + 1}", time.monotonic())
        seen["start"] = kind
        answers = seen.get("answer", {}).get("answers", {})
        good = {"refund", "team", "anger"} <= set(answers)
        ok = ok and good and seen.get("exit_code") == "0"
        print(f"image_smoke: start {i + 1} ({kind}): shim listening {seen.get('live_s')} s, "
              f"ready {seen.get('ready_s')} s, ready line {seen.get('ready_line_s')} s; "
              f"README example {'answered' if good else 'NOT answered'} in "
              f"{seen.get('answer_ms')} ms; memory {seen.get('memory')}; stopped in "
              f"{seen['stop_s']} s, exit {seen.get('exit_code')}", flush=True)
        if good:
            print(json.dumps(seen["answer"]), flush=True)
        runs.append(seen)
    podman("volume", "rm", "-f", args.volume, check=False)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    print(f"image_smoke: {'OK' if ok else 'FAILED'}: {len(runs)} starts of {args.image}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
