"""serve.sh's process logs: each start's vllm.log and shim.log written by the processes
themselves, and with ONEPASS_LOG_STDOUT=1 (the image's default) every line of both also on
serve.sh's stdout, prefixed `vllm| ` and `shim| `, beside serve.sh's own lines. Run against the
stand-ins of tests/support/fake_serve.py (serve.sh's real start, nothing installed or served).
The size cap is tools/serve/log_follow.py's: each line is written, then waited for on its
stdout, so every pass sees one line and the sizes follow from the byte counts.
Run: python3 -S -m unittest tests.unit.test_serve_logs
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from tests.support.fake_serve import SHIM_LINE, VLLM_LINES, Serve, fake_install
from tests.support.paths import ROOT

FOLLOW = ROOT / "tools" / "serve" / "log_follow.py"
PHASES = ("setup", "verify", "start vLLM", "start shim", "warm-up")


class ServeLogs(unittest.TestCase):
    def start(self, **env) -> tuple[Serve, Path]:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        serve = Serve({**fake_install(Path(tmp.name)), **env})
        self.addCleanup(serve.stop)
        return serve, Path(tmp.name) / "logs"

    def test_both_processes_on_stdout_with_their_prefix_and_in_their_files(self):
        serve, logs = self.start(ONEPASS_LOG_STDOUT="1")
        want = [f"vllm| {line}" for line in VLLM_LINES] + [f"shim| {SHIM_LINE}"]
        serve.until("showed both processes' lines and got ready",
                    lambda lines: set(want) <= set(lines)
                    and any(x.startswith("onepass ready:") for x in lines))
        # the warm-up's /health calls, logged by the shim while serve.sh waits for it
        serve.until("showed the shim's log of a /health call",
                    lambda lines: any(x.startswith("shim| fake shim: GET /health")
                                      for x in lines))
        self.assertEqual(serve.stop(), 0)
        lines = serve.lines
        # each process's lines in its file unprefixed, in the order they are on stdout
        for name in ("vllm", "shim"):
            written = (logs / f"{name}.log").read_text().splitlines()
            shown = [x[len(name) + 2:] for x in lines if x.startswith(f"{name}| ")]
            self.assertEqual(shown, written, name)
        self.assertTrue(set(VLLM_LINES) <= set((logs / "vllm.log").read_text().splitlines()))
        # serve.sh's own lines are there too, unprefixed: each phase's start, then its end
        phases = [m.groups() for x in lines
                  if (m := re.match(r"serve\.sh: ([^:]+): (start|done)\b", x))]
        self.assertEqual(phases, [(p, e) for p in PHASES for e in ("start", "done")])
        done = [x for x in lines if re.match(r"serve\.sh: [^:]+: done\b", x)]
        self.assertEqual(len([x for x in done if re.search(r"\bin \d+\.\d s\b", x)]),
                         len(PHASES), done)  # each phase says how long it took
        self.assertFalse([x for x in lines if not x.startswith(("serve.sh: ", "vllm| ", "shim| ",
                                                                "+ ", "onepass ready:", "  "))])

    def test_files_only_by_default(self):
        serve, logs = self.start()
        serve.until("got ready", lambda lines: any(x.startswith("onepass ready:")
                                                   for x in lines))
        self.assertEqual(serve.stop(), 0)
        self.assertFalse([x for x in serve.lines if x.startswith(("vllm| ", "shim| "))])
        self.assertEqual((logs / "vllm.log").read_text().splitlines(), list(VLLM_LINES))
        self.assertIn(SHIM_LINE, (logs / "shim.log").read_text().splitlines())

    def test_a_bad_setting_stops_before_anything(self):
        for env, says in (({"ONEPASS_LOG_STDOUT": "yes"}, "ONEPASS_LOG_STDOUT must be 0 or 1"),
                          ({"ONEPASS_LOG_MAX_BYTES": "10M"}, "ONEPASS_LOG_MAX_BYTES must be")):
            with self.subTest(**env), tempfile.TemporaryDirectory() as tmp:
                out = subprocess.run(["bash", str(ROOT / "serve.sh")], capture_output=True,
                                     text=True, timeout=60,
                                     env={**fake_install(Path(tmp)), **env})
                self.assertEqual(out.returncode, 10, out.stdout + out.stderr)
                self.assertIn(says, out.stderr)
                self.assertFalse((Path(tmp) / "logs").exists())


class Cap(unittest.TestCase):
    """log_follow.py alone: a file past the cap is copied to NAME.log.1 and emptied in place; the
    writer (appending, as serve.sh starts the processes) goes on at its start."""

    CAP, LINE = 1000, 99  # bytes: a line is 99 bytes with its newline

    def test_capped_and_every_line_copied_out_once_in_order(self):
        with tempfile.TemporaryDirectory() as d:
            logs = Path(d)
            path = logs / "vllm.log"
            path.touch()
            follow = subprocess.Popen([sys.executable, str(FOLLOW), str(logs), "vllm",
                                       "--max-bytes", str(self.CAP), "--stdout"],
                                      stdout=subprocess.PIPE, text=True)
            self.addCleanup(follow.stdout.close)
            self.addCleanup(follow.kill)
            writer = os.open(path, os.O_WRONLY | os.O_APPEND)
            self.addCleanup(os.close, writer)
            sent = [f"line {i:04d} ".ljust(self.LINE - 1, "x") for i in range(35)]
            sizes = []
            for line in sent:
                os.write(writer, (line + "\n").encode())
                self.assertEqual(follow.stdout.readline(), f"vllm| {line}\n")  # seen, so polled
                sizes.append(path.stat().st_size)
            # past the cap the file is cut before its line is shown: it grows line by line to
            # the cap, and the line that passes it (the 11th: 1,089 bytes) starts it again
            per = self.CAP // self.LINE + 1
            self.assertEqual(sizes[:per + 1], [self.LINE * n for n in range(1, per)] + [0, 99])
            self.assertLessEqual(max(sizes), self.CAP)
            last = len(sent) // per * per  # the line of the last cut
            self.assertEqual((logs / "vllm.log.1").read_text().splitlines(),
                             sent[last - per:last])
            self.assertEqual(path.read_text().splitlines(), sent[last:])
            follow.send_signal(signal.SIGTERM)
            self.assertEqual(follow.wait(timeout=30), 0)
            self.assertEqual(follow.stdout.read(), "")  # nothing twice


if __name__ == "__main__":
    unittest.main()
