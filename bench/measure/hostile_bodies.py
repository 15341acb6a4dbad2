"""Many hostile request bodies at once against a shim at its default limits: for each kind
(tests/support/hostile_bodies.py: structure bombs, tiny strings and numbers, placeholder
amplification, one huge string, ASCII or wide; gzip'd to the decoded cap or plain at the wire
cap), N bodies sent together, each on its own connection, then all kinds mixed; meanwhile a
normal decision and /health. Prints a table: case, bodies, wire and decoded bytes, statuses,
p50 / max seconds, the shim's peak RSS growth (from /proc: its high-water mark, reset before
each round, and samples every 5 ms), and the normal decision's and /health's status and seconds
(the decision is sent as the official clients send it: a 529, from the in-flight limit the 64
bodies fill, is retried after its retry-after-ms).

Usage:
  python3 bench/measure/hostile_bodies.py --vllm http://127.0.0.1:8742 [--bodies 64]
      starts its own shim (python3 -I -S shim.py, default settings) against that vLLM: the
      normal decision is the model's real answer
  python3 bench/measure/hostile_bodies.py --url http://127.0.0.1:8741 --pid PID
      a shim already running (PID: the shim's process, for its memory)
  python3 bench/measure/hostile_bodies.py --fake [--profile idefics3-tiny]
      its own shim before tests/support/fake_engine.py: the bodies and the memory are the
      same, the normal decision's answer is not a model's (a vision profile shows the
      placeholder refused by its size, not by the text-only count)
Options: --key KEY (sent as Bearer), --cases SUBSTRING (only kinds whose name holds it),
--json OUT (every round's figures).
"""
import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.support import hostile_bodies as hb  # noqa: E402
from tests.support.edge_client import ShimProcess  # noqa: E402


def row(name, bodies, wire, decoded, rnd: hb.Round) -> dict:
    statuses = {}
    for status, _ in rnd.hostile:
        statuses[status] = statuses.get(status, 0) + 1
    secs = [s for _, s in rnd.hostile]
    return {"case": name, "bodies": len(rnd.hostile), "wire_bytes": wire,
            "decoded_bytes": decoded, "statuses": statuses,
            "p50_s": round(statistics.median(secs), 2), "max_s": round(max(secs), 2),
            "rss_growth_mib": round(rnd.growth_kib / 1024), "decision": [
                rnd.decision[0], round(rnd.decision[1], 2), rnd.decision[3]],
            "health": [rnd.health[0], round(rnd.health[1], 2)],
            "answered": sorted(rnd.decision[2].get("answers", {}))}


def table(rows: list) -> str:
    lines = ["| case | bodies | wire bytes | decoded bytes | status | p50 / max s | shim peak "
             "RSS growth | normal decision | /health |", "|" + "---|" * 9]
    for r in rows:
        status = ", ".join(f"{n} x {s}" for s, n in sorted(r["statuses"].items()))
        lines.append(f"| {r['case']} | {r['bodies']} | {r['wire_bytes']:,} | "
                     f"{r['decoded_bytes']:,} | {status} | {r['p50_s']:.2f} / {r['max_s']:.2f} | "
                     f"{r['rss_growth_mib']} MiB | {r['decision'][0]} in {r['decision'][1]:.2f} s"
                     f"{tries(r['decision'][2])} | {r['health'][0]} in {r['health'][1]:.2f} s |")
    return "\n".join(lines)


def tries(attempts: int) -> str:
    return f" ({attempts} tries: 529 retried)" if attempts > 1 else ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--vllm")
    where.add_argument("--url")
    where.add_argument("--fake", action="store_true")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--profile", default="")
    ap.add_argument("--bodies", type=int, default=64)
    ap.add_argument("--key", default="")
    ap.add_argument("--cases", default="")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    headers = {"Authorization": f"Bearer {args.key}"} if args.key else {}
    fake = shim = None
    if args.url:
        if not args.pid:
            ap.error("--url needs --pid (the shim's process, for its memory)")
        host, port = args.url.split("//")[1].rstrip("/").split(":")
        addr, pid = (host, int(port)), args.pid
    else:
        if args.fake:
            from tests.support.fake_engine import FakeEngine
            fake = FakeEngine(profile=args.profile)
        env = {"ONEPASS_PROFILE": args.profile} if args.profile else {}
        if args.key:
            env["ONEPASS_API_KEY"] = args.key
        if not fake and os.environ.get("ONEPASS_VLLM_KEY"):  # the real vLLM's key, as serve.sh's
            env["ONEPASS_VLLM_KEY"] = os.environ["ONEPASS_VLLM_KEY"]
        shim = ShimProcess(fake.url if fake else args.vllm, env)
        shim.wait_ready(timeout=600)
        addr, pid = shim.addr, shim.proc.pid
    try:
        cases = [c for c in hb.cases() if args.cases in c.name]
        rows = []
        for case in cases:
            rnd = hb.round_of(addr, pid, [case.raw(headers)] * args.bodies, headers)
            rows.append(row(case.name, args.bodies, len(case.data), case.decoded, rnd))
            print(table(rows[-1:]).split("\n")[-1], flush=True)
        mixed = [cases[i % len(cases)] for i in range(args.bodies)]
        rnd = hb.round_of(addr, pid, [c.raw(headers) for c in mixed], headers)
        rows.append(row("all of the above, mixed", args.bodies,
                        max(len(c.data) for c in mixed), max(c.decoded for c in mixed), rnd))
        print("\n" + table(rows))
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    finally:
        if shim:
            shim.stop()
        if fake:
            fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
