"""What fitting a long state costs the shim and vLLM's tokenizer: the shim's CPU seconds and the
/tokenize calls of one request's fit step, for a state of many short distinct paragraphs and
more and more questions.

Usage: python3 -S bench/measure/fitting_cost.py [--paragraphs 19990] [--questions 10,60,400]
       [--vllm URL] [--root DIR]
Without --vllm the tokenizer is bench/lib/stub_tokenizer.py in a process of its own (words and
added tokens, so the shim's CPU is measured alone); with --vllm it is that vLLM's (its key from
ONEPASS_VLLM_KEY). --root runs another checkout's onepass (a copy of the code before a change)
on the same inputs. Prints one row per question count: parts, the request's prompt tokens as
fitted, shim CPU seconds (process time of this process: the fit step and its HTTP client),
wall seconds and /tokenize calls.
Owns: the recipe (the state and its questions) and the figures. Never asserts a figure.
"""
import argparse
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORDS = ("rain", "harbour", "invoice", "parcel", "refund", "wind", "hill", "ledger", "crate",
         "signal", "market", "ferry", "lamp", "orchard", "quarry", "tunnel")


def state(paragraphs: int) -> str:
    """Distinct short paragraphs (about 17 bytes each), blank-line separated."""
    return "\n\n".join(f"Note {i}: {WORDS[i % len(WORDS)]}." for i in range(paragraphs))


def decision(model_module, text: str, questions: int):
    dm = model_module
    qs = tuple(dm.Question("noul", f"Does entry {k} mention a {WORDS[k % len(WORDS)]}?",
                           (dm.Option("true", None), dm.Option("false", None)))
               for k in range(questions))
    return dm.Decision("m", text, qs)


def start_stub() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-S", str(ROOT / "bench/lib/stub_tokenizer.py")],
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--paragraphs", type=int, default=19_990)
    parser.add_argument("--questions", default="10,60,400")
    parser.add_argument("--vllm", default=None, help="a vLLM to tokenize with (default: stub)")
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose onepass runs")
    args = parser.parse_args(argv)
    sys.path.insert(0, args.root)
    from onepass import config, decision_model
    from onepass.backend import probes
    from onepass.backend.engine import Engine
    from onepass.prompt.layout import LabelSet
    from onepass.steps.engine_calls import EngineCalls

    proc, url = (None, args.vllm) if args.vllm else start_stub()
    try:
        _, profile = config.load_profile(str(ROOT / "serve_config.json"), "smollm2-135m-fast")
        profile = replace(profile, served_model_name="stub") if not args.vllm else profile
        labels = LabelSet(noul=(("Yes", 1), ("No", 2)))
        facts = probes.Facts(labels, profile.max_model_len, False, "", profile)
        engine = Engine(url, profile.served_model_name, timeout_s=600, num_connections=32,
                        key=os.environ.get("ONEPASS_VLLM_KEY", ""))
        try:  # batched counting, where the checkout has it
            from onepass.backend import token_counts
            facts = replace(facts, separator=token_counts.separator(engine.ids, profile))
            print(f"counts batched by {facts.separator}")
        except ImportError:
            pass
        calls = {"n": 0}

        def counting(e):
            plain = e.call

            def counted(method, path, body=None):
                calls["n"] += path == "/tokenize"
                return plain(method, path, body)
            e.call = counted
            return e
        text = state(args.paragraphs)
        print(f"onepass from {args.root}; tokenizer {'vLLM ' + url if args.vllm else 'stub'}; "
              f"state {len(text.encode())} bytes, {args.paragraphs} paragraphs")
        print("| questions | prompt tokens | shim CPU s | wall s | /tokenize calls |")
        print("|---|---|---|---|---|")
        for n in map(int, args.questions.split(",")):
            d = decision(decision_model, text, n)
            page = decision_model.Page(d.state, d.questions, d.attention_mode, None, ())
            fresh = counting(Engine(url, profile.served_model_name, timeout_s=600,
                                    num_connections=32, key=os.environ.get("ONEPASS_VLLM_KEY",
                                                                           "")))  # no cache
            calls["n"] = 0
            cpu, wall = time.process_time(), time.perf_counter()
            reads, _ = EngineCalls(profile, facts, fresh).fit(page)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            made = calls["n"]
            tokens = sum(engine.count([r.prompt for r in reads]))
            print(f"| {n} | {tokens} | {cpu:.2f} | {wall:.2f} | {made} |", flush=True)
            fresh.close()
        engine.close()
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
