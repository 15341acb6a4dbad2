"""tools/serve/progress.py, serve.sh's long setup steps (installs, the weights' fetch, model
builds): the step's output passes through, a `still running, N s, M MB written` line comes while
it runs, only the last line of a builder reaches stdout, and its exit code is the step's.
The step here writes 3 MB and then waits for the test to have seen the progress line: no clock
in any assertion. Run: python3 -S -m unittest tests.unit.test_progress
"""
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from tests.support.paths import ROOT

PROGRESS = ROOT / "tools" / "serve" / "progress.py"
# a builder: 3 MB into the folder, a line, then waits for GO before printing its folder
BUILDER = """import pathlib, sys, time
out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
(out / "weights.bin").write_bytes(b"x" * 3_000_000)
print("built the weights", flush=True)
while not (out.parent / "GO").exists():
    time.sleep(0.05)
print(out)
"""


class Progress(unittest.TestCase):
    def test_a_build_says_how_long_and_how_much_then_gives_its_folder(self):
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "models" / "m"
            step = subprocess.Popen(
                [sys.executable, str(PROGRESS), "setup: building m", str(out), "--every", "0.1",
                 "--last-line", "--", sys.executable, "-c", BUILDER, str(out)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            seen = []
            for line in step.stderr:  # until a progress line counts the 3 MB
                seen.append(line)
                if re.fullmatch(r"serve\.sh: setup: building m: still running, \d+ s, 3 MB "
                                rf"written to {re.escape(str(out))}\n", line):
                    break
            else:
                self.fail("no progress line with 3 MB:\n" + "".join(seen))
            (out.parent / "GO").touch()
            stdout, rest = step.communicate(timeout=60)
            self.assertEqual(step.returncode, 0)
            self.assertEqual(stdout, f"{out}\n")  # the builder's last line only
            self.assertIn("built the weights\n", seen + [rest])  # the rest shown on stderr

    def test_the_step_exit_code_and_no_last_line_on_failure(self):
        out = subprocess.run([sys.executable, str(PROGRESS), "setup: x", "/nonexistent",
                              "--last-line", "--", sys.executable, "-c",
                              "print('half'); raise SystemExit(7)"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual((out.returncode, out.stdout), (7, ""))
        self.assertIn("half", out.stderr)

    def test_without_last_line_the_output_passes_through(self):
        out = subprocess.run([sys.executable, str(PROGRESS), "setup: x", "/nonexistent", "--",
                              sys.executable, "-c", "print('a'); print('b')"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual((out.returncode, out.stdout), (0, "a\nb\n"))


if __name__ == "__main__":
    unittest.main()
