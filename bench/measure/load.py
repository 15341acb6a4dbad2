"""Load on a running onepass (serve.sh): N clients for T minutes, a fixed mix of valid, invalid
and oversized requests, on keep-alive connections (a new one after each Connection: close).

Prints requests by status and kind, p50/p99 latency per kind, the shim's RSS at the start and
the end (from /proc; the shim's pid is found from its port, or given), and every request that
never got a complete response; then one JSON line with all of it and the conditions.
Usage: python bench/measure/load.py URL [--clients 64] [--minutes 10] [--seed 14] [--shim-pid PID]
  [--mix text|images]
--mix images (a vision profile) sends image-heavy requests: 4 PNGs of 512 KB each, layout.repeat
4 and 24 questions, beside the invalid and oversized ones; the shim's RSS is sampled every
0.2 s and its peak (the kernel's high-water mark, VmHWM) reported. Against
tests/support/fake_engine.py (no vLLM), from the checkout's root:
  python3 -c 'from tests.support import fake_engine; import time;
  e = fake_engine.FakeEngine(profile="idefics3-tiny"); print(e.url); time.sleep(1e6)' &
  # then: python3 -I -S shim.py --profile idefics3-tiny
  --vllm <that url>, and bench/measure/load.py http://127.0.0.1:8741 --mix images
Standard library only; the seed fixes each client's sequence of requests.
"""
import argparse
import base64
import json
import os
import platform
import random
import re
import socket
import sys
import threading
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.support.edge_client import Incomplete, read_response, request  # noqa: E402

STATE = ("I was charged twice for order {n}. The first charge was on the 3rd, the second on "
         "the 5th. Please refund one of them; I have been a customer for {y} years.")
QUESTIONS = {"refund": {"type": "noul", "instructions": "Is a refund asked for?"},
             "team": {"type": "choice", "criteria": {"billing": "Payments", "tech": None}},
             "anger": {"type": "score", "criteria": ["calm", "annoyed", "furious"]}}
INVALID = [b'{"model": "jev-latest", "state": "x", "questions": {', b'{"questions": null}',
           json.dumps({"model": "jev-latest", "state": "x", "questions": {"q": {"type": []}}}
                      ).encode(),
           json.dumps({"model": "nope", "state": "x", "questions": QUESTIONS}).encode()]


# Each client cycles through this mix, from its own starting point: 80 % valid, 15 % invalid,
# 5 % oversized, and a short run still sends every kind.
MIX = ["oversized"] + ["valid"] * 4 + (["invalid"] + ["valid"] * 4) * 3


def png(rng: random.Random, side: int = 418) -> bytes:
    """A complete RGB PNG of noise, stored (zlib level 0): side 418 is about 512 KB."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (len(data).to_bytes(4, "big") + kind + data
                + (zlib.crc32(kind + data) & 0xFFFFFFFF).to_bytes(4, "big"))
    rows = b"".join(b"\0" + rng.randbytes(3 * side) for _ in range(side))
    head = side.to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(rows, 0))
            + chunk(b"IEND", b""))


def image_request(rng: random.Random) -> bytes:
    """The issue's image-heavy request: 4 images of 512 KB, repeat 4, 24 questions."""
    images = ["data:image/png;base64," + base64.b64encode(png(rng)).decode() for _ in range(4)]
    questions = {f"q{i}": {"type": "noul", "instructions": f"Is [image {i % 4 + 1}] red?"}
                 for i in range(24)}
    body = json.dumps({"model": "jev-latest", "state": "four photos", "images": images,
                       "questions": questions, "kwargs": {"layout": {"repeat": 4}}}).encode()
    return request("POST", "/v1/systemone", body, {"Content-Type": "application/json"})


def next_request(rng: random.Random, kind: str, mix: str = "text") -> tuple[str, bytes]:
    """(kind, raw request); an oversized one announces 40 MiB and sends 64 KiB (the shim
    refuses it from its head); with the images mix a valid one is image_request."""
    if kind == "valid" and mix == "images":
        return "images", image_request(rng)
    if kind == "valid":
        ask = dict(rng.sample(sorted(QUESTIONS.items()), rng.randint(1, 3)))
        state = " ".join(STATE.format(n=rng.randint(1000, 9999), y=rng.randint(1, 9))
                         for _ in range(rng.choice([1, 1, 4, 16])))
        body = json.dumps({"model": "jev-latest", "state": state, "questions": ask}).encode()
        return "valid", request("POST", "/v1/systemone", body,
                                {"Content-Type": "application/json"})
    if kind == "invalid":
        return "invalid", request("POST", "/v1/systemone", rng.choice(INVALID))
    head = request("POST", "/v1/systemone", b"", {"Content-Length": str(40 << 20)})
    return "oversized", head + b"{" * 65536


