"""The same request, the same answer: each fresh request answered alone (cold prefix cache),
then beside background requests of other shapes, then alone again (warm cache); every answer
compared byte for byte with the first.

Usage: python bench/determinism.py --url http://127.0.0.1:8741 [--requests 100] [--reasoning-every 4]
Prints the pairs compared, how many differ and the largest probability difference. Two pairs per
request (loaded, warm), so --requests 100 compares 200 pairs. tests/live/test_determinism_live.py
runs the same loop with a few requests and asserts that none differ.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import urllib.request

WORDS = ("invoice refund parcel delay customer charge account router outage screen billing "
         "manager warranty courier address password upgrade plan discount order").split()


def post(url: str, body: dict, timeout: float = 600) -> dict:
    req = urllib.request.Request(url + "/v1/systemone", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def state(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) + ("." if rng.random() < 0.1 else "") for _ in range(words))


def probe_request(i: int, reasoning: bool) -> dict:
    """A fresh state (never sent before), every read kind and a number question."""
    rng = random.Random(1000 + i)
    body = {"model": "jev-latest", "state": f"Ticket {rng.randrange(10**6)}: " + state(rng, 250 + 40 * (i % 7)),
            "questions": {
                "refund": {"type": "noul", "instructions": "Does the customer ask for money back?"},
                "team": {"type": "choice", "instructions": "Which team handles this?",
                         "criteria": {"billing": "payments", "tech": "bugs", "sales": "pricing",
                                      "legal": None}},
                "anger": {"type": "score", "criteria": ["calm", "annoyed", "furious"]},
                "days": {"type": "number", "instructions": "How many days late is the order?"}}}
    if reasoning:
        body["kwargs"] = {"reasoning": {"mode": "on", "trace": True}}
    return body


def load_request(rng: random.Random) -> dict:
    """Background traffic of other shapes: longer or shorter states, more questions."""
    n = rng.choice((1, 3, 6))
    return {"model": "jev-latest", "state": state(rng, rng.choice((20, 150, 400))),
            "questions": {f"q{k}": {"type": "noul", "instructions": f"Is point {k} met?"}
                          for k in range(n)}}


class Background:
    """`clients` threads sending load_request bodies until stop()."""

    def __init__(self, url: str, clients: int = 3, seed: int = 5):
        self.url, self.halt, self.sent = url, threading.Event(), 0
        self.threads = [threading.Thread(target=self.run, args=(random.Random(seed + c),))
                        for c in range(clients)]
        for t in self.threads:
            t.start()

    def run(self, rng):
        while not self.halt.is_set():
            post(self.url, load_request(rng))
            self.sent += 1

    def stop(self):
        self.halt.set()
        for t in self.threads:
            t.join(timeout=600)


def seen(doc: dict) -> bytes:
    """What must not change: the answers and the thoughts, as canonical JSON bytes."""
    return json.dumps({"answers": doc["answers"], "thoughts": doc.get("x_thoughts")},
                      sort_keys=True).encode()


def largest_gap(a: dict, b: dict) -> float:
    """The largest difference between any two numbers at the same place of two answers."""
    def numbers(x, path=()):
        if isinstance(x, dict):
            for k, v in x.items():
                yield from numbers(v, path + (k,))
        elif isinstance(x, (int, float)) and not isinstance(x, bool):
            yield path, float(x)
    left, right = dict(numbers(a["answers"])), dict(numbers(b["answers"]))
    return max((abs(left[k] - right[k]) for k in left.keys() & right.keys()), default=0.0)


def compare(url: str, requests: int, reasoning_every: int = 4, first: int = 0) -> dict:
    """Each request alone, then under background load, then warm; pairs against the first."""
    out = {"pairs": 0, "differing": 0, "max_gap": 0.0, "examples": []}
    for i in range(first, first + requests):
        body = probe_request(i, reasoning_every > 0 and i % reasoning_every == 0)
        alone = post(url, body)
        background = Background(url)
        try:
            loaded = post(url, body)
        finally:
            background.stop()
        warm = post(url, body)
        for name, other in (("loaded", loaded), ("warm", warm)):
            out["pairs"] += 1
            if seen(other) != seen(alone):
                out["differing"] += 1
                out["max_gap"] = max(out["max_gap"], largest_gap(alone, other))
                out["examples"].append((i, name))
    return out


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8741")
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--reasoning-every", type=int, default=4,
                    help="every Nth request thinks (reasoning on, trace); 0 = none")
    a = ap.parse_args(argv)
    got = compare(a.url, a.requests, a.reasoning_every)
    print(f"pairs {got['pairs']}, differing {got['differing']}, largest difference "
          f"{got['max_gap']:.3g}; first differing {got['examples'][:5]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
