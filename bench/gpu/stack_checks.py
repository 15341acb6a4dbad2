"""What a GPU serve.sh stack must show before it serves anyone, checked from outside: run by
gpu_check.sh against the stack it started, or by hand against any running onepass.

Usage: python3 bench/gpu/stack_checks.py URL [--json OUT]   (the key from ONEPASS_API_KEY)
One line per check, PASS or FAIL with what it saw, then one JSON line:
- ready: /health 200, the model and the attention modes it reads in (two-way when the start-up
  probe found the plugin's two-way reads live on this device);
- set reads: a choice of 4 options with kwargs.layout.option_sets, in 8 orders: every order
  answers 200 with the same probability per option, to the bit (the shim's start-up probe
  offers sets only when two orders read the same bits on this device; this asks it anew);
- set reads differ from a listing: the same choice read as a plain listing answers otherwise
  (a set read that silently fell back to the listing would pass the check above);
- two-way: a yes/no read with attention_mode two-way answers 200 (when offered);
- the same request, the same answer: one decision sent 6 times, 3 of them beside 4 others of
  other shapes: every answer byte-identical.
Standard library only.
"""
import argparse
import itertools
import json
import random
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "lib")]
import shim_auth  # noqa: E402

TEAMS = {"billing": "Payments and refunds", "tech": "Bugs and outages", "sales": None,
         "legal": "Contracts and disputes"}
STATE = "I was charged twice for my plan and the app crashes when I open it. Please help."
NOUL = {"type": "noul", "instructions": "Is the customer asking for money back?"}
SCORE = {"type": "score", "instructions": "How angry is the customer?",
         "criteria": ["Calm", "Frustrated", "Very angry"]}


def call(url, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data, shim_auth.headers(), method=method)
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def choice(url, keys, option_sets=True):
    body = {"model": "jev-latest", "state": STATE,
            "kwargs": {"layout": {"option_sets": option_sets}},
            "questions": {"team": {"type": "choice", "instructions": "Which team should handle "
                                   "this?", "criteria": {k: TEAMS[k] for k in keys}}}}
    status, raw = call(url, "POST", "/v1/systemone", body)
    doc = json.loads(raw) if raw else {}
    return status, (doc.get("answers") or {}).get("team", doc)


def check_ready(url):
    status, raw = call(url, "GET", "/health")
    doc = json.loads(raw or b"{}")
    return status == 200, f"{status} {doc.get('model')} modes {doc.get('attention_modes')}", doc


def check_sets(url):
    keys = list(TEAMS)
    seen, statuses = set(), []
    for order in random.Random(48).sample(list(itertools.permutations(keys)), 8):
        status, answer = choice(url, order)
        statuses.append(status)
        if status == 200:
            seen.add(tuple(sorted(answer["probabilities"].items())))
    ok = statuses == [200] * 8 and len(seen) == 1
    return ok, f"statuses {sorted(set(statuses))}, {len(seen)} distinct answer(s) over 8 orders"


def check_sets_differ(url):
    (s1, a), (s2, b) = choice(url, list(TEAMS)), choice(url, list(TEAMS), option_sets=False)
    if (s1, s2) != (200, 200):
        return False, f"statuses {s1}, {s2}"
    same = a["probabilities"] == b["probabilities"]
    return not same, "set and listing differ" if not same else "set read equals the listing"


def check_two_way(url, modes):
    if "bidirectional" not in (modes or []):
        return False, f"two-way not offered (modes {modes})"
    body = {"model": "jev-latest", "state": STATE, "attention_mode": "bidirectional",
            "questions": {"refund": NOUL}}
    status, raw = call(url, "POST", "/v1/systemone", body)
    return status == 200, f"{status} {raw[:120]!r}" if status != 200 else "200"


def check_same_answer(url):
    body = {"model": "jev-latest", "state": STATE + " Order 4471.",
            "questions": {"refund": NOUL, "anger": SCORE,
                          "team": {"type": "choice", "criteria": dict(TEAMS)}}}
    first = call(url, "POST", "/v1/systemone", body)
    answers = [first]
    for round_ in range(5):
        others = [threading.Thread(target=call, args=(url, "POST", "/v1/systemone", {
            "model": "jev-latest", "state": STATE * (k + 2) + f" {round_}",
            "questions": {"q": NOUL}})) for k in range(4 if round_ % 2 else 0)]
        for t in others:
            t.start()
        answers.append(call(url, "POST", "/v1/systemone", body))
        for t in others:
            t.join()
    distinct = {json.dumps(json.loads(raw)["answers"], sort_keys=True) for s, raw in answers
                if s == 200}
    ok = all(s == 200 for s, _ in answers) and len(distinct) == 1
    return ok, f"{len(answers)} answers, {len(distinct)} distinct"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--json")
    args = ap.parse_args()
    url = args.url.rstrip("/")
    ready, detail, health = check_ready(url)
    results = [("ready", ready, detail)]
    if ready:
        for name, fn in (("set reads: 8 orders, one answer", lambda: check_sets(url)),
                         ("set reads differ from a listing", lambda: check_sets_differ(url)),
                         ("two-way read", lambda: check_two_way(
                             url, health.get("attention_modes"))),
                         ("same request, same answer", lambda: check_same_answer(url))):
            try:
                ok, detail = fn()
            except (OSError, ValueError, KeyError) as e:
                ok, detail = False, f"{type(e).__name__}: {e}"
            results.append((name, ok, detail))
    for name, ok, detail in results:
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)
    out = [{"check": n, "ok": ok, "detail": d} for n, ok, d in results]
    print(json.dumps(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
