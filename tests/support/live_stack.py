"""Real processes for the live suites (and the benches that start vLLM the same way): serve.sh
stacks, extra shims against a running vLLM, extra vLLM servers, and the settings every one of
them runs with. Nothing here stands in for the engine. conftest.py's fixtures are built on it.
"""
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.json_http import request
from tests.support.paths import FAST_PROFILE, ROOT

KEEP = {"ONEPASS_VENV", "ONEPASS_CACHE"}  # where things are installed; other settings are the tests'
CACHE = Path(os.environ.get("ONEPASS_CACHE") or Path.home() / ".cache" / "onepass")
SMOLLM2 = CACHE / "models" / "smollm2-135m-instruct"
# Every vLLM in the tests (serve.sh's and the extra ones) runs with these flags on top of
# serve.sh's CPU flags: a small one-step budget (the two-way limit is then reachable) and
# cached-token counts in `usage` (to observe the prefix cache).
VLLM_TEST_ARGS = ("--max-num-batched-tokens", "1024", "--enable-prompt-tokens-details")
# fp32 on every CPU (serve.sh would pick bf16 where it is native): the live tests compare with
# stock vLLM and HF fp32 bit for bit or within 1e-4; test_engine_live.py covers bf16.
# The vision stack's profile: the small Idefics3 trained here to find the box scenes' objects
# (models/idefics3-grounding, docs/box.md): the image path end to end, and boxes a test can score.
VISION_PROFILE = "idefics3-grounding"
# Every serve.sh and shim here gets FAST_PROFILE unless a test names another profile.
CPU_ARGS = ("--dtype", "float32", "--enforce-eager", "--block-size", "32", "--max-model-len",
            "4096")

# libgomp's spin before an idle OpenMP thread sleeps, in iterations (its default is 300,000):
# with the default, a vLLM's spinning threads took the cores from whatever else ran, and two
# serve.sh stacks started side by side were ready in 211 s; with 10,000, in 140 s, and a lone
# stack's median request time was unchanged (1,136 -> 1,125 ms; docs/testing.md, "Run time").
SPINCOUNT = "10000"
# vLLM's engine core runs the model itself instead of in a worker process of its own (on CPU
# vLLM then keeps its one-process executor): the same kernels and numbers (a plugin vLLM's
# label log-probs were identical either way), one process fewer to start. Measured here: a
# plugin vLLM ready in 32 s instead of 46 s, its short completions 240 ms instead of 376 ms.
# serve.sh does not set it (with CPU binding on, vLLM needs the worker process), and the
# balancer's stacks run without it, as production does (test_balancer_live.py).
IN_PROCESS = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
# vLLM answers only with its key, as serve.sh starts it: every vLLM started here (serve.sh's and
# the extra ones) gets a fresh key, kept here by its URL for the shims and calls aimed at it.
KEYS: dict[str, str] = {}


def fresh_key() -> str:
    return secrets.token_hex(32)  # as serve.sh's: 32 random bytes in hex


def vllm_key(url: str) -> str:
    """The key of the vLLM at `url` that this harness started ('' for any other)."""
    return KEYS.get(url.rstrip("/"), "")


def vllm_auth(url: str) -> dict:
    """The header a call to the vLLM at `url` carries (none for a vLLM started elsewhere)."""
    key = vllm_key(url)
    return {"Authorization": f"Bearer {key}"} if key else {}


