"""Every skip of a test run, with its reason, held to the list of allowed reasons in
docs/testing.md ("Skips": a fenced `text` block, one fnmatch pattern a line). The stdlib runs'
skips are read from their `unittest -v` logs; the pytest session's are collected by conftest.py
and checked by card_tests/test_skips.py. Standard library only.

Run: python3 -S -m tests.support.skips LOG...   (test.sh does, after the stdlib runs): prints
each skip reason with its count, exits 1 when one is not on the list.
"""
import ast
import fnmatch
import re
import sys
from collections import Counter

from tests.support.paths import ROOT

DOC = ROOT / "docs" / "testing.md"
HEADING = "## Skips"
# unittest -v: "test_x (module.Class.test_x) ... skipped 'why'", or the docstring's first line
# before " ... ", or "skipped 'why'" alone when the test printed in between
SKIPPED = re.compile(r"(?:^|\.\.\. )skipped ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")$")
SEEN: list = []  # the pytest session's skips, (test id, reason), appended by conftest.py


def allowed(doc: str | None = None) -> list[str]:
    """The allowed reasons' patterns: the first `text` block under the Skips heading."""
    doc = DOC.read_text(encoding="utf-8") if doc is None else doc
    section = doc.partition(f"\n{HEADING}\n")[2].split("\n## ", 1)[0]
    block = re.search(r"^```text\n(.*?)^```", section, re.S | re.M)
    if not block:
        raise ValueError(f"no ```text block of allowed skip reasons under {HEADING!r}")
    return [line for line in block.group(1).splitlines() if line.strip()]


def from_unittest(log: str) -> list[tuple]:
    """(what the line names, reason) for each skip in a `unittest -v` log."""
    found = []
    for line in log.splitlines():
        m = SKIPPED.search(line.rstrip())
        if m:
            found.append((line[:m.start()].strip() or "?", ast.literal_eval(m.group(1))))
    return found


def unlisted(skips, patterns) -> list[tuple]:
    return [(test, why) for test, why in skips
            if not any(fnmatch.fnmatchcase(why, p) for p in patterns)]


def table(skips) -> str:
    """Each reason once, with how many tests skipped for it."""
    counts = Counter(why for _, why in skips)
    return "\n".join(f"{n:5d}  {why}" for why, n in counts.most_common()) or "    (none)"


def main(paths: list) -> int:
    patterns, bad = allowed(), []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            skips = from_unittest(f.read())
        print(f"skips: {path}: {len(skips)}\n{table(skips)}")
        bad += unlisted(skips, patterns)
    for test, why in bad:
        print(f"skips: error: not an allowed reason (docs/testing.md, {HEADING[3:]}): "
              f"{why!r} ({test})", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
