"""The live suites' shared fixtures (tests/live/ and card_tests/ run in one pytest session):
one real stack per session: serve.sh starts vLLM (CPU) with the embedded model and the
shim, and the tests share it. Nothing here stands in for the engine."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the tests read onepass/ and tools/ from the checkout
KEEP = {"ONEPASS_VENV", "ONEPASS_CACHE"}  # where things are installed; other settings are the tests'
CACHE = Path(os.environ.get("ONEPASS_CACHE") or Path.home() / ".cache" / "onepass")
SMOLLM2 = CACHE / "models" / "smollm2-135m-instruct"
# Every vLLM in the tests (serve.sh's and the extra ones) runs with these flags on top of
# serve.sh's CPU flags: a small one-step budget (the two-way limit is then reachable) and
# cached-token counts in `usage` (to observe the prefix cache).
VLLM_TEST_ARGS = ("--max-num-batched-tokens", "1024", "--enable-prompt-tokens-details")
# fp32 on every CPU (serve.sh would pick bf16 where it is native): the live tests compare with
# stock vLLM and HF fp32 bit for bit or within 1e-4; test_engine_live.py covers bf16.
CPU_ARGS = ("--dtype", "float32", "--enforce-eager", "--block-size", "32", "--max-model-len",
            "4096")


def pytest_configure(config):
    config.addinivalue_line("markers", "last: runs after every other test (it stops the "
                            "session's vLLM or serve.sh); such tests keep their file's order")


def pytest_collection_modifyitems(session, config, items):
    """The live suite's order does not depend on file names: tests marked `last` move to the
    end, everything else keeps pytest's order."""
    items[:] = ([i for i in items if i.get_closest_marker("last") is None]
                + [i for i in items if i.get_closest_marker("last") is not None])


class Clients:
    """Client threads calling self.client() until finish(); each appends to self.results.
    A thread still running after `wait_s` means a request hung (the test fails)."""

    def __init__(self, clients: int, wait_s: float):
        self.results, self.wait_s, self.stop = [], wait_s, threading.Event()
        self.threads = [threading.Thread(target=self.client) for _ in range(clients)]
        for t in self.threads:
            t.start()

    def client(self):
        raise NotImplementedError

    def finish(self) -> list:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=self.wait_s)
        assert not any(t.is_alive() for t in self.threads), "a request hung"
        return self.results


def clean_env() -> dict:
    """The environment without the caller's onepass settings. Every vLLM here runs unbound
    (`nobind`): the suite runs several at once on the same cores, and a bound vLLM's main
    thread is pinned to the first core (libgomp, GOMP_CPU_AFFINITY), where a starting engine
    got ~3% of a core beside a busy one and took over 10 minutes to start."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONEPASS_") or k in KEEP}
    env["VLLM_CPU_OMP_THREADS_BIND"] = "nobind"
    return env


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


def launch_serve(log_dir, until: str, env_extra=None) -> tuple[subprocess.Popen, list]:
    """serve.sh on free ports, its output read until a line starting with `until` (or EOF)."""
    env = clean_env()
    env.update(ONEPASS_PORT=str(free_port()), ONEPASS_VLLM_PORT=str(free_port()),
               ONEPASS_LOG_DIR=str(log_dir), ONEPASS_DEVICE="cpu", ONEPASS_DTYPE="float32",
               ONEPASS_VLLM_ARGS=" ".join(VLLM_TEST_ARGS))
    env.update(env_extra or {})  # the caller's settings win (a dtype, a profile)
    proc = subprocess.Popen(["bash", str(ROOT / "serve.sh")], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = []
    for line in proc.stdout:
        output.append(line)
        sys.stderr.write("serve.sh| " + line)
        if line.startswith(until):
            break
    return proc, output


def serve_stack(log_dir, env_extra=None):
    """serve.sh until ready, as a Stack; the caller stops it with stop_stack."""
    proc, output = launch_serve(log_dir, "onepass ready:", env_extra)
    if not output or not output[-1].startswith("onepass ready:"):
        proc.kill()
        raise RuntimeError("serve.sh did not get ready:\n" + "".join(output[-30:]))
    text = "".join(output)
    url = re.search(r"onepass ready: (http://[^/]+)/v1/systemone", text).group(1)
    vllm_url = re.search(r"--vllm (http://\S+)", text).group(1)
    vllm_pid = int(re.search(r"start vLLM: done \(pid (\d+)", text).group(1))
    return Stack(url, vllm_url, proc, output, vllm_pid)


def stop_stack(s: Stack) -> None:
    if s.proc.poll() is None:
        s.proc.send_signal(signal.SIGTERM)
        s.proc.wait(timeout=120)


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("logs")
    s = serve_stack(log_dir)
    s.log_dir = log_dir
    yield s
    stop_stack(s)


@pytest.fixture(scope="session")
def vision_stack(tmp_path_factory):
    """serve.sh with the tiny random-weight vision model (profile idefics3-tiny): the image path
    end to end. Its answers are noise; the tests check plumbing, never accuracy."""
    log_dir = tmp_path_factory.mktemp("vision-logs")
    s = serve_stack(log_dir, {"ONEPASS_PROFILE": "idefics3-tiny"})
    s.log_dir = log_dir
    yield s
    stop_stack(s)


@dataclass
class Vllm:
    url: str
    proc: subprocess.Popen
    log: Path

    def stop(self):
        """The whole process group (API server and engine core), which we started."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def start_vllm(model: Path, served_name: str, args, plugins: str, log: Path,
               timeout: float = 600) -> Vllm:
    """A vLLM CPU server like serve.sh's, with VLLM_PLUGINS chosen ("" = stock vLLM)."""
    port = free_port()
    env = clean_env()
    env.update(VLLM_PLUGINS=plugins, HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="1")
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(port), *args]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    server = Vllm(f"http://127.0.0.1:{port}", proc, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM exited ({proc.returncode}):\n" + log.read_text()[-3000:])
        try:
            if request(server.url, "GET", "/v1/models", timeout=5)[0] == 200:
                return server
        except (OSError, ValueError):
            pass
        time.sleep(1)
    server.stop()
    raise RuntimeError("vLLM did not start in time:\n" + log.read_text()[-3000:])


@pytest.fixture(scope="session")
def stock(tmp_path_factory):
    """Stock vLLM with the same model, flags and attention schedule as the session's vLLM: only
    the plugin's batch-invariant entry point (serve.sh loads it too), none of the two-way hooks."""
    server = start_vllm(SMOLLM2, "smollm2-135m-instruct", (*CPU_ARGS, *VLLM_TEST_ARGS),
                        "onepass_batch_invariant", tmp_path_factory.mktemp("stock") / "vllm.log")
    yield server
    server.stop()
