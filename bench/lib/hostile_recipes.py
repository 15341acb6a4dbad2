"""The hostile-client recipes of bench/measure/hostile_clients.py, without a server: which
recipes there are and what each needs, the raw requests they send, and the verdict on what a
well-behaved client on another address got meanwhile. Standard library only.
"""
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/support, run as a script
from tests.support.edge_client import request  # noqa: E402
from tests.support.hostile_bodies import NORMAL  # noqa: E402
from tests.support.hostile_clients import post  # noqa: E402

# name: (the number, what it does, what it needs: "" any stack, "vision" a vision
# profile, "vllm" a real vLLM's /metrics)
RECIPES = {
    "heads": ("1", "heads only from 127.0.0.2-5, a chunked one and a Content-Length: 8388608 "
                   "one each, held open", ""),
    "trickle_body": ("2a", "one chunked upload trickling its body for 30 s", "vision"),
    "trickle_link": ("2b", "one image link to a server trickling its answer", "vision"),
    "stray": ("3", "a heavy request, one pipelined byte `G`, then close", "vllm"),
    "multipart": ("4", "gzip'd multipart, `--B` then `a:b` 2.5 million times", ""),
    "long_state": ("5", "19,990 distinct short paragraphs, 400 noul questions", ""),
    "expensive": ("6", "4 at once from one address: 32 choices, question_first, repeat 4, "
                       "orders 8", ""),
    "extensions": ("7", "a chunked body whose chunk lines carry 8 KiB extensions", ""),
}
NOT_RUN = ("8 (vLLM's key guard) and the trusted proxy are not run here: "
           "tests/live/test_hostile_edge_live.py (the key guard), tests/unit/edge/"
           "test_proxy_protocol.py, test_real_client.py and tests/live/"
           "test_balancer_fairness_live.py (the proxy)")
RATIO_TARGET = 2.0  # each well-behaved request within this many times its quiet p50


def select(asked: str, vision: bool, real_vllm: bool) -> list:
    """The recipes `asked` names (comma-separated; "" = every one this stack can run), in the
    table's order; ValueError naming an unknown one or one this stack cannot run."""
    can = {"": True, "vision": vision, "vllm": real_vllm}
    if not asked:
        return [name for name, (_, _, needs) in RECIPES.items() if can[needs]]
    names = [n.strip() for n in asked.split(",") if n.strip()]
    for name in names:
        if name not in RECIPES:
            raise ValueError(f"unknown recipe {name!r}; known: {', '.join(RECIPES)}")
        needs = RECIPES[name][2]
        if not can[needs]:
            what = "a vision profile" if needs == "vision" else "a real vLLM (--vllm)"
            raise ValueError(f"{name} needs {what}")
    return [name for name in RECIPES if name in names]


def is_vision(config: dict, profile: str) -> bool:
    """Whether serve_config.json's `profile` ("" = its default) reads images."""
    return config["profiles"][profile or config["default_profile"]].get("vision") is not None


def decision_json(**fields) -> bytes:
    return json.dumps({**NORMAL, **fields}).encode()