class Client(threading.Thread):
    def __init__(self, addr, seed: int, until: float, timeout_s: float, first: int,
                 mix: str = "text"):
        super().__init__(daemon=True)
        self.mix = mix
        self.slot = first  # where in MIX this client starts
        self.addr, self.rng, self.until, self.timeout_s = addr, random.Random(seed), until, \
            timeout_s
        self.records = []  # (kind, status or "no response: why", seconds)

    def run(self):
        sock = rfile = None
        while time.monotonic() < self.until:
            kind, data = next_request(self.rng, MIX[self.slot % len(MIX)], self.mix)
            self.slot += 1
            started = time.monotonic()
            try:
                if sock is None:
                    sock = socket.create_connection(self.addr, timeout=self.timeout_s)
                    rfile = sock.makefile("rb")
                try:
                    sock.sendall(data)
                except OSError:
                    pass  # refused from its head: the answer is still owed
                status, headers, _ = read_response(rfile)
                if headers.get("connection") == "close":
                    sock.close()
                    sock = None
            except (Incomplete, OSError) as e:
                status = f"no response: {type(e).__name__}: {str(e)[:80]}"
                if sock is not None:
                    sock.close()
                sock = None
            self.records.append((kind, status, time.monotonic() - started))


def listener_pid(port: int) -> int | None:
    """The pid listening on 127.0.0.1:port, from /proc (Linux), or None."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
                    inodes.add(fields[9])
        except OSError:
            pass
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if re.fullmatch(r"socket:\[(\d+)\]", link) and link[8:-1] in inodes:
                    return int(pid)
        except OSError:
            continue
    return None


def rss_mib(pid: int | None, field: str = "VmRSS") -> float | None:
    """The process's resident memory now (VmRSS) or at its highest so far (VmHWM)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return int(re.search(field + r":\s+(\d+) kB", f.read()).group(1)) / 1024
    except (OSError, TypeError):
        return None


def sample_rss(pid, clients, peak: list) -> None:
    """The shim's peak RSS while the clients run: the kernel's high-water mark (VmHWM, since
    the shim started), else samples every 0.2 s."""
    while any(c.is_alive() for c in clients):
        now = rss_mib(pid, "VmHWM") or rss_mib(pid)
        if now is not None and (peak[0] is None or now > peak[0]):
            peak[0] = now
        time.sleep(0.2)


def percentile(values: list, q: float) -> float | None:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))] * 1000, 1) if values else None


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    args.add_argument("url")
    args.add_argument("--clients", type=int, default=64)
    args.add_argument("--minutes", type=float, default=10)
    args.add_argument("--seed", type=int, default=14)
    args.add_argument("--timeout-s", type=float, default=300)
    args.add_argument("--shim-pid", type=int)
    args.add_argument("--mix", choices=("text", "images"), default="text",
                      help="images: 4 x 512 KB PNGs, repeat 4, 24 questions (a vision profile)")
    a = args.parse_args()
    host, port = re.fullmatch(r"http://([^:/]+):(\d+)/?", a.url).groups()
    pid = a.shim_pid or listener_pid(int(port))
    rss_start = rss_mib(pid)
    until = time.monotonic() + a.minutes * 60
    clients = [Client((host, int(port)), a.seed * 1000 + i, until, a.timeout_s,
                      i * 7 % len(MIX), a.mix) for i in range(a.clients)]
    started = time.monotonic()
    peak = [rss_start]
    sampling = threading.Thread(target=sample_rss, args=(pid, clients, peak), daemon=True)
    for c in clients:
        c.start()
    sampling.start()
    for c in clients:
        c.join()
    sampling.join()
    took = time.monotonic() - started
    records = [r for c in clients for r in c.records]
    by_status, latency, lost = {}, {}, []
    for kind, status, seconds in records:
        key = f"{kind} {status}" if isinstance(status, int) else f"{kind} no response"
        by_status[key] = by_status.get(key, 0) + 1
        if isinstance(status, int):
            latency.setdefault(kind, []).append(seconds)
        else:
            lost.append(f"{kind}: {status}")
    report = {"clients": a.clients, "seconds": round(took, 1), "requests": len(records),
              "by_status": dict(sorted(by_status.items())),
              "latency_ms": {k: {"p50": percentile(v, 0.5), "p99": percentile(v, 0.99)}
                             for k, v in sorted(latency.items())},
              "shim_rss_mib": {"start": rss_start, "peak": peak[0], "end": rss_mib(pid)},
              "shim_pid": pid, "mix": a.mix,
              "no_response": len(lost), "seed": a.seed,
              "host": f"{platform.machine()} {os.cpu_count()} cpus"}
    for key, n in report["by_status"].items():
        print(f"{key:28} {n:7}")
    for kind, lat in report["latency_ms"].items():
        print(f"{kind:10} p50 {lat['p50']} ms  p99 {lat['p99']} ms")
    print(f"shim RSS {rss_start} MiB at start, {peak[0]} MiB at its peak, "
          f"{report['shim_rss_mib']['end']} MiB at the end")
    print(f"{len(lost)} requests never got a complete response" + "".join(
        f"\n  {line}" for line in lost[:20]))
    print(json.dumps(report))
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
