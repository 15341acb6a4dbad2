"""A benchmark harness's handful of requests to a running onepass, read the way it reads them.

Usage: python3 bench/measure/runbook_smoke.py NAME --url http://127.0.0.1:8741 [--model jev-latest]
       [--json OUT.json]
NAME: jevbench | decision-index | imagejevbench-box (docs/runbooks/). Exit 0 when every answer
parses as the harness parses it, 1 on the first that does not (the message says which check),
2 when nothing answers at the URL.
Owns: each harness's request shape, headers, timeout, concurrency and retry rule as the wire
contract (its excerpts: docs/runbooks/wire-contract.md) and the harness's code record them, a few
items of our own in that shape (runbook_items.py), and the harness's answer checks. JevBench:
the full endpoint URL, httpx's headers and no Authorization unless JEVBENCH_API_KEY is set,
180 s, one request in flight, 429 and 5xx retried up to 8 attempts (Retry-After, else 2^n s),
and its parse (every option, finite, >= -1e-6, levels by index or by every level text). The
Decision Index kit: the root URL plus /v1/systemone, DECISION_INDEX_API_KEY, 600 s, one at a
time, its two warm-up requests, no retries, its validation (same keys and types, choice among
the options, probabilities keyed exactly, finite, in [0, 1], |sum - 1| <= 0.01) and capacity
rule (400/413/422 carrying a marker is `unsupported`, not an error). ImageJevBench's Box track:
one item per request, one at a time, the image as a data URL in the state and one box question;
`box` and `confidence` read (timeout and key variable not recorded: 180 s, IMAGEJEVBENCH_API_KEY
here); it needs a vision profile (a text profile refuses box questions with a 422).
Never starts or stops a server, never retries what its harness would not, standard library
only. A score is never computed: these are plumbing checks.
"""
import argparse
import gzip
import http.client
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
import runbook_items as items  # noqa: E402

# httpx's defaults, which JevBench and the Decision Index kit send as they are (wire contract).
HTTPX_HEADERS = {"User-Agent": "python-httpx/0.28.1", "Accept": "*/*",
                 "Accept-Encoding": "gzip, deflate", "Connection": "keep-alive",
                 "Content-Type": "application/json"}
HARNESSES = {  # timeout s, attempts, key variable
    "jevbench": (180.0, 8, "JEVBENCH_API_KEY"),
    "decision-index": (600.0, 1, "DECISION_INDEX_API_KEY"),
    "imagejevbench-box": (180.0, 1, "IMAGEJEVBENCH_API_KEY"),
}
CAPACITY_MARKERS = ("options per choice", "a choice needs at least two options",
                    "a score takes 2 to 10 levels", "the canvas holds", "maximum context length",
                    "maximum model length", "longer than the maximum model length",
                    "context window", "too many tokens")
EPS = 1e-6  # JevBench clips probabilities this far outside [0, 1]


class Failed(Exception):
    """An answer the harness would not accept (or a request it would count as failed)."""


class Unreachable(Exception):
    """Nothing answered at the URL."""


