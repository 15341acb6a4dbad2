"""The same request, the same answer: each fresh request answered alone (cold prefix cache),
then beside background requests of other shapes, then alone again (warm cache); every answer
compared byte for byte with the first.

Usage: python bench/measure/determinism.py --url http://127.0.0.1:8741 [--requests 100]
       [--reasoning-every 4]
       [--box: a vision profile; each request also carries a fresh picture and a box question]
       python bench/measure/determinism.py --vllm http://127.0.0.1:8742 [--requests 8]
Prints the pairs compared, how many differ and the largest probability difference (progress per
request on stderr; a request still refused with 503/529 after the retries is counted as
unanswered and not compared, never as a pair). Two pairs per
request (loaded, warm), so --requests 100 compares 200 pairs. tests/live/test_determinism_live.py
runs the same loop with a few requests and asserts that none differ. With --vllm the same is done
straight against a vLLM server (label log-probs of a ~350-480-token prompt, cold, then beside
three reads and a 24-token generation of other shapes, then warm): the engine alone, with or
without the onepass_batch_invariant entry point loaded.
"""
from __future__ import annotations

import argparse
import base64
import json
import random
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # onepass, for --box's picture
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
import shim_auth  # noqa: E402

WORDS = ("invoice refund parcel delay customer charge account router outage screen billing "
         "manager warranty courier address password upgrade plan discount order").split()


def post(url: str, body: dict, timeout: float = 600, tries: int = 5) -> dict:
    """One answer; a 503/529 (vLLM slower than the engine timeout on a loaded machine, or the
    server full) is asked again after a pause: it is no answer, so it is not a pair."""
    req = urllib.request.Request(url + "/v1/systemone", json.dumps(body).encode(),
                                 shim_auth.headers())
    for attempt in range(tries):
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code not in (503, 529) or attempt == tries - 1:
                raise
            time.sleep(2 + 4 * attempt)


def state(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) + ("." if rng.random() < 0.1 else "") for _ in range(words))


def probe_request(i: int, reasoning: bool, box: bool = False) -> dict:
    """A fresh state (never sent before), every read kind and a number question; with `box`
    (a vision profile) also a fresh image and a box question (generated, then edges)."""
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
    if box:  # a fresh picture (size, colours, square from i) and a box question on it
        from onepass.backend.warmup import png
        w, h = rng.choice((48, 64, 90)), rng.choice((32, 48, 64))
        side = rng.randrange(8, min(w, h) // 2)
        picture = png(w, h, tuple(rng.randrange(256) for _ in range(3)),
                      (rng.randrange(w - side), rng.randrange(h - side), side,
                       tuple(rng.randrange(256) for _ in range(3))))
        body["state"] = {"ticket": body["state"],
                         "photo": "data:image/png;base64," + base64.b64encode(picture).decode()}
        body["questions"]["where"] = {"type": "box", "instructions": "the square in `photo`",
                                      "box": {"mode": "hybrid"}}
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


def tally(out: dict, i: int, name: str, differs: bool, gap: float) -> None:
    """One pair counted into `out` (pairs, differing, max_gap, examples)."""
    out["pairs"] += 1
    if differs:
        out["differing"] += 1
        out["max_gap"] = max(out["max_gap"], gap)
        out["examples"].append((i, name))


def compare(url: str, requests: int, reasoning_every: int = 4, first: int = 0,
            box: bool = False) -> dict:
    """Each request alone, then under background load, then warm; pairs against the first."""
    out = {"pairs": 0, "differing": 0, "max_gap": 0.0, "examples": [], "unanswered": 0}
    for i in range(first, first + requests):
        body = probe_request(i, reasoning_every > 0 and i % reasoning_every == 0, box)
        background = None
        try:
            alone = post(url, body)
            background = Background(url)
            loaded = post(url, body)
            background.stop()
            background = None
            warm = post(url, body)
        except urllib.error.HTTPError as e:  # still 503/529 after the retries: no pair, said so
            out["unanswered"] += 1
            print(f"request {i}: no answer (HTTP {e.code}); not compared", file=sys.stderr)
            continue
        finally:
            if background is not None:
                background.stop()
        for name, other in (("loaded", loaded), ("warm", warm)):
            differs = seen(other) != seen(alone)  # a thought's text can differ with no number
            tally(out, i, name, differs, largest_gap(alone, other) if differs else 0.0)
        print(f"request {i}: {out['pairs']} pairs so far, {out['differing']} differing",
              file=sys.stderr, flush=True)
    return out


def vllm_post(url: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(url + path, json.dumps(body).encode(), shim_auth.vllm_headers())
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def engine_compare(url: str, requests: int) -> dict:
    """Label log-probs straight from vLLM: each prompt cold, beside other shapes, then warm."""
    models = urllib.request.Request(url + "/v1/models", headers=shim_auth.vllm_headers())
    model = json.loads(urllib.request.urlopen(models, timeout=60).read())["data"][0]["id"]
    labels = [vllm_post(url, "/tokenize", {"model": model, "prompt": x, "add_special_tokens":
                                            False})["tokens"][0] for x in "ABCD"]

    def prompt(seed: int, words: int) -> str:
        return ("<|im_start|>system\nYou answer one question about a record.<|im_end|>\n"
                f"<|im_start|>user\nRecord: {state(random.Random(seed), words)}\nWhich team?\n"
                "A. billing\nB. tech\nC. sales\nD. legal<|im_end|>\n<|im_start|>assistant\n")

    def read(text: str) -> list[float]:
        doc = vllm_post(url, "/v1/completions", {
            "model": model, "prompt": text, "max_tokens": 1, "temperature": 0, "logprobs": 1,
            "logprob_token_ids": labels, "return_tokens_as_token_ids": True,
            "add_special_tokens": False})
        top = doc["choices"][0]["logprobs"]["top_logprobs"][0]
        return [top[f"token_id:{t}"] for t in labels]

    out = {"pairs": 0, "differing": 0, "max_gap": 0.0, "examples": []}
    for i in range(requests):
        text = prompt(5000 + i * 7919 + random.randrange(10**6), 300 + 20 * i)
        cold = read(text)
        others = [threading.Thread(target=read, args=(prompt(i * 31 + j, 40 + 90 * j),))
                  for j in range(3)]
        others.append(threading.Thread(target=vllm_post, args=(url, "/v1/completions", {
            "model": model, "prompt": prompt(i * 77, 60), "max_tokens": 24, "temperature": 0,
            "ignore_eos": True})))
        for t in others:
            t.start()
        busy = read(text)
        for t in others:
            t.join()
        warm = read(text)
        for name, other in (("loaded", busy), ("warm", warm)):
            gap = max(abs(a - b) for a, b in zip(cold, other))
            tally(out, i, name, gap != 0, gap)
    return out


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8741")
    ap.add_argument("--vllm", help="compare label log-probs straight from this vLLM instead")
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--reasoning-every", type=int, default=4,
                    help="every Nth request thinks (reasoning on, trace); 0 = none")
    ap.add_argument("--box", action="store_true",
                    help="a vision profile: each request also has a fresh image and a box question")
    a = ap.parse_args(argv)
    if a.vllm:
        got = engine_compare(a.vllm, a.requests)
    else:
        got = compare(a.url, a.requests, a.reasoning_every, box=a.box)
    print(f"pairs {got['pairs']}, differing {got['differing']}, largest difference "
          f"{got['max_gap']:.3g}; first differing {got['examples'][:5]}"
          + (f"; {got['unanswered']} requests unanswered (503/529), not compared"
             if got.get("unanswered") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
