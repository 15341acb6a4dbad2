"""How long a shim takes from its start to `/health` 200 against a vLLM that is already up: the
start-up checks (probes.learn) and the warm-up, without vLLM's own load.

Usage: python3 bench/measure/shim_ready.py --vllm http://127.0.0.1:8742 [--starts 4]
         [--root DIR ...]
Each --root is a checkout of onepass (default: this one), e.g. a `git worktree` of an older
commit to compare with; the starts alternate between them (root 1, root 2, root 1, ...), each
shim on a new free port with the machine's python3 -S (as the stdlib tests run it), its
profile file and the default profile, and is stopped (SIGTERM, it drains) before the next one
starts. Prints each root's seconds per start and their median, then one JSON line. Used for
docs/production.md ("Health semantics a balancer needs": the warm-up).
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.support.live_stack import ROOT, free_port  # noqa: E402


def start_to_ready(root: Path, vllm: str) -> float:
    port, log = free_port(), tempfile.TemporaryFile()
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-S", str(root / "shim.py"), "--vllm", vllm,
                             "--port", str(port), "--config", str(root / "serve_config.json")],
                            stdout=subprocess.DEVNULL, stderr=log, cwd=root)
    try:
        while proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        return time.monotonic() - started
            except OSError:  # not listening yet, or 503 while it warms
                pass
            time.sleep(0.05)
        log.seek(0)
        raise SystemExit(f"the shim in {root} exited {proc.returncode}:\n"
                         + log.read().decode(errors="replace")[-2000:])
    finally:
        proc.terminate()
        proc.wait(timeout=120)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vllm", required=True)
    ap.add_argument("--starts", type=int, default=4, help="starts per root")
    ap.add_argument("--root", action="append", default=[])
    args = ap.parse_args(argv)
    roots = [Path(r).resolve() for r in args.root] or [ROOT]
    seconds = {str(r): [] for r in roots}
    for _ in range(args.starts):
        for root in roots:
            seconds[str(root)].append(round(start_to_ready(root, args.vllm), 2))
    for root, times in seconds.items():
        print(f"{root}: {times} s, median {statistics.median(times):.2f} s")
    print(json.dumps({"vllm": args.vllm, "seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
