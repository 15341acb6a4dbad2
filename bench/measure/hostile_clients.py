"""Hostile clients whose costs a body's size does not show, against a shim at its default
settings: for each shape (tests/support/hostile_clients.py), `--count` requests in flight at
once from one address (127.0.0.2) while a normal decision comes from another (127.0.0.1).
Shapes: slow bodies (a head of Content-Length 100000 and five bytes, then nothing, held open
while the decision beside runs), a 10-byte `br` body, a 2 MiB state in 2-byte chunks (its plain
time: the same body with a Content-Length), `gzip, gzip`, 4 MiB of multipart `xy\\r\\n--a`, an asset placeholder of a
million characters, and (with a vision profile) four links to 20 MiB images on a local server.

Prints per shape: the statuses, p50 / max seconds, the same request sent plainly (Content-
Length) once, the shim's peak RSS growth (its high-water mark, reset first, and samples every
5 ms: tests/support/hostile_bodies.Memory), and the decision beside it (status, seconds, and its
quiet latency: the median of three sent alone); then the issue's targets, each met or not:
every hostile request a 4xx within 5 s, a 529 with Retry-After within the body budget's wait
(5 s) and a second (its address past its share: the issue's refusal for it), or answered in
under 2x its plain time; growth under 256 MiB; and beside the slow bodies the other address's decision a 200 in under 2x its quiet
latency (beside the other shapes its time is shown: 64 requests arriving at once share the
shim's cores with it).

Then the issue's recipes (bench/lib/hostile_recipes.py, run by hostile_recipe_runs.py): heads
held open from four addresses, a body and an image answer trickled (vision profile), a heavy
request with a pipelined byte before its close (its engine work must stop), a multipart header
bomb, a long state of 19,990 paragraphs and 400 questions (its shim CPU and /tokenize calls),
four expensive requests from one address, 8 KiB chunk extensions. For each: what a well-behaved
client on 127.0.0.1 got meanwhile (statuses, p50) against its quiet p50 measured alone just
before, the ratio, the shim's peak RSS growth, and the verdict: every one of its requests a 200
within 2x its quiet p50, met or NOT MET.

Usage:
  python3 bench/measure/hostile_clients.py --vllm http://127.0.0.1:8742
      its own shim (python3 -I -S shim.py, default settings) before that vLLM (serve.sh's key
      from ONEPASS_VLLM_KEY): the decision is the model's real answer
  python3 bench/measure/hostile_clients.py --fake [--profile idefics3-tiny]
      its own shim before tests/support/fake_engine.py; a vision profile adds the links shape
      (links allowed to this machine's image server for the run)
Options: --count N (64), --key KEY, --json OUT, --recipes a,b,c (`shapes`, the 64-at-once
shapes above, and the names in bench/lib/hostile_recipes.RECIPES; default every one this stack
can run: the vision recipes need a vision profile, `stray` a real vLLM), --window-s S (10: how
long heads and expensive requests are held, and the heavy request runs, beside the
well-behaved client), --vllm-scheduling priority|fcfs (priority: the shim's setting for a vLLM
started by serve.sh's default; fcfs for one started with ONEPASS_VLLM_SCHEDULING=fcfs).
"""
import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "bench" / "measure")]
import hostile_recipe_runs as runs  # noqa: E402
from tests.support import hostile_clients as hc  # noqa: E402
from tests.support.edge_client import ShimProcess  # noqa: E402
from tests.support.hostile_bodies import Memory  # noqa: E402

IMAGE_BYTES = (20 << 20) - 1024  # just under a vision profile's 20 MiB per image
GROWTH_TARGET_MIB, REFUSED_IN_S = 256, 5.0
SHARE_WAIT_S = 5.0  # --body-budget-wait-s: an address past its share waits this, then 529


class Images(runs.SmallImage):
    data = b"\x89PNG\r\n\x1a\n" + bytes(IMAGE_BYTES - 8)