class Client:
    """One keep-alive connection, as httpx holds it for a harness with one request in flight."""

    def __init__(self, url: str, name: str):
        self.timeout, self.attempts, key_var = HARNESSES[name]
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.headers = dict(HTTPX_HEADERS)
        if os.environ.get(key_var):  # the harnesses send no Authorization unless configured
            self.headers["Authorization"] = "Bearer " + os.environ[key_var]
        self.conn, self.latencies_ms, self.answered = None, [], False

    def _once(self, path: str, body: bytes):
        reused = self.conn is not None
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            self.conn.request("POST", path, body=body, headers=self.headers)
            r = self.conn.getresponse()
            raw = r.read()
        except (OSError, http.client.HTTPException) as e:
            self.conn.close()
            self.conn = None
            if reused and not isinstance(e, TimeoutError):
                # an idle keep-alive the server closed: httpx opens a new one, so do we
                return self._once(path, body)
            raise
        if r.getheader("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        if r.getheader("Connection", "").lower() == "close":
            self.conn.close()
            self.conn = None
        return r.status, {k.lower(): v for k, v in r.getheaders()}, raw

    def post(self, path: str, doc: dict):
        """(status, headers, text), retried the way the harness retries (JevBench only)."""
        body = json.dumps(doc, ensure_ascii=False).encode()
        last = None
        for attempt in range(self.attempts):
            start = time.monotonic()
            try:
                status, headers, raw = self._once(path, body)
            except (OSError, http.client.HTTPException) as e:
                last = f"{type(e).__name__}: {e}"
                if not self.answered and (isinstance(e, ConnectionRefusedError)
                                          and attempt >= 2 or self.attempts == 1):
                    raise Unreachable(f"nothing answers at {self.host}:{self.port}: {last}")
                time.sleep(min(60, 2 ** attempt))
                continue
            self.latencies_ms.append((time.monotonic() - start) * 1000)
            if self.attempts > 1 and (status == 429 or status >= 500):
                last = f"HTTP {status}: {raw[:200]!r}"
                wait = headers.get("retry-after")
                time.sleep(float(wait) if wait and wait.replace(".", "").isdigit()
                           else min(60, 2 ** attempt))
                continue
            self.answered = True
            return status, headers, raw.decode("utf-8")
        raise Failed(f"no answer after {self.attempts} attempts; last: {last}")


def _prob(x, what: str) -> float:
    # JSON numbers only: JevBench's float() would also take "0.5", the SDK's strict models not.
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise Failed(f"{what} is not a finite number: {x!r}")
    return x


def jevbench_read(answer: dict, q: dict) -> dict:
    """JevBench's reading of one answer as {option: p} summing to 1 (its schema rules)."""
    if not isinstance(answer, dict):
        raise Failed(f"answer is not an object: {answer!r}")
    if q["type"] == "noul":
        p = _prob(answer.get("noul"), "noul")
        if not -EPS <= p <= 1 + EPS:
            raise Failed(f"noul out of range: {p}")
        return {"false": 1 - p, "true": p}
    probs = answer.get("probabilities")
    if not isinstance(probs, dict):
        raise Failed("choice/score answer has no probabilities")
    if q["type"] == "choice":
        keys = list(q["criteria"])
    else:
        idx, texts = [str(i) for i in range(len(q["criteria"]))], [str(t) for t in q["criteria"]]
        keys = idx if all(k in probs for k in idx) else texts
    missing = [k for k in keys if k not in probs]
    if missing:
        raise Failed(f"{q['type']} answer is missing {missing}")
    raw = {k: _prob(probs[k], f"probability of {k!r}") for k in keys}
    if min(raw.values()) < -EPS or sum(raw.values()) <= 0:
        raise Failed(f"probabilities negative or summing to 0: {raw}")
    total = sum(max(0.0, v) for v in raw.values())
    return {k: max(0.0, v) / total for k, v in raw.items()}


def di_validate(questions: dict, response: dict) -> None:
    """The Decision Index kit's validation of a 200 answer (wire contract 3.2)."""
    answers = response.get("answers")
    if not isinstance(answers, dict) or set(answers) != set(questions):
        raise Failed(f"answer keys {sorted(answers or {})} are not the question ids "
                     f"{sorted(questions)}")
    for qid, q in questions.items():
        a = answers[qid]
        if a.get("type") != q["type"]:
            raise Failed(f"{qid}: type {a.get('type')!r}, asked {q['type']!r}")
        if q["type"] == "noul":
            if not 0 <= _prob(a.get("noul"), f"{qid}.noul") <= 1:
                raise Failed(f"{qid}: noul {a['noul']} outside [0, 1]")
            continue
        probs = a.get("probabilities")
        if a.get("choice") not in q["criteria"]:
            raise Failed(f"{qid}: choice {a.get('choice')!r} is not an option")
        if not isinstance(probs, dict) or set(probs) != set(q["criteria"]):
            raise Failed(f"{qid}: probabilities not keyed exactly by the options: {probs}")
        values = [_prob(v, f"{qid} probability") for v in probs.values()]
        if min(values) < 0 or max(values) > 1 or abs(sum(values) - 1) > 0.01:
            raise Failed(f"{qid}: probabilities outside [0, 1] or |sum - 1| > 0.01: {values}")


def box_read(answer: dict) -> tuple:
    """The Box track's reading: `box` (fractions from the top-left corner) and `confidence`."""
    box, conf = answer.get("box"), answer.get("confidence", "absent")
    if answer.get("type") != "box" or not isinstance(box, dict):
        raise Failed(f"not a box answer: {answer!r}")
    edges = [box.get(k) for k in ("left", "top", "right", "bottom")]
    for e in edges:
        _prob(e, "box edge")
    left, top, right, bottom = edges
    if not (0 <= left < right <= 1 and 0 <= top < bottom <= 1):
        raise Failed(f"box outside the image or empty: {box}")
    if conf == "absent" or (conf is not None and not 0 <= _prob(conf, "confidence") <= 1):
        raise Failed(f"confidence missing or outside [0, 1]: {conf!r}")
    return tuple(edges), conf


def _json(status: int, text: str, what: str) -> dict:
    if status != 200:
        raise Failed(f"{what}: HTTP {status} (the harness counts it as failed): {text[:300]}")
    try:
        return json.loads(text)
    except ValueError:
        raise Failed(f"{what}: a 200 that is not JSON: {text[:200]}") from None


def run_jevbench(client: Client, model: str, log) -> None:
    base = None
    for name, state, questions in items.jevbench_requests():
        status, _, text = client.post(client.path, {"model": model, "state": state,
                                                    "questions": questions})
        answers = _json(status, text, name).get("answers")
        if not isinstance(answers, dict):
            raise Failed(f"{name}: HTTP 200 without an 'answers' object")
        read = {}
        for qid, q in questions.items():
            if qid not in answers:
                raise Failed(f"{name}: no answer for question {qid!r}")
            try:
                read[qid] = jevbench_read(answers[qid], q)
            except Failed as e:
                raise Failed(f"{name}: question {qid!r} ({q['type']}): {e}") from None
        # Informational: how far each answer moved from the same question in the first
        # request (matched by content, so renamed ids and reordered options still pair up).
        base = base or [(q, read[k]) for k, q in questions.items()]
        shifts = [0.5 * sum(abs(read[k][o] - b[o]) for o in b)
                  for k, q in questions.items() for bq, b in base if bq == q]
        log(f"{name}: {len(read)} answers read; largest TV from the first request "
            f"{max(shifts, default=0):.4f}")


def run_decision_index(client: Client, model: str, log) -> None:
    for name, state, questions in items.di_warmup() + items.di_rows():
        status, _, text = client.post(client.path, {"model": model, "state": state,
                                                    "questions": questions})
        if status in (400, 413, 422) and any(m in text for m in CAPACITY_MARKERS):
            log(f"{name}: unsupported (HTTP {status}, a capacity marker): {text[:120]}")
            if name.startswith("capacity"):
                continue
            raise Failed(f"{name}: a request within limits was refused for capacity: {text[:200]}")
        if name.startswith("capacity"):
            raise Failed(f"{name}: HTTP {status} without a capacity marker (the kit records "
                         f"an error, not unsupported): {text[:200]}")
        response = _json(status, text, name)
        response.pop("evaluation_trace", None)
        di_validate(questions, response)
        log(f"{name}: ok ({len(questions)} questions)")


def run_box(client: Client, model: str, log) -> None:
    for name, png, instructions, truth in items.box_items():
        state = {"photo": "data:image/png;base64," + png}
        status, _, text = client.post(client.path, {
            "model": model, "state": state,
            "questions": {"where": {"type": "box", "instructions": instructions}}})
        if status == 422 and "vision-language model profile" in text:
            raise Failed(f"{name}: HTTP 422: the box smoke needs a vision profile: {text[:300]}")
        doc = _json(status, text, name)
        edges, conf = box_read((doc.get("answers") or {}).get("where") or {})
        log(f"{name}: box {[round(e, 3) for e in edges]} (drawn at {truth}), confidence "
            f"{conf}, found {doc['answers']['where'].get('found')}")


RUNS = {"jevbench": run_jevbench, "decision-index": run_decision_index,
        "imagejevbench-box": run_box}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", choices=sorted(RUNS))
    parser.add_argument("--url", default="http://127.0.0.1:8741", help="onepass's root URL")
    parser.add_argument("--model", default="jev-latest", help='the "model" each request names')
    parser.add_argument("--json", help="write {name, ok, lines, latencies_ms} here")
    args = parser.parse_args(argv)
    client = Client(args.url, args.name)
    client.path, run = "/v1/systemone", RUNS[args.name]  # each harness's path under the root
    lines = []

    def log(line):
        lines.append(line)
        print(f"runbook_smoke {args.name}: {line}", flush=True)

    start, code, error = time.monotonic(), 0, None
    try:
        run(client, args.model, log)
    except Unreachable as e:
        code, error = 2, str(e)
    except Failed as e:
        code, error = 1, str(e)
    lat = client.latencies_ms
    summary = (f"{'OK' if code == 0 else 'FAILED'}: {len(lat)} requests in "
               f"{time.monotonic() - start:.1f} s" + (f", p50 {statistics.median(lat):.0f} ms, "
                                                       f"max {max(lat):.0f} ms" if lat else ""))
    if error:
        print(f"runbook_smoke {args.name}: {error}", file=sys.stderr)
    log(summary)
    if args.json:
        Path(args.json).write_text(json.dumps({"name": args.name, "ok": code == 0, "error": error,
                                               "lines": lines, "latencies_ms": lat}, indent=1))
    return code


if __name__ == "__main__":
    sys.exit(main())
