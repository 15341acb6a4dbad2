"""Wait until the shim's /health answers 200, watching both processes.

Usage: python tools/serve/wait_ready.py HEALTH_URL VLLM_PID SHIM_PID TIMEOUT_S LOG_DIR
Exit 0 when ready; 1 with the reason (a dead process and its log tail, the shim's failed
start-up check, or the timeout). Prints the shim's reason whenever it changes, and every
SAY_EVERY_S that it is still waiting (vLLM's load says nothing new for minutes).
"""
import json
import os
import sys
import time
import urllib.error
import urllib.request

SAY_EVERY_S = 30


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); /proc says whether it has exited
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def tail(path: str, n: int = 8) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"


def main() -> int:
    url, vllm_pid, shim_pid, timeout_s, log_dir = sys.argv[1:6]
    start = time.monotonic()
    deadline, last, said = start + float(timeout_s), "", start
    while time.monotonic() < deadline:
        if time.monotonic() - said >= SAY_EVERY_S:
            said = time.monotonic()
            print(f"  still waiting, {said - start:.0f} s: {last or 'the shim not answering'}",
                  flush=True)
        for name, pid in (("vLLM", vllm_pid), ("shim", shim_pid)):
            if not alive(int(pid)):
                print(f"{name} exited during start-up; last lines of its log:\n"
                      f"{tail(os.path.join(log_dir, name.lower() + '.log'))}", file=sys.stderr)
                return 1
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return 0
        except urllib.error.HTTPError as e:
            doc = json.loads(e.read() or b"{}")
            if doc.get("status") == "failed":  # with auth on, the reason is in the shim's log only
                why = doc.get("reason") or tail(os.path.join(log_dir, "shim.log"), 3)
                print(f"the shim's start-up check failed: {why}", file=sys.stderr)
                return 1
            if doc.get("reason") != last:
                last, said = doc.get("reason", ""), time.monotonic()
                print(f"  waiting: {last}", flush=True)
        except OSError:
            pass
        time.sleep(2)
    print(f"not ready after {timeout_s} s (last state: {last})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # usage, and nothing run
        sys.exit(print(__doc__))
    sys.exit(main())
