"""serve.sh's whole start (setup, verify, vLLM, the shim, the warm-up wait, the ready line, the
stop) run for real against stand-ins, for the stdlib tests of what serve.sh itself does around
them (its logs, its phases): a venv stamped for the CPU lock whose python plays vLLM (two log
lines, then waits) and the shim (a /health that answers 200, a log line per call), and a python3
on PATH that passes verify_install.py's check of that venv. Nothing is installed or served.
"""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.support.paths import ROOT

VLLM_LINES = ("INFO fake vLLM: loading the model", "WARNING fake vLLM: a line on stderr")
SHIM_LINE = "fake shim: listening"
# the venv's python: vLLM, the shim (and its --check-config), else the real python3
VENV_PYTHON = """#!/bin/sh
case "$*" in
  *--check-config*) exit 0 ;;
  "-m vllm.entrypoints.openai.api_server"*)
    echo "{out}"; echo "{err}" >&2; exec sleep 600 ;;
  *shim.py*) exec python3 "{shim}" "$@" ;;
esac
exec python3 "$@"
"""
SHIM = """import http.server, os, signal, sys
args = sys.argv
port, host = int(args[args.index("--port") + 1]), args[args.index("--host") + 1]
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *a):
        print("fake shim: GET", self.path, file=sys.stderr)
server = http.server.HTTPServer((host, port), Health)
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
print("%s", file=sys.stderr)
server.serve_forever()
""" % SHIM_LINE
# python3 on PATH: verify_install.py's check passes (the venv has no vLLM to check)
PYTHON3 = """#!/bin/sh
case "$1" in */verify_install.py) exit 0 ;; esac
exec "{real}" "$@"
"""


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fake_install(tmp: Path) -> dict:
    """The stand-ins in TMP, and serve.sh's environment to start against them."""
    bin_dir, venv = tmp / "bin", tmp / "venv"
    (venv / "bin").mkdir(parents=True)
    bin_dir.mkdir()
    (tmp / "shim.py").write_text(SHIM)
    write_exe(venv / "bin" / "python", VENV_PYTHON.format(
        out=VLLM_LINES[0], err=VLLM_LINES[1], shim=tmp / "shim.py"))
    write_exe(bin_dir / "python3", PYTHON3.format(real=shutil.which("python3") or sys.executable))
    import hashlib
    stamp = hashlib.sha256((ROOT / "deps" / "cpu.txt").read_bytes()).hexdigest()
    (venv / ".onepass-deps").write_text(stamp + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ONEPASS_", "VLLM_"))}
    env.update(PATH=f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}", ONEPASS_VENV=str(venv),
               ONEPASS_CACHE=str(tmp / "cache"), ONEPASS_LOG_DIR=str(tmp / "logs"),
               ONEPASS_DEVICE="cpu", ONEPASS_INSTALL="0", ONEPASS_MODEL="/models/fake",
               ONEPASS_DTYPE="float32", ONEPASS_PORT=str(free_port()),
               ONEPASS_VLLM_PORT=str(free_port()))
    return env


def write_exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


class Serve:
    """serve.sh started against the stand-ins, its stdout read line by line in a thread."""

    def __init__(self, env: dict, *args: str):
        self.proc = subprocess.Popen(["bash", str(ROOT / "serve.sh"), *args], env=env, cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def until(self, what: str, check, guard_s: float = 120) -> None:
        """Wait until check(lines) holds; the deadline only fails the test, with the output."""
        deadline = time.monotonic() + guard_s
        while not check(self.lines):
            if time.monotonic() > deadline or self.proc.poll() is not None and \
                    not self.reader.is_alive() and not check(self.lines):
                self.stop()
                raise AssertionError(f"serve.sh: never {what}:\n" + "\n".join(self.lines)
                                     + "\n" + self.stderr)
            time.sleep(0.05)

    def stop(self) -> int:
        """SIGTERM, as a supervisor stops it; its exit code once its output has ended."""
        if self.proc.stderr.closed:  # stopped already
            return self.proc.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=120)
        self.reader.join(timeout=30)
        self.stderr = self.proc.stderr.read()
        self.proc.stderr.close()
        self.proc.stdout.close()
        return code
