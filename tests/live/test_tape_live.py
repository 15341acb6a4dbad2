"""The fast profile's replay tape still stands for the engine it replays: its corpus recorded
afresh, through the recording shim (bench/parity/record.py's), on the live suite's stack in the
dtype serve.sh ships here, is the tape request for request and reply for reply, bit for bit
(tests/support/tape_compare.py). The replay tests check the shim against the tape; this checks
the tape against vLLM, so a tape that no longer matches the engine (a kernel, a flag, a vLLM
behaviour its fingerprint cannot see) fails here. On a machine of another kind (another dtype
or kernel flags than the tape's `machine`) the numbers differ by design: skipped, naming both."""
import sys
from argparse import Namespace

import pytest

from tests.support.paths import FAST_PROFILE, ROOT
from tests.support.replay_engine import FIXTURES, RECORD_COMMAND, Tape, tape_path
from tests.support.tape_compare import differences, machine

sys.path.insert(0, str(ROOT / "bench" / "parity"))
import record  # noqa: E402  (bench/parity/record.py: the recording, as record.sh runs it)


def test_a_fresh_recording_is_the_tape(shipped, tmp_path, monkeypatch):
    stack, dtype = shipped
    stored = Tape.load(tape_path(FIXTURES, FAST_PROFILE))
    here = machine(dtype)
    if stored.meta.get("machine") != here:
        pytest.skip(f"the tape was recorded on another machine kind ({stored.meta.get('machine')}"
                    f"; this one serves {here}): its numbers are that machine's")
    monkeypatch.setenv("ONEPASS_VLLM_KEY", stack.vllm_key)
    fresh = Tape(dict(stored.meta))
    problems = record.record(Namespace(vllm=stack.vllm_url, vision=stored.meta["vision"]),
                             fresh, tmp_path / "answers.jsonl")
    assert not problems, problems
    found = differences(stored, fresh)
    print(f"{len(fresh.entries)} requests recorded afresh; {len(found)} differ from the tape")
    assert not found, (f"the tape {stored.path} no longer matches the engine; re-record: "
                       f"{RECORD_COMMAND} --profile {FAST_PROFILE}\n" + "\n".join(found[:20]))
