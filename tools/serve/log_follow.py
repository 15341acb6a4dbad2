"""Follow the logs serve.sh's processes write (LOG_DIR/NAME.log, opened for appending): keep each
under a size cap and, with --stdout, copy every complete line to this process's standard output
as `NAME| line`, one write a line, as soon as it is seen (a poll every 0.2 s).

Usage: python3 tools/serve/log_follow.py LOG_DIR NAME... [--max-bytes N] [--stdout]
The processes write their files themselves (a line is in the file before the shim sends the
answer it logs); this only reads them. Past --max-bytes a file is copied to NAME.log.1 (the
previous copy replaced) and emptied in place (copytruncate: a line written in the instant
between the copy and the cut is lost), so each process keeps at most about twice the cap.
SIGTERM or SIGINT, or its parent (serve.sh) gone: the lines written so far are copied out, then
it exits 0 (so it never outlives serve.sh holding its stdout open). Standard library.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

POLL_S = 0.2
CHUNK = 1 << 20  # bytes read a pass, so one pass never holds a whole large file
LONGEST_LINE = 64 << 10  # a longer line without a newline is copied out in pieces


class Followed:
    """One NAME.log: where it was read up to, and the line begun but not ended there."""

    def __init__(self, log_dir: Path, name: str, prefix: bytes | None):
        self.path, self.name = log_dir / f"{name}.log", name
        self.prefix = prefix  # None: the file is capped, its lines not copied out
        self.inode, self.offset, self.partial = None, 0, b""

    def poll(self, max_bytes: int) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return
        if st.st_ino != self.inode or st.st_size < self.offset:  # a new file, or cut elsewhere
            self.inode, self.offset, self.partial = st.st_ino, 0, b""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            while len(data := f.read(CHUNK)) == CHUNK:  # a backlog: copied out as it is read
                self.offset += len(data)
                self.emit(data)
        self.offset += len(data)
        if self.offset > max_bytes:  # cut before its last lines are copied out: once a line
            data += self.rotate()    # is on stdout, its file is within the cap
        self.emit(data)

    def rotate(self) -> bytes:
        """Copy the file to NAME.log.1 and empty it; what was written after the last read."""
        older = self.path.with_name(self.path.name + ".1")
        tmp = self.path.with_name(self.path.name + ".1.partial")
        shutil.copyfile(self.path, tmp)
        os.truncate(self.path, 0)  # the writers append: their next line starts the file again
        os.replace(tmp, older)
        with open(older, "rb") as f:
            f.seek(self.offset)
            tail = f.read()
        self.offset = 0
        return tail

    def emit(self, data: bytes) -> None:
        if self.prefix is None:
            return
        *lines, self.partial = (self.partial + data).split(b"\n")
        while len(self.partial) > LONGEST_LINE:
            lines.append(self.partial[:LONGEST_LINE])
            self.partial = self.partial[LONGEST_LINE:]
        for line in lines:
            write(self.prefix + line + b"\n")

    def flush(self) -> None:
        if self.prefix is not None and self.partial:
            write(self.prefix + self.partial + b"\n")
            self.partial = b""


def write(data: bytes) -> None:
    """One line, one write: lines of the processes and of serve.sh never mix within a line."""
    global closed
    if closed:
        return
    try:
        while data:
            data = data[os.write(1, data):]
    except BrokenPipeError:  # nobody reads any more: keep capping the files
        closed = True


closed = False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log_dir", type=Path)
    ap.add_argument("names", nargs="+")
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--stdout", action="store_true", help="copy each line out as `NAME| line`")
    args = ap.parse_args(argv)
    if args.max_bytes <= 0:
        ap.error("--max-bytes must be positive")
    followed = [Followed(args.log_dir, n, f"{n}| ".encode() if args.stdout else None)
                for n in args.names]
    stop, parent = threading.Event(), os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while True:
        # one more pass after the signal: every line so far copied out
        done = stop.is_set() or os.getppid() != parent
        for f in followed:
            f.poll(args.max_bytes)
        if done:
            break
        stop.wait(POLL_S)
    for f in followed:
        f.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
