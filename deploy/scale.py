"""Start N onepass stacks (serve.sh each: its own vLLM and shim) behind HAProxy on loopback, and
stop them cleanly.

Usage: python3 deploy/scale.py --servers 2 [--port 8750] [--log-dir logs/scale]
  HAProxy listens on --port; stack i (1..N) has its shim on port+2i-1 and its vLLM on port+2i
  (the default keeps clear of a quick-start serve.sh on 8741/8742; a port already taken is an
  error before anything starts),
  and logs under <log-dir>/s<i>.<run>/ (serve.log, vllm.log, shim.log); HAProxy's own log
  (one line per request and per server state change) and rendered config are in <log-dir>/.
  Prints its own PID first (`scale.py: pid N`, for the signals below), then sets up once
  (`serve.sh --setup-only`: the venv, the model; its output shown) before any stack starts, so
  the stacks share a venv and cache already set up (serve.sh also locks its setup), then
  `onepass balanced: http://127.0.0.1:<port> (...)` once every stack is warm and in the
  balancer's rotation.
  --one-gpu-each: stack i gets CUDA_VISIBLE_DEVICES=i-1, one pair per GPU (unmeasured: this
  machine has no GPU).
  SIGHUP: a rolling restart, one stack at a time, each back in rotation before the next stops.
  SIGTERM or Ctrl-C: the balancer stops taking connections and finishes what it has, then
  every stack drains and stops; each process is stopped by its own PID.
serve.sh's other settings come from the environment (ONEPASS_VENV, ONEPASS_PROFILE, ...);
ONEPASS_PORT, ONEPASS_VLLM_PORT and ONEPASS_LOG_DIR are set per stack.
What the balancer does and why: docs/production.md. Standard library only.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster import ROOT, Cluster  # noqa: E402


def in_use(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def set_up_once(env: dict, stop: threading.Event) -> bool:
    """serve.sh --setup-only, its output on ours: whether it set up (a stop ends it)."""
    print("scale.py: setting up once (serve.sh --setup-only), then starting the stacks",
          flush=True)
    setup = subprocess.Popen(["bash", str(ROOT / "serve.sh"), "--setup-only"], env=env, cwd=ROOT)
    while setup.poll() is None:
        if stop.wait(0.5):
            setup.terminate()
            setup.wait()
            return False
    if setup.returncode != 0:
        print(f"scale.py: error: serve.sh --setup-only exited {setup.returncode} (see above)",
              file=sys.stderr, flush=True)
    return setup.returncode == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=2, help="stacks to start (default 2)")
    ap.add_argument("--port", type=int, default=8750, help="the balancer's port (default 8750)")
    ap.add_argument("--log-dir", type=Path, default=ROOT / "logs" / "scale")
    ap.add_argument("--ready-timeout-s", type=float, default=900)
    ap.add_argument("--one-gpu-each", action="store_true",
                    help="stack i sees only GPU i-1 (CUDA_VISIBLE_DEVICES); never run here")
    args = ap.parse_args(argv)
    if args.servers < 1:
        ap.error("--servers must be at least 1")
    ports = [(args.port + 2 * i + 1, args.port + 2 * i + 2) for i in range(args.servers)]
    taken = [p for p in (args.port, *(p for pair in ports for p in pair)) if in_use(p)]
    if taken:
        ap.error(f"ports {taken} are in use on 127.0.0.1 (another serve.sh or balancer?): "
                 f"choose another --port")
    print(f"scale.py: pid {os.getpid()}", flush=True)
    gpus = [{"CUDA_VISIBLE_DEVICES": str(i)} for i in range(args.servers)]
    cluster = Cluster(ports, args.port, args.log_dir,
                      stack_env=gpus if args.one_gpu_each else None)
    stop, roll = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: roll.set())
    code = 0
    try:
        if not set_up_once(cluster.env, stop):
            return 0 if stop.is_set() else 1  # stopped while setting up: nothing started
        cluster.start_balancer()
        print(f"scale.py: balancer on {cluster.url} (log {args.log_dir}/haproxy.log); "
              f"starting {args.servers} stacks", flush=True)
        starting = threading.Thread(target=cluster.start_all, args=(args.ready_timeout_s,),
                                    daemon=True)
        starting.start()
        while starting.is_alive() and not stop.wait(0.5):
            pass
        if not stop.is_set():
            for s in cluster.stacks:  # a stack that failed to start has raised in the thread
                if not s.ready.is_set():
                    raise RuntimeError(f"{s.name} did not get ready; see {s.log_dir}")
            names = ", ".join(f"{s.name} {s.url}" for s in cluster.stacks)
            print(f"onepass balanced: {cluster.url} ({args.servers} servers: {names})",
                  flush=True)
        while not stop.wait(0.5):
            if roll.is_set():
                roll.clear()
                print("scale.py: rolling restart", flush=True)
                codes = cluster.roll(args.ready_timeout_s)
                print(f"scale.py: rolling restart done (serve.sh exit codes {codes})",
                      flush=True)
            for s in cluster.stacks:
                if s.proc and s.proc.poll() is not None and not getattr(s, "reported", False):
                    s.reported = True  # the balancer has taken it out; say so once
                    print(f"scale.py: {s.name} exited {s.proc.returncode}; see {s.log_dir}",
                          flush=True)
    except RuntimeError as e:
        print(f"scale.py: error: {e}", file=sys.stderr, flush=True)
        code = 1
    finally:
        print("scale.py: stopping (balancer, then each stack)", flush=True)
        cluster.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