def beside(addr, headers, delay_s: float = 0.5) -> tuple[threading.Thread, dict]:
    out = {}

    def run():
        time.sleep(delay_s)
        out["decision"] = hc.decision(addr, headers)
    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def measure(addr, pid, headers, shape: hc.Shape, count: int) -> dict:
    plain = hc.send(addr, shape.plain, hc.OTHER_SOURCE)[1] if shape.plain else None
    with Memory(pid) as memory:
        thread, out = beside(addr, headers)
        results = hc.flood(addr, shape.raw, count)
        thread.join()
    statuses = {}
    for status, _, _ in results:
        statuses[status] = statuses.get(status, 0) + 1
    secs = [s for _, s, _ in results]
    ok = all(400 <= s < 500 and t < REFUSED_IN_S or s == 200 and plain and t < 2 * plain
             or s == 529 and retry and t < SHARE_WAIT_S + 1 for s, t, retry in results)
    return {"shape": shape.name, "count": count, "statuses": statuses,
            "p50_s": round(statistics.median(secs), 2), "max_s": round(max(secs), 2),
            "plain_s": plain and round(plain, 2), "growth_mib": round(memory.growth / 1024),
            "decision": out["decision"], "each_ok": ok}


def slow_bodies(addr, pid, headers, count: int) -> dict:
    with Memory(pid) as memory:
        slow = hc.SlowBodies(addr, headers, count)
        try:
            time.sleep(0.5)
            decision = hc.decision(addr, headers)
        finally:
            slow.close()
    return {"shape": f"{count} slow bodies held open", "count": count, "statuses": {"open": count},
            "p50_s": None, "max_s": None, "plain_s": None,
            "growth_mib": round(memory.growth / 1024), "decision": decision, "each_ok": True}


def table(rows: list, quiet: float) -> str:
    lines = ["| shape | in flight | status | p50 / max s | plain s | shim peak RSS growth | "
             "decision from another address |", "|" + "---|" * 7]
    for r in rows:
        status = ", ".join(f"{n} x {s}" for s, n in sorted(r["statuses"].items(), key=str))
        times = "-" if r["p50_s"] is None else f"{r['p50_s']:.2f} / {r['max_s']:.2f}"
        plain = "-" if r["plain_s"] is None else f"{r['plain_s']:.2f}"
        d_status, d_s = r["decision"]
        lines.append(f"| {r['shape']} | {r['count']} | {status} | {times} | {plain} | "
                     f"{r['growth_mib']} MiB | {d_status} in {d_s:.2f} s ({d_s / quiet:.1f}x "
                     "quiet) |")
    return "\n".join(lines)


