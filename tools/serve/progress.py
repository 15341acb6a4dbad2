"""Run one long setup step of serve.sh (an install, a fetch, a model build) and say it is still
going: the step's own output passes through, and every --every seconds a line
`serve.sh: LABEL: still running, N s, M MB written to DIR` (DIR's growth since the step began).

Usage: python3 tools/serve/progress.py LABEL DIR [--every S] [--last-line] -- CMD...
--last-line: CMD's standard output goes to standard error as it comes, and only its last line
to standard output at the end (the model builders print the folder they built last; serve.sh
reads it). The progress lines go to standard error. Exit: CMD's exit code. Standard library.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time


def size(path: str) -> int:
    """Bytes of the files under PATH (0 while it does not exist)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass  # removed while walked (pip's temporary files)
    return total


def ticker(label: str, path: str, every: float, done: threading.Event) -> None:
    start, base = time.monotonic(), size(path)
    while not done.wait(every):
        grown = (size(path) - base) / 1e6
        print(f"serve.sh: {label}: still running, {time.monotonic() - start:.0f} s, "
              f"{grown:,.0f} MB written to {path}", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:  # --help asked for the usage; anything else without a command is wrong
        print(__doc__, file=sys.stdout if {"-h", "--help"} & set(argv) else sys.stderr)
        return 0 if {"-h", "--help"} & set(argv) else 2
    split = argv.index("--")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("label")
    ap.add_argument("dir")
    ap.add_argument("--every", type=float, default=30.0)
    ap.add_argument("--last-line", action="store_true")
    args, cmd = ap.parse_args(argv[:split]), argv[split + 1:]
    if not cmd:
        ap.error("no command after --")
    done = threading.Event()
    threading.Thread(target=ticker, args=(args.label, args.dir, args.every, done),
                     daemon=True).start()
    last = ""
    try:
        if not args.last_line:
            return subprocess.run(cmd).returncode
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, errors="replace") as proc:
            for line in proc.stdout:
                sys.stderr.write(line)
                sys.stderr.flush()
                last = line.rstrip("\n") or last
        if proc.returncode == 0 and last:
            print(last, flush=True)
        return proc.returncode
    finally:
        done.set()


if __name__ == "__main__":
    sys.exit(main())
