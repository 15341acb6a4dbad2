"""Measure a running onepass server on labelled development decisions.

Usage: .venv/bin/python bench/measure/evaluate.py --url http://127.0.0.1:8741 [--data PATH ...]
       [--split eval|fit|all] [--limit N] [--concurrency 4] [--order-check]
       [--extra '{"attention_mode": "causal"}'] [--json OUT.json] [--bootstrap N]
       [--png reliability.png]
Owns: sending bench/data/devdata.py's items to `<url>/v1/systemone` (standard-library HTTP, the key
from ONEPASS_API_KEY), turning answers into bench/lib/decision_metrics.py records, and the per-task
table / JSON.
Never starts or stops a server, never changes the data, and never stops on a non-200 answer: those
are counted and reported.
"""
import argparse
import json
import statistics
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]  # bench/: its modules import each other by name
sys.path[:0] = [str(BENCH / d) for d in ("data", "lib")]
import decision_metrics as metrics  # noqa: E402
import devdata  # noqa: E402
import shim_auth  # noqa: E402

TIMEOUT_S = 180
BUSY_RETRIES = 5  # 529 = warming up or over --max-in-flight: wait as told, then try again
SAMPLE_ERRORS = 5


def add_common_args(parser: argparse.ArgumentParser) -> None:
    """The flags evaluate.py and fit_calibration.py share."""
    parser.add_argument("--url", default="http://127.0.0.1:8741", help="server base URL")
    parser.add_argument("--data", nargs="+", default=[str(devdata.DEFAULT_DATA)],
                        help="data files or directories (default: all dev data)")
    parser.add_argument("--limit", type=int, default=None, help="first N items per task")
    parser.add_argument("--concurrency", type=int, default=4, help="requests at once")
    parser.add_argument("--extra", type=json.loads, default={},
                        help="JSON object merged into every request body")


def post(url: str, body: dict) -> tuple:
    """(status, parsed body or None, seconds). status is an int, or a string for no answer."""
    headers = shim_auth.headers()
    data = json.dumps(body, ensure_ascii=False).encode()
    for _ in range(BUSY_RETRIES + 1):
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data, headers),
                                        timeout=TIMEOUT_S) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw, retry_ms = e.code, e.read(), e.headers.get("retry-after-ms")
            if status == 529:
                time.sleep(float(retry_ms or 500) / 1000)
                continue
        except (urllib.error.URLError, OSError) as e:  # refused, reset, timed out
            return f"no answer: {type(e).__name__}", {"error": str(e)}, time.perf_counter() - start
        seconds = time.perf_counter() - start
        try:
            return status, json.loads(raw), seconds
        except ValueError:
            return status, {"raw": raw[:500].decode(errors="replace")}, seconds
    return status, {"raw": raw[:500].decode(errors="replace")}, 0.0


def reversed_body(body: dict) -> dict | None:
    """The request with each choice's options in reversed order; None without a choice. Every
    other question stays in it: a prompt depends only on its own question, but in bf16 the
    numbers vLLM computes depend a little on which reads share an engine step, so the reversed
    request reads the same set of prompts but for the reversed listings, and a top answer that
    changes changes with the order, not with its companions."""
    if not any(q["type"] == "choice" for q in body["questions"].values()):
        return None
    questions = {qid: {**q, "criteria": dict(reversed(list(q["criteria"].items())))}
                 if q["type"] == "choice" else q for qid, q in body["questions"].items()}
    return {**body, "questions": questions}


def _progress(total: int, desc: str):
    try:
        from tqdm import tqdm
        return tqdm(total=total, desc=desc, file=sys.stderr, mininterval=1.0)
    except ImportError:  # the bar is a nicety; the numbers do not depend on it
        class Quiet:
            def update(self, n=1): pass
            def close(self): pass
        return Quiet()


def run(url: str, items: list, concurrency: int = 4, order_check: bool = False,
        extra: dict | None = None, desc: str = "decisions") -> dict:
    """Send every item (and with order_check its reversed choices); {records, decisions, errors}."""
    endpoint = url.rstrip("/") + "/v1/systemone"
    jobs = []
    for i, item in enumerate(items):
        jobs.append((i, "main", {**item["body"], **(extra or {})}))
        rev = reversed_body(item["body"]) if order_check else None
        if rev is not None:
            jobs.append((i, "reversed", {**rev, **(extra or {})}))
    bar = _progress(len(jobs), desc)

    def one(job):
        result = post(endpoint, job[2])
        bar.update(1)
        return result
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        results = list(pool.map(one, jobs))
    bar.close()
    replies = {(i, what): result for (i, what, _), result in zip(jobs, results)}
    return _collect(items, replies)