def verdicts(rows: list, quiet: float) -> list:
    """(shape, each request's target, the growth target, the decision beside it: None where
    it is not a target)."""
    return [(r["shape"], r["each_ok"], r["growth_mib"] < GROWTH_TARGET_MIB,
             r["decision"][0] == 200 and r["decision"][1] < 2 * quiet
             if r["shape"].endswith("slow bodies held open") else None) for r in rows]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--vllm")
    where.add_argument("--fake", action="store_true")
    ap.add_argument("--profile", default="")
    ap.add_argument("--count", type=int, default=64)
    ap.add_argument("--key", default="")
    ap.add_argument("--json")
    ap.add_argument("--recipes", default="")
    ap.add_argument("--window-s", type=float, default=10.0)
    ap.add_argument("--vllm-scheduling", choices=("priority", "fcfs"), default="priority")
    args = ap.parse_args(argv)
    asked = [n.strip() for n in args.recipes.split(",") if n.strip()]
    vision = runs.hr.is_vision(json.loads((ROOT / "serve_config.json").read_text()), args.profile)
    try:
        recipes = runs.hr.select(",".join(n for n in asked if n != "shapes"), vision,
                                 bool(args.vllm)) if asked != ["shapes"] else []
    except ValueError as e:
        ap.error(str(e))
    headers = {"Authorization": f"Bearer {args.key}"} if args.key else {}
    fake = None
    env = {"ONEPASS_PROFILE": args.profile} if args.profile else {}
    env["ONEPASS_VLLM_SCHEDULING"] = args.vllm_scheduling  # as serve.sh starts vLLM: its policy
    if args.key:
        env["ONEPASS_API_KEY"] = args.key
    if args.fake:
        from tests.support.fake_engine import FakeEngine
        fake = FakeEngine(profile=args.profile)
    elif os.environ.get("ONEPASS_VLLM_KEY"):  # the real vLLM's key, as serve.sh gives it
        env["ONEPASS_VLLM_KEY"] = os.environ["ONEPASS_VLLM_KEY"]
    images = [runs.serve(h) for h in (Images, runs.SmallImage, runs.TrickleImage)] \
        if vision else []
    if images:  # links to this machine's image servers, for this run's own shim only
        env.update(ONEPASS_IMAGE_LINKS="all", ONEPASS_IMAGE_LINKS_HTTP="true",
                   ONEPASS_IMAGE_LINK_PORTS=",".join(str(s.server_port) for s in images))
    shim = ShimProcess(fake.url if fake else args.vllm, env)
    try:
        shim.wait_ready(timeout=600)
        out = {}
        if not asked or "shapes" in asked:
            out.update(shapes(shim, headers, args.count,
                              f"http://127.0.0.1:{images[0].server_port}/big.png"
                              if images else ""))
        if recipes:
            out["recipes"] = recipe_rows(runs.Stack(
                shim, headers, args.vllm, args.window_s,
                *(f"http://127.0.0.1:{s.server_port}/i.png" for s in images[1:])), recipes)
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1))
    finally:
        shim.stop()
        if fake:
            fake.stop()
        for server in images:
            server.shutdown()
    return 0


def shapes(shim, headers: dict, count: int, url: str) -> dict:
    addr, pid = shim.addr, shim.proc.pid
    quiet = statistics.median(hc.decision(addr, headers)[1] for _ in range(3))
    print(f"quiet decision: {quiet:.2f} s", flush=True)
    rows = [slow_bodies(addr, pid, headers, count)]
    print(table(rows, quiet).split("\n")[-1], flush=True)
    for shape in hc.shapes(headers, url):
        rows.append(measure(addr, pid, headers, shape, count))
        print(table(rows[-1:], quiet).split("\n")[-1], flush=True)
    print("\n" + table(rows, quiet) + "\n")
    for name, each, growth, other in verdicts(rows, quiet):
        print(f"{name}: each 4xx in {REFUSED_IN_S:g} s, 529 + Retry-After in "
              f"{SHARE_WAIT_S + 1:g} s or under 2x plain: "
              f"{'met' if each else 'MISSED'}; growth < {GROWTH_TARGET_MIB} MiB: "
              f"{'met' if growth else 'MISSED'}" + ("" if other is None else
              f"; the other address's decision 200 in < 2x quiet: "
              f"{'met' if other else 'MISSED'}"))
    return {"quiet_s": quiet, "rows": rows}


def recipe_rows(stack, names: list) -> list:
    rows = []
    print(runs.hr.HEADER, flush=True)
    for name in names:
        rows.append(runs.run(stack, name))
        print(runs.hr.line(rows[-1]), flush=True)
    print(f"\n{runs.hr.NOT_RUN}")
    for r in rows:
        w = r["well"]
        print(f"{runs.hr.RECIPES[r['recipe']][0]} {r['recipe']}: {w['requests']} well-behaved "
              f"requests, every one 200 within 2x quiet p50: {'met' if w['met'] else 'NOT MET'}"
              + "".join(f"; {k}: {v}" for k, v in r["hostile"].items() if k == "work stopped"))
    return rows


if __name__ == "__main__":
    sys.exit(main())