def clean_env() -> dict:
    """The environment without the caller's onepass settings. Every vLLM here runs unbound
    (`nobind`): the suite runs several at once on the same cores, and a bound vLLM's main
    thread is pinned to the first core (libgomp, GOMP_CPU_AFFINITY), where a starting engine
    got ~3% of a core beside a busy one and took over 10 minutes to start; its OpenMP threads
    spin briefly (SPINCOUNT), and its model runs in the engine core's process (IN_PROCESS)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONEPASS_") or k in KEEP}
    env["VLLM_CPU_OMP_THREADS_BIND"] = "nobind"
    env["GOMP_SPINCOUNT"] = SPINCOUNT
    env.update(IN_PROCESS)
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
    vllm_key: str = ""  # vLLM's key: only the shim (and a test that calls vLLM) is given it

    def request(self, method, path, body=None, headers=None, base=None):
        return request((base or self.url), method, path, body, headers)


def config_doc() -> dict:
    """serve_config.json as the live suite serves it: FAST_PROFILE its default."""
    doc = json.loads((ROOT / "serve_config.json").read_text())
    doc["default_profile"] = FAST_PROFILE
    return doc


def changed_profile(tmp_path, **changes) -> tuple[str, str]:
    """The shim's flags for serve_config.json with FAST_PROFILE's fields changed, written in
    `tmp_path`."""
    doc = config_doc()
    doc["profiles"][FAST_PROFILE].update(changes)
    config = tmp_path / "serve_config.json"
    config.write_text(json.dumps(doc))
    return "--config", str(config)


def start_shim(vllm_url, port, env_extra=None, args=()):
    """A second shim process against the session's vLLM (auth, guard-failure tests), given
    that vLLM's key as serve.sh gives its shim (env_extra may set another)."""
    env = clean_env()
    env["ONEPASS_PROFILE"] = FAST_PROFILE  # a test's --profile or --config default wins
    env["ONEPASS_VLLM_KEY"] = vllm_key(vllm_url)
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
               ONEPASS_VLLM_ARGS=" ".join(VLLM_TEST_ARGS), ONEPASS_PROFILE=FAST_PROFILE)
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
    """serve.sh until ready, as a Stack; the caller stops it with stop_stack. Its vLLM's key is
    made here (launch_serve leaves it to serve.sh), for the calls the tests aim at vLLM."""
    key = fresh_key()
    proc, output = launch_serve(log_dir, "onepass ready:",
                                {"ONEPASS_VLLM_KEY": key, **(env_extra or {})})
    if not output or not output[-1].startswith("onepass ready:"):
        proc.kill()
        raise RuntimeError("serve.sh did not get ready:\n" + "".join(output[-30:]))
    text = "".join(output)
    url = re.search(r"onepass ready: (http://[^/]+)/v1/systemone", text).group(1)
    vllm_url = re.search(r"--vllm (http://\S+)", text).group(1)
    vllm_pid = int(re.search(r"start vLLM: done \(pid (\d+)", text).group(1))
    KEYS[vllm_url] = key
    return Stack(url, vllm_url, proc, output, vllm_pid, key)


def shipped_dtype() -> str:
    """The dtype serve.sh serves in on this CPU (tools/serve/cpu_dtype.py's choice, or
    ONEPASS_DTYPE's, as serve.sh reads it: test.sh's ONEPASS_TEST_CPU=avx2 sets it)."""
    requested = os.environ.get("ONEPASS_DTYPE") or "auto"
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "serve" / "cpu_dtype.py"),
                          requested],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return out[0].strip()


def stop_stack(s: Stack) -> None:
    if s.proc.poll() is None:
        s.proc.send_signal(signal.SIGTERM)
        s.proc.wait(timeout=120)


@dataclass
class Vllm:
    url: str
    proc: subprocess.Popen
    log: Path
    key: str = ""

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
    """A vLLM CPU server like serve.sh's (its key fresh, in VLLM_API_KEY), with VLLM_PLUGINS
    chosen ("" = stock vLLM)."""
    port, key = free_port(), fresh_key()
    env = clean_env()
    env.update(VLLM_PLUGINS=plugins, HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="1",
               VLLM_API_KEY=key)
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(port),
           "--enable-tokenizer-info-endpoint", "--enable-log-requests",  # as serve.sh
           "--middleware", "onepass_engine.guard.Guard",  # the key on every route, as serve.sh
           *args]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    server = Vllm(f"http://127.0.0.1:{port}", proc, log, key)
    KEYS[server.url] = key
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"vLLM exited ({proc.returncode}):\n" + log.read_text()[-3000:])
        try:
            if request(server.url, "GET", "/v1/models", headers=vllm_auth(server.url),
                       timeout=5)[0] == 200:
                return server
        except (OSError, ValueError):
            pass
        time.sleep(1)
    server.stop()
    raise RuntimeError("vLLM did not start in time:\n" + log.read_text()[-3000:])
