"""Goodput under overload: a running onepass (serve.sh) driven at 1x, 2x and 4x its measured
capacity by clients that give up after a fixed time.

Usage: python bench/measure/overload.py URL --access-log LOG_DIR/shim.log [--give-up 5]
  [--seconds 60] [--loads 1,2,4] [--capacity R] [--no-deadline] [--seed 7] [--json OUT]
  [--sources 16] [--png overload.png [--compare EARLIER.json]]
  python bench/measure/overload.py URL --from-json RUN.json --png PNG [--compare OTHER.json]
1. Capacity (unless --capacity): 8 clients send back to back for 40 s; capacity = decisions/s.
2. Each load f: requests arrive at random (Poisson) at f x capacity for --seconds, each on its
   own connection, with its own X-Request-Id and, unless --no-deadline, the header
   `x-envoy-expected-rq-timeout-ms: <give-up>` (what Envoy sends for a route timeout). A client
   waits --give-up seconds for its answer, then closes its connection; it never retries.
3. Goodput: answers (200) received within the give-up time, per second. Wasted engine work: the
   tokens vLLM computed (the access log's engine_tokens, joined by request id) for requests
   whose answer nobody received in time, over all tokens computed for the run.
The load steps run in --loads' order (1,2,4 for one pass, 4,2,1 for the opposite one). The
clients are spread over --sources loopback source addresses (127.0.0.2 ... 127.0.0.17 by
default: each request binds its socket to the next one), because the shim gives each source
address a quarter of its in-flight slots (16 of 64) and of its connections, and one address
would be refused at its share long before the server is loaded; --sources 0 sends from the
system's choice (127.0.0.1).
Prints per load: offered and delivered rates, goodput against the 1x throughput, p50/p99 of the
delivered answers, refusals (529/503, with Retry-After or not), 504s, give-ups, tokens and the
wasted share; then one JSON line. Each request's body: three questions (yes/no, choice, score)
on a short new state. --png draws goodput and the wasted share against the load, beside the
runs of --compare (JSON files of earlier runs, e.g. --no-deadline); --from-json draws a run
already measured instead of running one (URL only names the model in the footer). Standard
library only (matplotlib for --png, bench/lib/plots.py).
"""
import argparse
import json
import random
import statistics
import sys
import threading
import time
import urllib.parse
import http.client
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "lib")]
import shim_auth  # noqa: E402

STATE = ("I was charged twice for order {n}. The first charge was on the 3rd, the second on "
         "the 5th. Please refund one of them; I have been a customer for {y} years.")
QUESTIONS = {"refund": {"type": "noul", "instructions": "Is a refund asked for?"},
             "team": {"type": "choice", "criteria": {"billing": "Payments", "tech": None,
                                                     "sales": "New orders"}},
             "anger": {"type": "score", "criteria": ["calm", "annoyed", "furious"]}}
CAPACITY_CLIENTS, CAPACITY_SECONDS = 8, 40
DRAIN_S = 3.0  # after the last give-up: the shim has cut or finished every request by then


def body(n: int) -> bytes:
    return json.dumps({"model": "jev-latest", "state": STATE.format(n=n, y=n % 17 + 1),
                       "questions": QUESTIONS}).encode()


SOURCES: list = []  # the loopback addresses the clients bind to, in turn (--sources)


def source(n: int):
    return (SOURCES[n % len(SOURCES)], 0) if SOURCES else None


def send(url, n: int, request_id: str, give_up_s: float | None, deadline: bool) -> dict:
    """One request on its own connection; the client closes it at the give-up time."""
    parts = urllib.parse.urlsplit(url)
    headers = {**shim_auth.headers(), "X-Request-Id": request_id}
    if deadline and give_up_s:
        headers["x-envoy-expected-rq-timeout-ms"] = str(int(give_up_s * 1000))
    started = time.monotonic()
    out = {"id": request_id, "status": 0, "retry_after": False}
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=give_up_s or 600,
                                      source_address=source(n))
    try:
        conn.request("POST", "/v1/systemone", body=body(n), headers=headers)
        if give_up_s:
            conn.sock.settimeout(max(0.01, give_up_s - (time.monotonic() - started)))
        r = conn.getresponse()
        r.read()
        out.update(status=r.status, retry_after=r.getheader("Retry-After") is not None)
    except (TimeoutError, OSError):
        out["status"] = 0  # gave up (or never reached): the connection closes here
    finally:
        conn.close()
    out["seconds"] = time.monotonic() - started
    out["in_time"] = out["status"] == 200 and (not give_up_s or out["seconds"] <= give_up_s)
    return out


def capacity(url, seconds: float, clients: int) -> float:
    """Decisions per second with `clients` sending back to back (no deadline, no give-up)."""
    done, stop, lock = [], time.monotonic() + seconds, threading.Lock()

    def client(c):
        n = 0
        while time.monotonic() < stop:
            got = send(url, 10_000 * (c + 1) + n, f"ovl-cap-{c}-{n}", None, False)
            n += 1
            with lock:
                done.append(got)
    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [d for d in done if d["status"] == 200]
    return len(ok) / (time.monotonic() - started)


