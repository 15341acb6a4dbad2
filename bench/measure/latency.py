"""Latency through the shim vs the same prompts sent straight to vLLM, one call per read.

Usage: python bench/measure/latency.py --shim http://127.0.0.1:8741 --vllm http://127.0.0.1:8742
       [--n 30] [--layout profile|plain|'{"repeat": 2}'] [--profile NAME]
--layout plain sends every prompt technique off (kwargs.layout, and the same prompts direct); a
JSON object turns techniques on over that (e.g. repetition, to see what it costs the questions
that share a cached state); the default reads with the profile's own layout.
Cases: (a) one 3-option choice over a ~60-token state; (b) choice-3, noul, score-3 and choice-5
over a ~500-token state; on a vision profile also (c) choice-3 and noul over a ~60-token state
with one 64x48 PNG (a new colour each iteration, so vLLM's image cache cannot replay it; the
direct path sends the same chat-route reads), and (d, e) one box question over the same
state and image, generated or read by edges (shim only: a box is not a set of reads a client
could send; compare with (c)). Each iteration uses a new state (a unique ticket number up front), so
vLLM's prefix cache cannot replay a whole earlier request; shim and direct calls use different
numbers and alternate, so they see the same machine. Warm-up iterations are not timed.
Three paths per iteration, each on its own new state: the shim; "direct", the shim's own vLLM
calls made without it (engine.read_all on the same reads: the shim's cost is the difference); and
"plain client", what a client without onepass sends: one plain read per question (state first,
every technique off), all at once, each a whole prompt with the state.
Prints one line and one JSON line per case: p50/p95 (ms) of each path and the ratios.
"""
import argparse
import base64
import json
import os
import platform
import statistics
import sys
import time
import urllib.request
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "lib"))
import shim_auth  # noqa: E402
from onepass import config  # noqa: E402
from onepass.images import inputs as image_inputs  # noqa: E402
from onepass.api import systemone  # noqa: E402
from onepass.pipeline import offline  # noqa: E402
from onepass.backend.engine import Engine  # noqa: E402
from onepass.prompt.layout import layout  # noqa: E402
from onepass.backend.probes import verified_labels  # noqa: E402
from onepass.backend.warmup import png  # noqa: E402

RUN = f"{time.time_ns() % 10**8:08d}"  # states of an earlier run must not be in the prefix cache
SENTENCE = ("The customer writes that the invoice for March was charged twice to the company card "
            "and that the finance team needs one of the two payments returned before Friday. ")
CHOICE3 = {"type": "choice", "instructions": "Which team should handle this?",
           "criteria": {"billing": "Payments and refunds", "tech": "Bugs and outages",
                        "sales": "Pricing and upgrades"}}
NOUL = {"type": "noul", "instructions": "Is the customer asking for money back?"}
SCORE3 = {"type": "score", "instructions": "How urgent is it?", "criteria": ["Low", "Medium", "High"]}
CHOICE5 = {"type": "choice", "instructions": "Which language is the ticket in?",
           "criteria": {"English": None, "German": None, "French": None, "Korean": None,
                        "Spanish": None}}
CASES = {"a: choice-3, ~60-token state": (2, {"team": CHOICE3}, 0),
         "b: choice-3 + noul + score-3 + choice-5, ~500-token state":
             (19, {"team": CHOICE3, "refund": NOUL, "urgency": SCORE3, "lang": CHOICE5}, 0)}
BOX = {"type": "box", "instructions": "the coloured area in the photo"}
IMAGE_CASE = {"c: choice-3 + noul, ~60-token state + one 64x48 image":
              (2, {"team": CHOICE3, "refund": NOUL}, 1),
              "d: one box question (generate), ~60-token state + one 64x48 image":
              (2, {"where": BOX}, 1),
              "e: one box question (edges), ~60-token state + one 64x48 image":
              (2, {"where": {**BOX, "box": {"mode": "edges"}}}, 1)}


