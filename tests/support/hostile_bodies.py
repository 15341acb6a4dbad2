"""Hostile request bodies at a server's default limits, and many of them sent at once while the
shim's memory is watched: structure bombs (`[{},{},...]`, `[[[[...`), tiny strings and numbers,
placeholder amplification, one huge string (ASCII, and wide: one emoji makes Python store every
character in 4 bytes), each gzip'd to the decoded cap or sent plain at the wire cap. Used by
bench/measure/hostile_bodies.py, tests/live/test_hostile_bodies_live.py and test_security.py.
"""
import base64
import gzip
import json
import re
import threading
import time
from dataclasses import dataclass

from onepass.backend.warmup import png
from tests.support.edge_client import exchange, request

CAP = 12 << 20  # the default decoded and wire limits, images aside (onepass/config.py)
NORMAL = {"model": "jev-latest",
          "state": "I was charged twice for my subscription this month. Please refund one charge.",
          "questions": {
              "refund": {"type": "noul", "instructions": "Is the customer asking for money back?"},
              "team": {"type": "choice", "instructions": "Which team should handle this?",
                       "criteria": {"billing": "Payments and refunds", "tech": "Bugs and outages",
                                    "sales": None}}}}
QUESTIONS = {"q": {"type": "noul", "instructions": "Is the customer asking for money back?"}}


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes  # as sent
    decoded: int
    coding: str = ""  # its Content-Encoding

    def raw(self, headers: dict) -> bytes:
        extra = {"Content-Encoding": self.coding} if self.coding else {}
        return request("POST", "/v1/systemone", self.data, {
            "Content-Type": "application/json", "Connection": "close", **extra, **headers})


def array(item: bytes, size: int) -> bytes:
    """`[item,item,...]` of at most `size` bytes."""
    return b"[" + b",".join([item] * ((size - 1) // (len(item) + 1))) + b"]"


def systemone(size: int, state_head: str = "", filler: str = "x", **fields) -> bytes:
    """A System One request of `size` bytes whose state string is `state_head` then filler."""
    shell = json.dumps({"model": "jev-latest", "questions": QUESTIONS, **fields,
                        "state": state_head}, ensure_ascii=False).encode()
    return shell[:-2] + filler.encode() * (size - len(shell)) + b'"}'


def cases(cap: int = CAP) -> list:
    """The worst bodies per kind at these limits, each as large as they allow."""
    asset = {"a": {"type": "image", "format": "png",
                   "data_base64": base64.b64encode(png(2, 2, (255, 0, 0))).decode()}}
    plain = [("objects [{},{},...]", array(b"{}", cap)),
             ("nesting [[[[...]]]]", b"[" * (cap // 2) + b"]" * (cap // 2)),
             ("nesting 240,000 deep", b"[" * 240_000 + b"]" * 240_000),
             ("tiny strings", array(b'"a"', cap)),
             ("tiny numbers", array(b"0", cap)),
             ("placeholder `a`", systemone(cap, filler="a", assets=asset)),
             ("one string", systemone(cap)),
             ("one wide string", systemone(cap, state_head="\U0001f600"))]
    out = []
    for name, text in plain:
        if name in ("objects [{},{},...]", "tiny strings", "nesting 240,000 deep", "one string"):
            out.append(Case(f"{name}, gzip", gzip.compress(text, 9), len(text), "gzip"))
        if name not in ("objects [{},{},...]", "nesting 240,000 deep"):
            out.append(Case(f"{name}, identity", text, len(text)))
    return out


def send(addr, data: bytes, timeout: float = 120.0, source: str | None = None) -> tuple:
    """(status, seconds) of one request on its own connection (0: no complete answer)."""
    started = time.monotonic()
    try:
        responses, _ = exchange(addr, data, timeout, source)
        status = responses[0][0] if responses else 0
    except (OSError, AssertionError):
        status = 0
    return status, time.monotonic() - started


def flood(addr, bodies: list) -> list:
    """Every body sent at once, one connection each, each from a loopback address of its own
    (127.0.1.N: as many clients, so what bounds them is the server's body budget, not one
    source's share of it): [(status, seconds)] in their order."""
    results = [None] * len(bodies)
    gate = threading.Barrier(len(bodies))

    def one(i):
        gate.wait()
        results[i] = send(addr, bodies[i], source=f"127.0.1.{i % 250 + 1}")
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return results


@dataclass
class Round:
    hostile: list  # (status, seconds) per body
    decision: tuple  # (status, seconds, answer document, attempts) of the normal decision
    health: tuple  # (status, seconds) of GET /health
    growth_kib: int  # the shim's peak resident size over where it started


def decide(addr, headers: dict, patience_s: float = 120.0) -> tuple:
    """The normal decision as a client sends it: a 529 (the in-flight limit, the body budget)
    retried after its retry-after-ms, as the official clients do. (status, seconds, document,
    attempts)."""
    started, attempts = time.monotonic(), 0
    while True:
        attempts += 1
        try:
            [(status, got, raw)], _ = exchange(addr, request(
                "POST", "/v1/systemone", json.dumps(NORMAL).encode(),
                {"Content-Type": "application/json", "Connection": "close", **headers}), 600)
            doc = json.loads(raw)
        except (OSError, ValueError, AssertionError) as e:
            status, got, doc = 0, {}, {"error": repr(e)}
        if status != 529 or time.monotonic() - started > patience_s:
            return status, time.monotonic() - started, doc, attempts
        time.sleep(int(got.get("retry-after-ms", "200")) / 1000)


def round_of(addr, pid: int, bodies: list, headers: dict | None = None,
             delay_s: float = 0.2) -> Round:
    """The bodies flooded at once; `delay_s` into it, a normal decision and /health sent
    beside them (each on its own connection); the shim's memory watched throughout."""
    headers = headers or {}
    aside = {}

    def decision():
        time.sleep(delay_s)
        aside["decision"] = decide(addr, headers)

    def health():
        time.sleep(delay_s)
        aside["health"] = send(addr, request("GET", "/health", headers={"Connection": "close"}))
    beside = [threading.Thread(target=decision), threading.Thread(target=health)]
    with Memory(pid) as memory:
        [t.start() for t in beside]
        hostile = flood(addr, bodies)
        [t.join() for t in beside]
    return Round(hostile, aside["decision"], aside["health"], memory.growth)


class Memory:
    """A process's resident memory while something runs: the kernel's high-water mark (reset
    first through /proc/PID/clear_refs where allowed) and samples every few milliseconds, in
    KiB; `growth` is the peak over the resident size when it started."""

    def __init__(self, pid: int):
        self.pid, self.samples, self.stop = pid, [], threading.Event()

    def status(self, field: str) -> int:
        with open(f"/proc/{self.pid}/status") as f:
            return int(re.search(rf"{field}:\s+(\d+) kB", f.read()).group(1))

    def __enter__(self):
        try:
            with open(f"/proc/{self.pid}/clear_refs", "w") as f:
                f.write("5")  # the peak resident size starts again from the current one
            self.hwm = True
        except OSError:
            self.hwm = False
        self.start = self.status("VmRSS")
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()
        return self

    def sample(self):
        while not self.stop.wait(0.005):
            try:
                self.samples.append(self.status("VmRSS"))
            except (OSError, AttributeError):
                return

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        peak = max(self.samples, default=self.start)
        if self.hwm:
            peak = max(peak, self.status("VmHWM"))
        self.growth = peak - self.start
