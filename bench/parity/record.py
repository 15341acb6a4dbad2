#!/usr/bin/env python3
"""Record one profile's replay tape and answers on a live vLLM (bench/parity/record.sh runs it).

    ONEPASS_VLLM_KEY=KEY python3 bench/parity/record.py --profile smollm2-135m-fast \\
        --vllm http://127.0.0.1:8792 --dtype bfloat16 [--vision] [--out tests/fixtures/replay]

A shim in this process whose engine records (tests/support/replay_engine.py) runs the start-up
guard and the warm-up, then the corpus is posted to it over HTTP, one request at a time, as
`corpus.py record` posts it. The tape is then replayed through a fresh shim and the corpus
posted again: only when every answer is the same (corpus.py compare's normalisation), no
request missed the tape and no vLLM call failed are OUT/<profile>.tape.jsonl.gz and
OUT/<profile>.answers.jsonl written (the answers that differ from the previous recording's
listed first). Exit 1 otherwise, with the reason (the recording is left beside them as
*.rejected).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE)]
import corpus  # noqa: E402
from tests.support import replay_shim  # noqa: E402
from tests.support.inprocess_shim import stop_shim  # noqa: E402
from tests.support.replay_engine import (FIXTURES, Tape, answers_path,  # noqa: E402
                                         recording, tape_path)
from tests.support.tape_compare import machine  # noqa: E402
from tests.support.tape_fingerprint import fingerprint  # noqa: E402


def post_corpus(server, out: Path, vision: bool) -> None:
    argv = ["record", "--shim", replay_shim.url(server), "--out", str(out)]
    corpus.main(argv + (["--vision"] if vision else []))


def record(args, tape: Tape, out: Path) -> list[str]:
    """The corpus through a recording shim; what went wrong (nothing: [])."""
    environ = {k: v for k, v in os.environ.items() if k == "ONEPASS_VLLM_KEY"}
    with replay_shim.without_zstd():
        server = replay_shim.start(tape.meta["argv"], args.vllm, recording(tape), environ)
        try:
            post_corpus(server, out, args.vision)
        finally:
            stop_shim(server)
    failures = server.service.engine.failures
    return [f"a vLLM call failed while recording: {f}" for f in failures]


def verify(tape: Tape, recorded: Path, vision: bool) -> list[str]:
    """The tape replayed: what differs from the recording (nothing: [])."""
    with tempfile.TemporaryDirectory() as tmp, replay_shim.without_zstd():
        replayed = Path(tmp) / "replayed.jsonl"
        server = replay_shim.replay(tape)
        try:
            post_corpus(server, replayed, vision)
        finally:
            stop_shim(server)
        verdicts = corpus.judge(corpus.read(str(recorded)), corpus.read(str(replayed)),
                                "the recording", "the replay")
    problems = [f"replayed {name}: {found}" for name, found in verdicts if found]
    misses = server.service.engine.misses
    problems += [f"the replay missed {m} {p} (key {k})" for m, p, k in misses]
    print(f"replay: {len(verdicts) - len(problems)} of {len(verdicts)} answers identical, "
          f"{len(misses)} misses, {tape.repeats} repeated replies", file=sys.stderr)
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--profile", required=True, help="serve_config.json profile vLLM serves")
    p.add_argument("--vllm", required=True, help="the live vLLM's URL, http://host:port "
                   "(its key in ONEPASS_VLLM_KEY)")
    p.add_argument("--dtype", required=True, choices=("float32", "bfloat16"),
                   help="the dtype that vLLM serves in (recorded with this CPU's kernel flags: "
                   "tests/live/test_tape_live.py compares on the same machine kind only)")
    p.add_argument("--vision", action="store_true", help="the corpus's vision section too")
    p.add_argument("--out", default=str(FIXTURES), help="the fixtures folder")
    args = p.parse_args(argv)
    started = time.monotonic()
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    cases = corpus.corpus(args.vision)
    tape = Tape({"profile": args.profile, "argv": replay_shim.shim_argv(args.profile),
                 "vision": args.vision, "cases": len(cases),
                 "corpus_sha256": corpus.corpus_sha(cases),
                 "fingerprint": fingerprint(args.profile), "machine": machine(args.dtype)})
    answers, tape_file = answers_path(folder, args.profile), tape_path(folder, args.profile)
    drafts = [f.with_name(f.name + ".rejected") for f in (answers, tape_file)]
    problems = record(args, tape, drafts[0])
    tape.save(drafts[1])
    if not problems:  # the tape as it was written, read back
        problems = verify(Tape.load(drafts[1]), drafts[0], args.vision)
    if problems:
        print("record: not written:\n  " + "\n  ".join(problems[:20]), file=sys.stderr)
        return 1
    if answers.exists():  # what a reviewer of the new fixtures wants to know first
        verdicts = corpus.judge(corpus.read(str(answers)), corpus.read(str(drafts[0])),
                                "the previous recording", "this one")
        changed = [f"  {name}: {found}" for name, found in verdicts if found]
        print(f"record: {len(verdicts) - len(changed)} of {len(verdicts)} answers as in the "
              "previous recording", *changed, sep="\n", file=sys.stderr)
    drafts[0].replace(answers)
    drafts[1].replace(tape_file)
    print(f"record: {args.profile}: {len(tape.entries)} requests, "
          f"{sum(len(e['replies']) for e in tape.entries.values())} replies; "
          f"{tape_file} {tape_file.stat().st_size} bytes, {answers} "
          f"{answers.stat().st_size} bytes ({time.monotonic() - started:.0f} s)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