def state(tag: str, sentences: int, images: int = 0, i: int = 0, path: int = 0):
    """Text, or with images {"photos": [data URLs], "ticket": text}; each (i, path) has its own
    colours."""
    text = f"Ticket {tag}. " + SENTENCE * sentences
    if not images:
        return text
    urls = ["data:image/png;base64," + base64.b64encode(
        png(64, 48, ((i * 37 + k) % 256, (i * 91) % 256, path * 100))).decode()
        for k in range(images)]
    return {"photos": urls, "ticket": text}


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), shim_auth.headers())
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shim", default="http://127.0.0.1:8741",
                    help="'' times the direct and plain-client paths only (a vLLM the shim "
                         "would refuse, e.g. without the fp32 head)")
    ap.add_argument("--vllm", default="http://127.0.0.1:8742")
    ap.add_argument("--config", default=str(ROOT / "serve_config.json"))
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--layout", default="profile", help="profile, plain, or a JSON object")
    ap.add_argument("--profile", default="", help="the shim's profile (default: the file's)")
    args = ap.parse_args()
    _, profile = config.load_profile(args.config, args.profile)
    vision = profile.vision
    engine = Engine(args.vllm, profile.served_model_name, timeout_s=300, num_connections=4,
                    key=shim_auth.vllm_key(),
                    image_slot=vision.placeholder if vision else None)
    labels = verified_labels(engine, profile)
    plain = None if args.layout == "profile" else config.Layout(
        **({} if args.layout == "plain" else json.loads(args.layout)))
    extra = {"kwargs": {"layout": asdict(plain)}} if plain else {}
    policy = image_inputs.Policy(profile.model_name, vision, None)
    parse, parse_plain = (lambda b, lay=lay: offline(systemone, b, layout=lay,
                                                     image_policy=policy)[0]
                          for lay in (plain, config.Layout()))
    for name, (sentences, questions, images) in {**CASES, **(IMAGE_CASE if vision else {})}.items():
        shim_ms, direct_ms, client_ms, tokens = [], [], [], 0
        for i in range(args.warmup + args.n):
            body = {"model": "jev-latest", "state": state(f"S-{RUN}-{i}", sentences, images, i, 0),
                    "questions": questions, **extra}
            t = time.perf_counter()
            tokens = post(args.shim + "/v1/systemone", body)["usage"]["input_tokens"] \
                if args.shim else None
            shim_s = time.perf_counter() - t
            if any(q["type"] == "box" for q in questions.values()):
                shim_ms += [shim_s * 1000] if i >= args.warmup else []
                continue
            direct = dict(body, state=state(f"D-{RUN}-{i}", sentences, images, i, 1))
            reads = layout(parse(direct), profile, labels)
            t = time.perf_counter()
            engine.read_all(reads)  # the shim's own calls to vLLM, without the shim
            direct_s = time.perf_counter() - t
            client = dict(body, state=state(f"C-{RUN}-{i}", sentences, images, i, 2))
            reads = layout(parse_plain(client), profile, labels)
            t = time.perf_counter()
            engine.map(engine.read, reads)  # a client without onepass: a call per question
            client_s = time.perf_counter() - t
            if i >= args.warmup:
                shim_ms += [shim_s * 1000] if args.shim else []
                direct_ms.append(direct_s * 1000)
                client_ms.append(client_s * 1000)
        row = {"case": name, "layout": args.layout, "n": args.n, "concurrency": 1, "questions": len(questions),
               "input_tokens_per_request": tokens, "model": profile.served_model_name,
               "machine": f"{platform.machine()} {os.cpu_count()} cores, no GPU"}
        for path, ms in (("shim", shim_ms), ("direct", direct_ms), ("plain_client", client_ms)):
            # a box case times the shim only (direct and plain client: null)
            row[f"{path}_p50_ms"] = round(statistics.median(ms), 1) if ms else None
            row[f"{path}_p95_ms"] = round(pct(ms, 0.95), 1) if ms else None
        for path in ("direct", "plain_client"):
            row[f"p50_ratio_shim_over_{path}"] = (round(row["shim_p50_ms"] / row[f"{path}_p50_ms"], 3)
                                                  if row[f"{path}_p50_ms"] and shim_ms else None)
        print(f"{name}: shim p50 {row['shim_p50_ms']} ms p95 {row['shim_p95_ms']} ms | direct "
              f"p50 {row['direct_p50_ms']} ms p95 {row['direct_p95_ms']} ms | ratio "
              f"{row['p50_ratio_shim_over_direct']} | plain client p50 "
              f"{row['plain_client_p50_ms']} ms p95 {row['plain_client_p95_ms']} ms | ratio "
              f"{row['p50_ratio_shim_over_plain_client']}")
        print(json.dumps(row))
    engine.close()


if __name__ == "__main__":
    main()
