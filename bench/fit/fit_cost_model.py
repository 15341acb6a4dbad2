"""Fit a profile's reasoning cost model on the machine it targets: what a request's tokens cost in
time on this vLLM, so that a thought's token cap is a pure function of the request.

Usage: .venv/bin/python bench/fit/fit_cost_model.py --vllm http://127.0.0.1:8742 --profile NAME
       [--repeats 5] [--write]   (writes the profile's reasoning.cost_model file)
Owns: timing vLLM directly (standard-library HTTP, every prompt new so the prefix cache cannot
replay it): the fixed cost of a call, prefill time per prompt token, decode time per generated
token with one sequence and with four side by side, and (vision profiles) an image's cost.
Never: starts or stops a server, or touches the shim.
"""
import argparse
import base64
import datetime
import json
import platform
import os
import statistics
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "lib"))
import shim_auth  # noqa: E402
from onepass import config  # noqa: E402
from onepass.backend.warmup import png  # noqa: E402

WORDS = "the invoice for march was charged twice and the finance team asks for one refund ".split()
DECODE, SIDE_BY_SIDE = 64, 4
RUN = time.time_ns()


def post(url: str, body: dict) -> tuple[float, dict]:
    req = urllib.request.Request(url, json.dumps(body).encode(), shim_auth.vllm_headers())
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        doc = json.loads(r.read())
    return (time.perf_counter() - t) * 1000, doc


def text(n_words: int, tag: int) -> str:
    """A new prompt of about n_words words (the tag up front defeats the prefix cache)."""
    return f"Ticket {RUN}-{tag}. " + " ".join(WORDS[i % len(WORDS)] for i in range(n_words))


class Timer:
    def __init__(self, vllm: str, model: str):
        self.url, self.model, self.tag = vllm.rstrip("/"), model, 0

    def completion(self, words: int, tokens: int) -> tuple[float, int]:
        """(ms, prompt tokens) of one greedy completion of exactly `tokens` tokens."""
        self.tag += 1
        ms, doc = post(self.url + "/v1/completions", {
            "model": self.model, "prompt": text(words, self.tag), "max_tokens": tokens,
            "min_tokens": tokens, "ignore_eos": True, "temperature": 0.0})
        return ms, doc["usage"]["prompt_tokens"]

    def chat(self, image: bool) -> float:
        self.tag += 1
        content = [{"type": "text", "text": text(20, self.tag)}]
        if image:
            data = png(64, 48, (self.tag % 256, 90, 160))
            content.insert(0, {"type": "image_url", "image_url": {
                "url": "data:image/png;base64," + base64.b64encode(data).decode()}})
        ms, _ = post(self.url + "/v1/chat/completions", {
            "model": self.model, "messages": [{"role": "user", "content": content}],
            "max_tokens": 1, "temperature": 0.0})
        return ms


def median(fn, repeats: int) -> float:
    return statistics.median(fn() for _ in range(repeats))


def fit(timer: Timer, repeats: int, vision: bool) -> dict:
    timer.completion(20, 1)  # the first call pays for warm-up
    short = [timer.completion(8, 1) for _ in range(repeats)]
    long = [timer.completion(600, 1) for _ in range(repeats)]
    overhead = statistics.median(ms for ms, _ in short)
    d_ms = statistics.median(ms for ms, _ in long) - overhead
    d_tokens = statistics.median(n for _, n in long) - statistics.median(n for _, n in short)
    prefill = max(d_ms, 0.0) / d_tokens
    one = median(lambda: timer.completion(8, DECODE + 1)[0], repeats)
    decode = max(one - overhead, 0.0) / DECODE

    def together():
        with ThreadPoolExecutor(SIDE_BY_SIDE) as pool:
            t = time.perf_counter()
            list(pool.map(lambda _: timer.completion(8, DECODE + 1), range(SIDE_BY_SIDE)))
            return (time.perf_counter() - t) * 1000
    many = median(together, repeats)
    per_token_many = max(many - overhead, 0.0) / DECODE
    extra = max(per_token_many - decode, 0.0) / (SIDE_BY_SIDE - 1)
    image = 0.0
    if vision:
        image = max(median(lambda: timer.chat(True), repeats)
                    - median(lambda: timer.chat(False), repeats), 0.0)
    return {"overhead_ms": round(overhead, 2), "prefill_ms_per_token": round(prefill, 4),
            "image_ms": round(image, 2), "decode_ms_per_token": round(max(decode, 0.01), 3),
            "decode_ms_per_extra_sequence": round(extra, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vllm", default="http://127.0.0.1:8742")
    ap.add_argument("--config", default=str(ROOT / "serve_config.json"))
    ap.add_argument("--profile", default="")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="write the profile's cost model file")
    args = ap.parse_args()
    name, profile = config.load_profile(args.config, args.profile)
    if profile.reasoning is None:
        sys.exit(f"profile {name} has no reasoning settings")
    model = fit(Timer(args.vllm, profile.served_model_name), args.repeats,
                profile.vision is not None)
    model["fitted"] = {"by": "bench/fit/fit_cost_model.py",
                       "date": datetime.date.today().isoformat(),
                       "machine": f"{platform.machine()} {os.cpu_count()} cores, "
                                  f"{platform.processor() or 'cpu'}",
                       "model": profile.served_model_name, "repeats": args.repeats}
    print(json.dumps(model, indent=2))
    if args.write:
        path = Path(args.config).parent / profile.reasoning.cost_model
        path.write_text(json.dumps(model, indent=2) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