def run_load(url, rate: float, seconds: float, give_up: float, deadline: bool, tag: str,
             rng: random.Random) -> list:
    """Open-loop arrivals at `rate` per second for `seconds`: every request's outcome."""
    results, threads, lock = [], [], threading.Lock()
    at, n, start = 0.0, 0, time.monotonic()
    while True:
        at += rng.expovariate(rate)
        if at > seconds:
            break
        time.sleep(max(0.0, start + at - time.monotonic()))

        def one(n=n):
            got = send(url, 1_000_000 + n, f"ovl-{tag}-{n}", give_up, deadline)
            with lock:
                results.append(got)
        threads.append(threading.Thread(target=one))
        threads[-1].start()
        n += 1
    for t in threads:
        t.join()
    return results


def tokens_by_id(log_path: str, prefix: str) -> dict:
    """engine_tokens of each access log line whose request id starts with `prefix`."""
    out = {}
    with open(log_path, errors="replace") as f:
        for line in f:
            start = line.find('{"ts"')
            if start < 0 or f'"ovl-{prefix}' not in line:
                continue
            try:
                doc = json.loads(line[start:])
            except ValueError:
                continue
            out[doc["request_id"]] = doc.get("engine_tokens", 0)
    return out


def summary(results: list, tokens: dict, seconds: float, rate: float) -> dict:
    delivered = [r["seconds"] for r in results if r["in_time"]]
    refused = [r for r in results if r["status"] in (503, 529)]
    spent = sum(tokens.get(r["id"], 0) for r in results)
    wasted = sum(tokens.get(r["id"], 0) for r in results if not r["in_time"])
    q = statistics.quantiles(delivered, n=100) if len(delivered) >= 2 else [0] * 99
    return {"offered_per_s": round(rate, 3), "sent": len(results),
            "goodput_per_s": round(len(delivered) / seconds, 3), "in_time": len(delivered),
            "late": sum(r["status"] == 200 and not r["in_time"] for r in results),
            "refused": len(refused), "refused_with_retry_after": sum(r["retry_after"]
                                                                      for r in refused),
            "deadline_504": sum(r["status"] == 504 for r in results),
            "gave_up": sum(r["status"] == 0 for r in results),
            "other": sum(r["status"] not in (0, 200, 503, 504, 529) for r in results),
            "p50_s": round(q[49], 3), "p99_s": round(q[98], 3),
            "engine_tokens": spent, "wasted_tokens": wasted,
            "wasted_share": round(wasted / spent, 4) if spent else 0.0,
            "unlogged": sum(r["id"] not in tokens for r in results)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--access-log", help="the shim's log (serve.sh: LOG_DIR/shim.log)")
    ap.add_argument("--from-json", help="a run's --json output: draw it (--png), run nothing")
    ap.add_argument("--give-up", type=float, default=5.0)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--loads", default="1,2,4")
    ap.add_argument("--capacity", type=float, help="decisions/s (default: measured first)")
    ap.add_argument("--no-deadline", action="store_true", help="send no deadline header")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--sources", type=int, default=16,
                    help="loopback source addresses 127.0.0.2 ... to spread the clients over")
    ap.add_argument("--json")
    ap.add_argument("--png")
    ap.add_argument("--compare", default="", help="comma-separated JSON files of earlier runs")
    args = ap.parse_args()
    url, rng = args.url.rstrip("/"), random.Random(args.seed)
    SOURCES[:] = [f"127.0.0.{2 + i}" for i in range(args.sources)]
    if args.from_json:
        return draw(args, url, json.loads(Path(args.from_json).read_text()))
    if not args.access_log:
        ap.error("--access-log is needed to join the engine tokens")
    cap = args.capacity or capacity(url, CAPACITY_SECONDS, CAPACITY_CLIENTS)
    mode = "no deadline header" if args.no_deadline else f"deadline header {args.give_up} s"
    print(f"capacity {cap:.3f} decisions/s; clients give up after {args.give_up} s; {mode}")
    rows, run = [], f"{int(time.time())}"
    for load in (float(x) for x in args.loads.split(",")):
        tag = f"{run}-{load:g}x"
        results = run_load(url, load * cap, args.seconds, args.give_up, not args.no_deadline,
                           tag, rng)
        time.sleep(DRAIN_S)
        row = {"load": load, **summary(results, tokens_by_id(args.access_log, tag),
                                       args.seconds, load * cap)}
        rows.append(row)
        print(f"{load:g}x: offered {row['offered_per_s']}/s, goodput {row['goodput_per_s']}/s "
              f"({row['in_time']} of {row['sent']}), p50 {row['p50_s']} s, p99 {row['p99_s']} s, "
              f"refused {row['refused']} ({row['refused_with_retry_after']} with Retry-After), "
              f"504 {row['deadline_504']}, gave up {row['gave_up']}, late {row['late']}, "
              f"wasted {row['wasted_tokens']} of {row['engine_tokens']} tokens "
              f"({100 * row['wasted_share']:.1f} %)", flush=True)
    base = next((r["goodput_per_s"] for r in rows if r["load"] == 1), None)
    for r in rows:
        r["goodput_vs_1x"] = round(r["goodput_per_s"] / base, 3) if base else None
    out = {"capacity_per_s": round(cap, 3), "give_up_s": args.give_up, "mode": mode,
           "seconds": args.seconds, "seed": args.seed, "sources": args.sources, "rows": rows}
    print(json.dumps(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    draw(args, url, out)


def draw(args, url: str, out: dict) -> None:
    if args.png:
        import plots
        runs = [json.loads(Path(p).read_text()) for p in args.compare.split(",") if p]
        plots.goodput_vs_load(args.png, [out, *runs], plots.label(plots.served_model(url)),
                              f"Goodput against offered load (clients give up after "
                              f"{out['give_up_s']:g} s)")


if __name__ == "__main__":
    main()
