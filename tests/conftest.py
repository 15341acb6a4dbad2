"""One real stack per test session: serve.sh starts vLLM (CPU) with the embedded model and the
shim, and the tests share it. Nothing here stands in for the engine."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tests read onepass/ and tools/ from the checkout
KEEP = {"ONEPASS_VENV", "ONEPASS_CACHE"}  # where things are installed; other settings are the tests'


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("ONEPASS_") or k in KEEP}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Stack:
    url: str
    vllm_url: str
    proc: subprocess.Popen
    output: list
    vllm_pid: int

    def request(self, method, path, body=None, headers=None, base=None):
        return request((base or self.url), method, path, body, headers)


def request(base, method, path, body=None, headers=None, timeout=120):
    host, port = base.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    payload = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    hdrs = {"Content-Type": "application/json"} if payload is not None else {}
    hdrs.update(headers or {})
    conn.request(method, path, body=payload, headers=hdrs)
    r = conn.getresponse()
    raw = r.read()
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, json.loads(raw)


def start_shim(vllm_url, port, env_extra=None, args=()):
    """A second shim process against the session's vLLM (auth, guard-failure tests)."""
    env = clean_env()
    env.update(env_extra or {})
    proc = subprocess.Popen([sys.executable, str(ROOT / "shim.py"), "--port", str(port),
                             "--vllm", vllm_url, "--config", str(ROOT / "serve_config.json"),
                             *args], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return proc


def wait_health(base, want_status, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            status, _, doc = request(base, "GET", "/health", timeout=5)
            if doc.get("status") in want_status:
                return status, doc
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{base}/health never reached {want_status}")


def launch_serve(log_dir, until: str) -> tuple[subprocess.Popen, list]:
    """serve.sh on free ports, its output read until a line starting with `until` (or EOF)."""
    env = clean_env()
    env.update(ONEPASS_PORT=str(free_port()), ONEPASS_VLLM_PORT=str(free_port()),
               ONEPASS_LOG_DIR=str(log_dir), ONEPASS_DEVICE="cpu")
    proc = subprocess.Popen(["bash", str(ROOT / "serve.sh")], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = []
    for line in proc.stdout:
        output.append(line)
        sys.stderr.write("serve.sh| " + line)
        if line.startswith(until):
            break
    return proc, output


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    proc, output = launch_serve(tmp_path_factory.mktemp("logs"), "onepass ready:")
    if not output or not output[-1].startswith("onepass ready:"):
        proc.kill()
        raise RuntimeError("serve.sh did not get ready:\n" + "".join(output[-30:]))
    text = "".join(output)
    url = re.search(r"onepass ready: (http://[^/]+)/v1/systemone", text).group(1)
    vllm_url = re.search(r"--vllm (http://\S+)", text).group(1)
    vllm_pid = int(re.search(r"start vLLM: done \(pid (\d+)", text).group(1))
    s = Stack(url, vllm_url, proc, output, vllm_pid)
    yield s
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
