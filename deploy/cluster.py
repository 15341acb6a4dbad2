"""N onepass stacks (one serve.sh each: its own vLLM and shim, ports and log dir) behind one
HAProxy, on loopback.

Owns: rendering deploy/haproxy.cfg with one `server` line per stack, starting HAProxy and the
stacks (each in its own session, so a Ctrl-C reaches only this process, which stops them in
order), reading each serve.sh's PIDs and ready line, the balancer's view of each server (its
runtime API socket), a rolling restart, and stopping every process it started, by PID.
Never: changes serve.sh, the shim or their settings beyond ports and log dirs.
Used by deploy/scale.py (the command), tests/live/test_balancer_live.py and
bench/measure/balancer_scale.py.
Standard library only.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "deploy" / "haproxy.cfg"
BACKEND = "onepass"


def find_haproxy() -> str:
    """HAProxy on PATH or in /usr/sbin (root's PATH has it, others' may not)."""
    found = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")
    if not found:
        raise RuntimeError("haproxy not found: apt-get install -y haproxy (Debian bookworm: "
                           "2.6.12-1+deb12u3), or bash test.sh, which installs it as root")
    return found


def render(servers: list[tuple[str, int]], source: Path = CONFIG) -> str:
    """deploy/haproxy.cfg with its example `server` lines replaced by one per stack."""
    lines, placed = [], False
    for line in source.read_text().splitlines():
        if line.strip().startswith("server "):
            if not placed:
                lines += [f"    server {name} 127.0.0.1:{port}" for name, port in servers]
                placed = True
            continue
        lines.append(line)
    if not placed:
        raise ValueError(f"{source} has no `server` line to replace")
    return "\n".join(lines) + "\n"


class Stack:
    """One serve.sh: vLLM and the shim. Each start is a new run with its own log dir
    (<log_dir>/<name>.<run>), so the logs of earlier runs stay for reading."""

    def __init__(self, name: str, port: int, vllm_port: int, log_dir: Path):
        self.name, self.port, self.vllm_port, self.base_dir = name, port, vllm_port, log_dir
        self.url = f"http://127.0.0.1:{port}"
        self.run, self.proc, self.log_dir = 0, None, None
        self.vllm_pid = self.shim_pid = None
        self.ready, self.lines, self.env = threading.Event(), [], {}  # env: this stack's own

    def start(self, env: dict) -> None:
        self.run += 1
        self.log_dir = self.base_dir / f"{self.name}.{self.run}"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.ready, self.lines, self.vllm_pid, self.shim_pid = threading.Event(), [], None, None
        env = {**env, **self.env, "ONEPASS_PORT": str(self.port), "ONEPASS_VLLM_PORT": str(self.vllm_port),
               "ONEPASS_LOG_DIR": str(self.log_dir)}
        self.proc = subprocess.Popen(["bash", str(ROOT / "serve.sh")], env=env, cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def _read(self, proc) -> None:
        with open(self.log_dir / "serve.log", "w") as out:
            for line in proc.stdout:
                out.write(line)
                out.flush()
                self.lines.append(line)
                if m := re.search(r"start (vLLM|shim): done \(pid (\d+)", line):
                    setattr(self, "vllm_pid" if m.group(1) == "vLLM" else "shim_pid",
                            int(m.group(2)))
                if line.startswith("onepass ready:"):
                    self.ready.set()

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready.wait(1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                why = "exited %s" % self.proc.returncode if self.proc.poll() is not None \
                    else "not ready in time"
                raise RuntimeError(f"{self.name}: serve.sh {why}:\n" + "".join(self.lines[-20:]))

    def stop(self, timeout: float = 120) -> int | None:
        """SIGTERM to serve.sh: the shim drains, then vLLM stops (serve.sh's order)."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:  # serve.sh hung: its own processes, by PID
            for pid in (self.shim_pid, self.proc.pid):
                _signal(pid, signal.SIGKILL)
            _signal(-self.vllm_pid if self.vllm_pid else None, signal.SIGKILL)
            return self.proc.wait()

    def kill_vllm(self) -> None:
        """vLLM's whole process group (API server and engine core), SIGKILL: a crash."""
        os.killpg(self.vllm_pid, signal.SIGKILL)


def _signal(pid, sig) -> None:
    if pid:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class Cluster:
    """HAProxy on lb_port and one Stack per (shim port, vLLM port) pair."""

    def __init__(self, ports: list[tuple[int, int]], lb_port: int, log_dir: Path,
                 env: dict | None = None, stack_env: list[dict] | None = None):
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ if env is None else env)
        # a draining shim closes new requests unanswered, which HAProxy retries elsewhere
        # (deploy/haproxy.cfg's retry-on); its 503s are then never retried
        self.env.setdefault("ONEPASS_DRAIN_REFUSAL", "close")
        # every connection comes from HAProxy's address, 127.0.0.1, and starts with its PROXY
        # header (deploy/haproxy.cfg's send-proxy-v2): trusted, it names the client every
        # per-address share in the shim keys on
        self.env.setdefault("ONEPASS_TRUSTED_PROXIES", "127.0.0.1")
        # the stacks share this machine's cores: a bound vLLM (serve.sh's CPU default) has its
        # main thread pinned to the first core, where a restarting engine starves beside a
        # busy one (measured: ~3% of a core, over 10 minutes to start); unbound, the kernel
        # spreads them
        self.env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        # and an idle OpenMP thread sleeps soon instead of spinning for libgomp's default
        # 300,000 turns on a core another stack needs (measured: two stacks started side by
        # side ready in 140 s instead of 211; a lone stack's requests as fast)
        self.env.setdefault("GOMP_SPINCOUNT", "10000")
        self.stacks = [Stack(f"s{i + 1}", port, vport, self.log_dir)
                       for i, (port, vport) in enumerate(ports)]
        for stack, extra in zip(self.stacks, stack_env or []):
            stack.env = dict(extra)
        self.lb_port, self.url = lb_port, f"http://127.0.0.1:{lb_port}"
        self.socket_path = self.log_dir / "haproxy.sock"
        self.haproxy = None

    # -- the balancer ----------------------------------------------------------------------
    def start_balancer(self, timeout: float = 15) -> None:
        """HAProxy, then wait until it has checked every server once and found it DOWN: a
        server HAProxy has not checked yet may count as up, so no stack starts before that."""
        cfg = self.log_dir / "haproxy.cfg"
        cfg.write_text(render([(s.name, s.port) for s in self.stacks]))
        env = {**self.env, "ONEPASS_LB_BIND": f"127.0.0.1:{self.lb_port}",
               "ONEPASS_LB_SOCKET": str(self.socket_path)}
        binary = find_haproxy()
        check = subprocess.run([binary, "-c", "-q", "-f", str(cfg)], env=env,
                               capture_output=True, text=True)
        if check.returncode:
            raise RuntimeError(f"haproxy -c {cfg}:\n{check.stdout}{check.stderr}")
        with open(self.log_dir / "haproxy.log", "w") as out:
            self.haproxy = subprocess.Popen([binary, "-db", "-f", str(cfg)], env=env,
                                            stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.haproxy.poll() is not None:
                raise RuntimeError("haproxy exited: " + self.haproxy_log()[-2000:])
            try:
                if set(self.states().values()) == {"DOWN"}:
                    return
            except OSError:
                pass  # the socket is not there yet
            time.sleep(0.2)
        raise RuntimeError("haproxy did not check its servers in time: " + self.haproxy_log())

    def command(self, line: str) -> str:
        """One command on HAProxy's runtime API socket."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(str(self.socket_path))
            s.sendall(line.encode() + b"\n")
            chunks = []
            while data := s.recv(65536):
                chunks.append(data)
        return b"".join(chunks).decode()

    def states(self) -> dict[str, str]:
        """Each server's status as HAProxy sees it: UP, DOWN, MAINT, DRAIN, ..."""
        rows = [r.split(",") for r in self.command("show stat").splitlines() if r]
        col = rows[0].index("status")  # the header: "# pxname,svname,...,status,..."
        return {r[1]: r[col] for r in rows[1:] if len(r) > col and r[0] == BACKEND
                and r[1] not in ("FRONTEND", "BACKEND")}

    def wait_state(self, name: str, want: set, timeout: float = 30) -> float:
        """Seconds until HAProxy reports server `name` in one of `want`."""
        started = time.monotonic()
        while (state := self.states().get(name)) not in want:
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"{name} is {state}, not {want}, after {timeout} s")
            time.sleep(0.05)
        return time.monotonic() - started

    def haproxy_log(self) -> str:
        return (self.log_dir / "haproxy.log").read_text(errors="replace")

    # -- the stacks --------------------------------------------------------------------------
    def start_all(self, timeout: float = 900) -> None:
        for s in self.stacks:
            s.start(self.env)
        for s in self.stacks:
            s.wait_ready(timeout)
            self.wait_state(s.name, {"UP"}, 30)

    def roll(self, timeout: float = 900) -> list[int | None]:
        """A rolling restart: each stack in turn stopped (it drains), started again, and
        back in the balancer's rotation before the next one stops."""
        codes = []
        for s in self.stacks:
            codes.append(s.stop())
            s.start(self.env)
            s.wait_ready(timeout)
            self.wait_state(s.name, {"UP"}, 30)
        return codes

    def close(self) -> None:
        """The balancer first (a soft stop: it stops listening and finishes what it has in
        flight), then every stack at once (each drains), each waited for."""
        if self.haproxy and self.haproxy.poll() is None:
            self.haproxy.send_signal(signal.SIGUSR1)
            try:
                self.haproxy.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.haproxy.kill()
                self.haproxy.wait()
        for s in self.stacks:
            if s.proc and s.proc.poll() is None:
                s.proc.send_signal(signal.SIGTERM)
        for s in self.stacks:
            s.stop()
