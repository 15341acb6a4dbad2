"""Test helpers for the HTTP edge, standard library only: raw requests over a socket, a reader
that accepts only complete HTTP responses, connected pairs of sockets (a socketpair, a TCP
connection on 127.0.0.1), and the shim as its own
process (`python3 -I -S shim.py`) in front of tests/support/fake_engine.py, with its resident
memory.
"""
import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time

from tests.support.paths import ROOT


class Incomplete(AssertionError):
    """The server sent no response, or one cut short."""


def read_response(rfile) -> tuple[int, dict, bytes]:
    """(status, headers with lower-case names, body) of one complete response, else Incomplete."""
    line = rfile.readline(65536)
    match = re.fullmatch(rb"HTTP/1\.1 (\d{3}) [^\r\n]*\r\n", line)
    if not match:
        raise Incomplete(f"no status line: {line[:80]!r}")
    headers = {}
    while (field := rfile.readline(65536)) != b"\r\n":
        name, colon, value = field.partition(b":")
        if not colon or not field.endswith(b"\r\n"):
            raise Incomplete(f"a response header line is cut or malformed: {field[:80]!r}")
        headers[name.decode().lower()] = value.strip().decode("latin-1")
    body = rfile.read(int(headers["content-length"]))
    if len(body) != int(headers["content-length"]):
        raise Incomplete(f"the body has {len(body)} of {headers['content-length']} bytes")
    return int(match.group(1)), headers, body


def exchange(addr, data: bytes, timeout: float = 5.0,
             source: str | None = None) -> tuple[list, bytes]:
    """Send `data` on a new connection (from the loopback address `source`, when given), then
    read until the server closes: every complete response, and whatever bytes follow the last
    one (b"" from a well-behaved server)."""
    with socket.create_connection(addr, timeout=timeout,
                                  source_address=(source, 0) if source else None) as sock:
        try:
            sock.sendall(data)
        except OSError:
            pass  # the server answered early and stopped reading: its answer is still owed
        rfile = sock.makefile("rb")
        responses = []
        while rfile.peek(1):
            responses.append(read_response(rfile))
        return responses, rfile.read()


def socket_pair(test) -> tuple[socket.socket, socket.socket]:
    """(server side, client side) of a connection, both closed when `test` ends."""
    a, b = socket.socketpair()
    test.addCleanup(a.close)
    test.addCleanup(b.close)
    return a, b


def tcp_pair(test) -> tuple[socket.socket, socket.socket]:
    """(server side, client side) of a TCP connection on 127.0.0.1, both closed when `test`
    ends: what a client's FIN or reset does to the server side, as the shim sees it."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname()[:2], timeout=5)
        server_side, _ = listener.accept()
    test.addCleanup(server_side.close)
    test.addCleanup(client.close)
    return server_side, client


def request(method: str, path: str, body: bytes = b"", headers: dict | None = None) -> bytes:
    fields = {"Host": "localhost", "Content-Length": str(len(body)), **(headers or {})}
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
    return head.encode("latin-1") + b"\r\n" + body


class ShimProcess:
    """The shim as a separate process on a free port (`env`: ONEPASS_* settings)."""

    def __init__(self, vllm_url: str, env: dict | None = None, max_files: int | None = None):
        clean = {k: v for k, v in os.environ.items() if not k.startswith("ONEPASS_")}
        limit = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (max_files, max_files))) \
            if max_files else None
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(ROOT / "shim.py"), "--port", "0", "--vllm",
             vllm_url], cwd=ROOT, env={**clean, **(env or {})}, stderr=subprocess.PIPE,
            text=True, preexec_fn=limit)
        self.log: list[str] = []
        for line in self.proc.stderr:
            self.log.append(line)
            if "listening on" in line:
                break
        else:
            raise RuntimeError("the shim did not start:\n" + "".join(self.log))
        self.addr = ("127.0.0.1", int(re.search(r"http://[\d.]+:(\d+)", line).group(1)))
        self.reader = threading.Thread(target=lambda: self.log.extend(self.proc.stderr),
                                       daemon=True)
        self.reader.start()

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            [(status, _, _)], _ = exchange(self.addr, request("GET", "/health", headers={
                "Connection": "close"}))
            if status == 200:
                return
            time.sleep(0.05)
        raise AssertionError("the shim did not get ready:\n" + "".join(self.log[-20:]))

    def cpu_s(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        code = self.proc.wait(timeout=60)
        self.reader.join(timeout=5)  # the log to its end
        self.proc.stderr.close()
        return code


def run_cases(addr, cases, statuses: dict, failures: list, threads: int = 4,
              server_errors: list | None = None) -> None:
    """(index, raw request) pairs over `threads` keep-alive connections (a new one after each
    Connection: close): statuses counted, every request without one complete response noted in
    failures, and each 5xx answer's (index, status, body) in server_errors."""
    lock = threading.Lock()

    def worker(part):
        sock = None
        for i, data in part:
            if sock is None:
                sock = socket.create_connection(addr, timeout=30)
                rfile = sock.makefile("rb")
            try:
                try:
                    sock.sendall(data)
                except OSError:
                    pass  # refused early: its answer is still owed
                status, headers, body = read_response(rfile)
            except (Incomplete, OSError) as e:
                failures.append((i, repr(e)[:200], data[:200]))
                sock.close()
                sock = None
                continue
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                if status >= 500 and server_errors is not None:
                    server_errors.append((i, status, body[:300]))
            if headers.get("connection") == "close":
                sock.close()
                sock = None
        if sock is not None:
            sock.close()
    workers = [threading.Thread(target=worker, args=(cases[k::threads],))
               for k in range(threads)]
    [t.start() for t in workers]
    [t.join() for t in workers]
