"""Throughput and p50/p99 latency at 1, 2 and 4 onepass servers behind HAProxy on this machine,
the balancer's own overhead against direct calls, and where the CPU time goes.

Usage: ONEPASS_VENV=/work/main/.venv python3 bench/measure/balancer_scale.py [--servers 1,2,4]
       [--clients 8] [--seconds 20] [--port 8820] [--log-dir logs/bench-scale] [--json OUT]
Starts max(--servers) stacks once (deploy/cluster.py: serve.sh each, with serve.sh's defaults,
and deploy/haproxy.cfg), then for each N puts every server beyond the first N in maintenance
through HAProxy's runtime API, so the idle ones stay started but get no request.
- balanced, N servers: --clients clients post the README's request (a noul, a choice and a
  score on one ticket: 3 reads) back to back through the balancer for --seconds, after 2 s
  not timed. Requests/s, p50/p99, errors.
- direct vs balanced (N = 1): 1 client, the same request, straight to the first shim and then
  through the balancer; and 300 GET /v1/models each way (no model work: the balancer's
  overhead on its own).
- CPU: the machine's busy share (/proc/stat) during each timed run, and each process group's
  CPU seconds over it (vLLMs, shims, HAProxy, this client).
Standard library only; run with nothing else busy on the machine.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy"))
sys.path.insert(0, str(ROOT / "bench" / "lib"))
import shim_auth  # noqa: E402
from cluster import Cluster  # noqa: E402

BODY = json.dumps({"model": "jev-latest", "state": "I was charged twice for my subscription "
                   "this month. Please refund one charge.", "questions": {
                       "refund": {"type": "noul",
                                  "instructions": "Is the customer asking for money back?"},
                       "team": {"type": "choice", "instructions": "Which team should handle this?",
                                "criteria": {"billing": "Payments and refunds",
                                             "tech": "Bugs and outages", "sales": None}},
                       "anger": {"type": "score", "instructions": "How angry is the customer?",
                                 "criteria": ["Calm", "Annoyed", "Furious"]}}}).encode()
TICK = os.sysconf("SC_CLK_TCK")


def call(base: str, method: str = "POST", path: str = "/v1/systemone") -> int:
    host, port = base.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    conn.request(method, path, body=BODY if method == "POST" else None,
                 headers=shim_auth.headers())
    r = conn.getresponse()
    r.read()
    conn.close()
    return r.status


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def load(base: str, clients: int, seconds: float, warm_s: float = 2.0) -> dict:
    """Clients back to back for warm_s (not timed), then for `seconds`."""
    lat, errors, stop, timing = [], [], threading.Event(), threading.Event()

    def client():
        while not stop.is_set():
            t = time.perf_counter()
            try:
                status = call(base)
            except (OSError, http.client.HTTPException) as e:
                status = repr(e)
            if timing.is_set():
                (lat.append(time.perf_counter() - t) if status == 200 else errors.append(status))
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    time.sleep(warm_s)
    before = cpu_snapshot()
    timing.set()
    started = time.perf_counter()
    time.sleep(seconds)
    timing.clear()  # what finishes after this is not counted
    elapsed, cpu = time.perf_counter() - started, cpu_since(before)
    stop.set()
    for t in threads:
        t.join()
    return {"clients": clients, "seconds": round(elapsed, 1), "requests": len(lat),
            "rps": round(len(lat) / elapsed, 2), "p50_ms": round(pct(lat, .5) * 1000, 1),
            "p99_ms": round(pct(lat, .99) * 1000, 1), "errors": errors,
            "cpu": cpu}


def sequential(base: str, method: str, path: str, n: int) -> dict:
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        assert call(base, method, path) == 200
        lat.append(time.perf_counter() - t)
    return {"n": n, "p50_ms": round(pct(lat, .5) * 1000, 2), "p99_ms": round(pct(lat, .99) * 1000, 2),
            "mean_ms": round(statistics.mean(lat) * 1000, 2)}


# -- where the CPU goes ---------------------------------------------------------------------
GROUPS: dict[str, set] = {}  # name -> process-group ids or pids, filled in by main()


def proc_times() -> dict[str, float]:
    """CPU seconds so far per named group: a pid in a group by its process group or itself."""
    out = {name: 0.0 for name in GROUPS}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, pgrp, cpu = int(entry), int(fields[2]), (int(fields[11]) + int(fields[12])) / TICK
        for name, ids in GROUPS.items():
            if pid in ids or pgrp in ids:
                out[name] += cpu
                break
    return out


def machine_busy() -> tuple[float, float]:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


def cpu_snapshot():
    return time.perf_counter(), machine_busy(), proc_times()


def cpu_since(before) -> dict:
    t0, (busy0, all0), procs0 = before
    elapsed, (busy1, all1), procs1 = time.perf_counter() - t0, machine_busy(), proc_times()
    share = {k: round((procs1[k] - procs0[k]) / elapsed, 2) for k in procs1}  # cores used
    busy = (busy1 - busy0) / max(1, all1 - all0)
    # whatever else runs on the machine meanwhile (other users' jobs) is not ours: say so
    share["others"] = round(max(0.0, busy * os.cpu_count() - sum(share.values())), 2)
    return {"machine_busy": round(busy, 3), "cores_used": share,
            "loadavg_1m": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", default="1,2,4")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--port", type=int, default=8820)
    ap.add_argument("--log-dir", type=Path, default=ROOT / "logs" / "bench-scale")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    counts = sorted(int(n) for n in args.servers.split(","))
    ports = [(args.port + 2 * i + 1, args.port + 2 * i + 2) for i in range(counts[-1])]
    cluster = Cluster(ports, args.port, args.log_dir)
    report = {"machine": {"cpus": os.cpu_count(), "model": cpu_model()}, "rows": []}
    try:
        cluster.start_balancer()
        started = time.monotonic()
        cluster.start_all()
        print(f"{counts[-1]} stacks ready in {time.monotonic() - started:.0f} s", flush=True)
        report["dtype"] = next((ln.split("dtype ", 1)[1].strip() for ln in
                                cluster.stacks[0].lines if "start vLLM: dtype" in ln), "?")
        GROUPS.update({"haproxy": {cluster.haproxy.pid}, "client": {os.getpid()}})
        for s in cluster.stacks:
            GROUPS[f"vllm {s.name}"] = {s.vllm_pid}
            GROUPS[f"shim {s.name}"] = {s.shim_pid}
        for n in counts:
            for i, s in enumerate(cluster.stacks):
                cluster.command(f"set server onepass/{s.name} state "
                                f"{'ready' if i < n else 'maint'}")
                cluster.wait_state(s.name, {"UP"} if i < n else {"MAINT"}, 30)
            if n == 1:  # the balancer's overhead, with one server in rotation
                first = cluster.stacks[0].url
                for way, base in (("direct", first), ("balanced", cluster.url)):
                    report["rows"].append({"what": f"GET /v1/models, {way}",
                                           **sequential(base, "GET", "/v1/models", 300)})
                    report["rows"].append({"what": f"decision, 1 client, {way}",
                                           **load(base, 1, args.seconds / 2)})
                    print(json.dumps(report["rows"][-2:]), flush=True)
            row = {"what": f"decision, {args.clients} clients, balanced, {n} servers",
                   "servers": n, **load(cluster.url, args.clients, args.seconds)}
            report["rows"].append(row)
            print(json.dumps(row), flush=True)
    finally:
        cluster.close()
    print_table(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


def cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        return next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")


def print_table(report: dict) -> None:
    print(f"\n{report['machine']['cpus']} CPUs ({report['machine']['model']}), "
          f"dtype {report.get('dtype')}")
    print("| what | requests | req/s | p50 ms | p99 ms | errors | machine busy | load 1m | "
          "cores used |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in report["rows"]:
        cpu = r.get("cpu", {})
        used = ", ".join(f"{k} {v}" for k, v in cpu.get("cores_used", {}).items() if v >= 0.01)
        print(f"| {r['what']} | {r.get('requests', r.get('n'))} | {r.get('rps', '')} | "
              f"{r['p50_ms']} | {r['p99_ms']} | {len(r.get('errors', []))} | "
              f"{cpu.get('machine_busy', '')} | {cpu.get('loadavg_1m', '')} | {used} |")


if __name__ == "__main__":
    main()