def _collect(items: list, replies: dict) -> dict:
    records, decisions, errors, samples = [], [], Counter(), []
    for i, item in enumerate(items):
        status, doc, seconds = replies[(i, "main")]
        rev = replies.get((i, "reversed"))
        decision = {"task": item["task"], "id": item["id"], "status": status,
                    "latency_ms": seconds * 1000, "input_tokens": None}
        decisions.append(decision)
        for what, reply in (("main", (status, doc)), ("reversed", rev)):
            if reply is not None and reply[0] != 200:
                errors[f"{what}: " + (f"HTTP {reply[0]}" if isinstance(reply[0], int)
                                      else reply[0])] += 1
                if len(samples) < SAMPLE_ERRORS:
                    samples.append({"id": item["id"], "request": what, "status": reply[0],
                                    "body": reply[1]})
        if status != 200:
            continue
        decision["input_tokens"] = (doc.get("usage") or {}).get("input_tokens")
        rev_answers = rev[1].get("answers", {}) if rev is not None and rev[0] == 200 else {}
        cuts = {s.get("question"): s for s in
                (doc.get("x_effort_used") or {}).get("state_selection", [])}
        for qid, gold in item["gold"].items():
            kind = item["body"]["questions"][qid]["type"]
            answer = doc.get("answers", {}).get(qid)
            if not answer or answer.get("type") != kind:
                errors["main: answer missing or of the wrong type"] += 1
                continue
            rec = metrics.record(item["task"], kind, answer, gold, id=item["id"], qid=qid,
                                 selection=cuts.get(qid))  # what a long state kept, if cut
            if kind == "choice":  # the order the options were sent in (position_bias.py)
                rec["listed"] = list(item["body"]["questions"][qid]["criteria"])
            if qid in rev_answers:
                rev_probabilities = metrics.answer_probabilities(kind, rev_answers[qid])
                rec["reversed_top_key"] = metrics.top_key(rev_probabilities)
                if kind == "choice":
                    rec["reversed_probabilities"] = rev_probabilities
            records.append(rec)
    return {"records": records, "decisions": decisions, "errors": dict(errors),
            "error_samples": samples}


def _costs(decisions: list) -> dict:
    ok = [d for d in decisions if d["status"] == 200]
    tokens = [d["input_tokens"] for d in ok if isinstance(d["input_tokens"], int)]
    return {"decisions": len(decisions), "non_200": len(decisions) - len(ok),
            "input_tokens_per_decision": statistics.mean(tokens) if tokens else None,
            "latency_ms_per_decision": statistics.mean(d["latency_ms"] for d in ok) if ok else None}


def report(result: dict) -> dict:
    """Per task, per question kind and overall: metrics.summary, plus costs where they apply."""
    records, decisions = result["records"], result["decisions"]
    by_task = metrics.group(records, "task")
    tasks = {}
    for task, task_decisions in metrics.group(decisions, "task").items():
        tasks[task] = {**metrics.summary(by_task.get(task, [])), **_costs(task_decisions)}
    kinds = {kind: metrics.summary(recs) for kind, recs in metrics.group(records, "kind").items()}
    return {"tasks": tasks, "kinds": kinds,
            "overall": {**metrics.summary(records), **_costs(decisions)},
            "errors": result["errors"], "error_samples": result["error_samples"]}


def cell(value, digits=3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def format_table(rep: dict) -> str:
    head = ("task", "n", "acc", "ECE", "Brier", "logloss", "order", "tok/dec", "ms/dec", "non200")
    fields = ("n", "accuracy", "ece", "brier", "log_loss", "order_sensitivity",
              "input_tokens_per_decision", "latency_ms_per_decision", "non_200")

    def row(name, m):  # kind rows have no costs: a decision mixes kinds
        return (name, *(m.get(f) for f in fields))
    rows = [row(task, m) for task, m in rep["tasks"].items()]
    rows += [row(f"  kind {kind}", m) for kind, m in rep["kinds"].items()]
    rows.append(row("overall", rep["overall"]))
    cells = [head] + [tuple(cell(v, 0 if j in (7, 8) else 3) for j, v in enumerate(row))
                      for row in rows]
    widths = [max(len(c[j]) for c in cells) for j in range(len(head))]
    lines = ["  ".join(c[j].ljust(widths[j]) if j == 0 else c[j].rjust(widths[j])
                       for j in range(len(head))) for c in cells]
    lines.insert(1, "-" * len(lines[0]))
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_args(parser)
    parser.add_argument("--split", choices=devdata.PARTS, default="eval")
    parser.add_argument("--order-check", action="store_true",
                        help="also read every choice with its options reversed")
    parser.add_argument("--json", help="write the results (and every record) here")
    parser.add_argument("--bootstrap", type=int, default=0, metavar="N",
                        help="also print overall 95%% intervals from N resamples of decisions")
    parser.add_argument("--png", help="draw a reliability diagram per kind here (matplotlib)")
    args = parser.parse_args(argv)
    skipped = Counter()
    items = devdata.split(devdata.load(args.data, skipped), args.split, args.limit)
    result = run(args.url, items, args.concurrency, args.order_check, args.extra)
    rep = report(result)
    print(format_table(rep))
    if args.bootstrap:
        import bootstrap
        bands = bootstrap.intervals(result["records"], args.bootstrap)
        print(f"overall 95% intervals ({args.bootstrap} resamples of decisions): " + ", ".join(
            f"{m} [{cell(lo)}, {cell(hi)}]" for m, (lo, hi) in bands.items()))
    for what, count in {**rep["errors"], **{f"skipped {k}": v for k, v in skipped.items()}}.items():
        print(f"{what}: {count}")
    if args.png:
        import plots
        plots.reliability_per_kind(args.png, result["records"],
                                   plots.label(plots.served_model(args.url)),
                                   f"Reliability per kind ({args.split} split, "
                                   f"{len(result['records'])} questions)")
    if args.json:
        doc = {"url": args.url, "data": args.data, "split": args.split, "limit": args.limit,
               "order_check": args.order_check, "extra": args.extra, "skipped": dict(skipped),
               **rep, "records": result["records"], "decisions": result["decisions"]}
        Path(args.json).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n",
                                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