def chunk(data: bytes, extension: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n" % (len(data), extension, data)


def chunked_head(headers: dict) -> bytes:
    head = request("POST", "/v1/systemone", b"", {
        "Content-Type": "application/json", "Connection": "close",
        "Transfer-Encoding": "chunked", **headers})
    return head.replace(b"Content-Length: 0\r\n", b"")


def trickle_pieces(data: bytes, pieces: int) -> list:
    """`data` as `pieces` chunks (sent one at a time), the last-chunk marker on the last."""
    size = -(-len(data) // pieces)
    out = [chunk(data[i:i + size]) for i in range(0, len(data), size)]
    out[-1] += b"0\r\n\r\n"
    return out


def multipart_bomb(headers: dict, lines: int = 2_500_000) -> bytes:
    """One part whose header section is `a:b` `lines` times (12.5 MB decoded at 2.5 million,
    18 KB gzip'd), its boundary `B`."""
    data = gzip.compress(b"--B\r\n" + b"a:b\r\n" * lines, 9)
    return post(data, {**headers, "Content-Type": "multipart/form-data; boundary=B",
                       "Content-Encoding": "gzip"})


def long_state(paragraphs: int = 19_990, questions: int = 400) -> bytes:
    """`paragraphs` distinct short paragraphs (about 18 bytes each: 366 KB at 19,990) asked
    `questions` noul questions, each a text of its own."""
    state = "\n\n".join(f"Item {i} {i * 7919 % 100_003}." for i in range(paragraphs))
    asked = {f"q{k}": {"type": "noul", "instructions": f"Does note {k * 47} say n{k}?"}
             for k in range(questions)}
    return json.dumps({"model": "jev-latest", "state": state, "questions": asked}).encode()


def expensive(choices: int = 32, state_bytes: int = 1000, salt: str = "") -> bytes:
    """`choices` 4-option choices on a state of about `state_bytes`, with layout overrides
    that multiply what each costs: every read writes the state after the question (no shared
    head), four times, in each of 8 orders. `salt` opens the state: requests with different
    salts share no read in vLLM's prefix cache (each one's work is computed, not found)."""
    state = salt + " ".join(f"Ticket {i}: the app crashes on invoice {i * 31}." for i in
                            range(state_bytes // 40))
    asked = {f"q{i}": {"type": "choice", "instructions": f"Which team handles part {i}?",
                       "criteria": {"billing": "Payments", "tech": "Bugs", "sales": None,
                                    "legal": None}} for i in range(choices)}
    return json.dumps({"model": "jev-latest", "state": state, "questions": asked, "kwargs": {
        "layout": {"question_first": True, "repeat": 4, "orders": 8,
                   "orders_as_reads": True}}}).encode()


def cheap(headers: dict, deadline_ms: int = 20_000) -> bytes:
    """One yes/no question on a short state, with Envoy's deadline header."""
    data = json.dumps({"model": "jev-latest", "state": "Order 12 arrived broken.",
                       "questions": {"refund": {"type": "noul",
                                                "instructions": "Refund?"}}}).encode()
    return post(data, {**headers, "x-envoy-expected-rq-timeout-ms": str(deadline_ms)})


def extensions(headers: dict, chunks: int = 1600, size: int = 256,
               line: int = 8192) -> bytes:
    """A decision whose state is `chunks` x `size` bytes, each chunk's line `line` bytes long
    (the line limit) with its extension: 13.5 MB on the wire at the defaults, past the 12 MiB
    limit by its extensions alone."""
    data = decision_json(state="x" * (chunks * size - len(decision_json(state=""))))
    extension = b";e=" + b"x" * (line - 3 - len(b"%x" % size))
    body = b"".join(chunk(data[i:i + size], extension) for i in range(0, len(data), size))
    return chunked_head(headers) + body + b"0\r\n\r\n"


def p50(values: list) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def counts(statuses) -> dict:
    out = {}
    for status in statuses:
        out[status] = out.get(status, 0) + 1
    return out


def verdict(results: list, quiet_p50: float) -> dict:
    """What the well-behaved client got, (status, seconds) per request, against its quiet p50:
    met when there was at least one request and every one was a 200 within RATIO_TARGET x the
    quiet p50; `missed` counts those that were not."""
    secs = [s for _, s in results]
    mid = p50(secs) if secs else None
    missed = sum(not (status == 200 and s <= RATIO_TARGET * quiet_p50) for status, s in results)
    return {"requests": len(results), "statuses": counts(s for s, _ in results), "missed": missed,
            "p50_s": mid, "max_s": max(secs, default=None), "quiet_p50_s": quiet_p50,
            "ratio": mid / quiet_p50 if secs and quiet_p50 > 0 else None,
            "met": bool(results) and not missed}


def tally(found: dict) -> str:
    return ", ".join(f"{n} x {s}" for s, n in sorted(found.items(), key=str))


def line(row: dict) -> str:
    """One recipe's figures as a Markdown table row."""
    w = row["well"]
    statuses = tally(w["statuses"])
    hostile = "; ".join(f"{k} {tally(v) if isinstance(v, dict) else v}"
                        for k, v in row["hostile"].items())
    if set(row["quiet_statuses"]) != {200}:
        statuses += f" (quiet: {tally(row['quiet_statuses'])})"
    if w["requests"]:
        got = (f"{statuses}; p50 {w['p50_s']:.3f} s (max {w['max_s']:.3f}) against quiet "
               f"{w['quiet_p50_s']:.3f} s: {w['ratio']:.2f}x; {w['missed']} not a 200 within 2x")
    else:
        got = "no request completed"
    return (f"| {RECIPES[row['recipe']][0]} {row['recipe']} | {hostile} | {row['well_sent']}: "
            f"{got} | {row['rss_growth_mib']} MiB | {'met' if w['met'] else 'NOT MET'} |")


HEADER = ("| recipe | the hostile client | the well-behaved client (127.0.0.1) meanwhile | "
          "shim peak RSS growth | every one 200 within 2x quiet p50 |\n|---|---|---|---|---|")
