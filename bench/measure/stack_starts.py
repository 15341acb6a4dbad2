"""How long serve.sh stacks take to be ready when several start side by side, and how fast a
lone one then answers, under environment settings given on the command line.

Usage: .venv/bin/python bench/measure/stack_starts.py [--stacks 2] [--requests 0]
         [KEY=VALUE ...]
Starts --stacks serve.sh stacks at once (the embedded model, fp32, the test suite's vLLM flags and
environment: tests/support/live_stack.py's clean_env, so GOMP_SPINCOUNT=10000, unbound and
in-process unless changed here), each on free ports with its logs in a temporary folder, and
prints the seconds from the start to each stack's "onepass ready:" line. KEY=VALUE sets a
variable for every stack; KEY= removes it (KEY=  with GOMP_SPINCOUNT: libgomp's default).
--requests N then sends N requests one after another to the first stack (three questions, noul,
choice-3 and score-3, over a new ~150-token state each time) and prints their median and mean
milliseconds. Every stack is then stopped (SIGTERM to its serve.sh, which drains and stops).
Prints one JSON line at the end with the settings and the figures. Used for docs/production.md
("GOMP_SPINCOUNT") and docs/measured.md ("The test suite's run time").
"""
import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.support import live_stack  # noqa: E402
from tests.support.json_http import request  # noqa: E402
from tests.support.live_bodies import CHOICE, NOUL, SCORE, TICKET, body  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stacks", type=int, default=2)
    ap.add_argument("--requests", type=int, default=0)
    ap.add_argument("env", nargs="*", help="KEY=VALUE (KEY= removes KEY)")
    args = ap.parse_args(argv)
    changes = dict(item.split("=", 1) for item in args.env)
    base = live_stack.clean_env

    def env() -> dict:
        out = {**base(), **changes}
        return {k: v for k, v in out.items() if v != "" or k not in changes}
    live_stack.clean_env = env  # serve_stack builds each stack's environment from it
    started, ready, stacks = time.monotonic(), [None] * args.stacks, [None] * args.stacks

    def start(i: int) -> None:
        stacks[i] = live_stack.serve_stack(Path(tempfile.mkdtemp(prefix=f"stack{i}-")))
        ready[i] = round(time.monotonic() - started, 1)
        print(f"stack {i + 1}: ready after {ready[i]} s ({stacks[i].url})", flush=True)
    threads = [threading.Thread(target=start, args=(i,)) for i in range(args.stacks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    times = []
    try:
        for n in range(args.requests):
            state = f"Ticket {n}-{time.time_ns()}. " + TICKET * 6
            sent = time.monotonic()
            status, _, _ = request(stacks[0].url, "POST", "/v1/systemone",
                                   body({"a": NOUL, "b": CHOICE, "c": SCORE}, state), timeout=120)
            times.append((time.monotonic() - sent) * 1000)
            assert status == 200, status
    finally:
        for s in stacks:
            if s is not None:
                live_stack.stop_stack(s)
    figures = {"stacks": args.stacks, "env": changes, "ready_s": ready}
    if times:
        figures.update(median_ms=round(statistics.median(times), 1),
                       mean_ms=round(statistics.mean(times), 1), requests=len(times))
        print(f"{len(times)} requests to stack 1: median {figures['median_ms']} ms, mean "
              f"{figures['mean_ms']} ms")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
