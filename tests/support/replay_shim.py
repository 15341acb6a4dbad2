"""A real shim in this process whose engine records to a tape or replays one
(tests/support/replay_engine.py): the start-up guard and warm-up run as shim.py runs them, then
it serves HTTP on a free port. For bench/parity/record.py and the replay tests
(tests/unit/answers/).

The settings are the tape's: its `meta.argv` (profile, engine timeout, request deadline) with
the vLLM URL added, a live one when recording and REPLAY_URL when replaying.
"""
from __future__ import annotations

import json
import sys
import threading
from unittest import mock

from onepass import config
from onepass.body import limits as body_limits
from tests.support.inprocess_shim import stop_shim
from tests.support.paths import ROOT
from tests.support.replay_engine import (FIXTURES, RECORD_COMMAND, Tape, answers_path,
                                         replaying, tape_path)
from tests.support.tape_fingerprint import changes

# Nothing listens on port 1: a call that went around Engine.call (a streamed thought, with
# kwargs.reasoning.budget_ms) fails there instead of reaching a live vLLM.
REPLAY_URL = "http://127.0.0.1:1"
# Long enough for a loaded 2-core machine: a timeout while recording would be an answer of its
# own (a 503) where the replay answers at once.
ENGINE_TIMEOUT_S, DEADLINE_S = "600", "1800"


def without_zstd():
    """zstd bodies refused (a 415) while a tape is recorded or replayed: whether an interpreter
    decodes them depends on backports.zstd beside it (the venv has it, python3 -S has not), and
    a tape must answer the same in both."""
    return mock.patch.object(body_limits, "ZSTD", None)


def shim_argv(profile: str) -> list[str]:
    """The shim's arguments, the vLLM URL left out (the tape's meta.argv)."""
    return ["--config", "serve_config.json", "--port", "0", "--profile", profile,
            "--engine-timeout-s", ENGINE_TIMEOUT_S, "--request-timeout-s", DEADLINE_S]


def start(argv: list[str], vllm: str, engine, environ: dict | None = None):
    """A shim on a free port, ready (guard and warm-up done on this thread), its engine built
    by `engine` (Service's argument). Raises with the reason when it did not get ready."""
    from onepass.edge.connections import Server
    from onepass.server import READY, Service
    argv = [str(ROOT / a) if a == "serve_config.json" else a for a in argv]
    settings = config.load(argv + ["--vllm", vllm], environ=environ or {})
    service = Service(settings, ROOT, engine=engine)
    service.warm_up(poll_s=1.0)
    if service.phase != READY:
        misses = getattr(service.engine, "misses", ())
        service.engine.close()
        raise RuntimeError(f"the shim did not get ready: {service.reason}"
                           + (f"; the tape has no reply for {misses} (method, path, key); "
                              f"re-record: {RECORD_COMMAND}" if misses else ""))
    server = Server(service)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class StaleTape(Exception):
    """A tape recorded for another engine, vLLM pin, model or profile than this checkout's."""


def replay(tape: Tape, log: list | None = None):
    """A ready shim answering from `tape` (its engine: server.service.engine); a tape whose
    fingerprint is not this checkout's is refused, naming what changed."""
    profile = tape.meta["profile"]
    stale = changes(tape.meta.get("fingerprint"), profile)
    if stale:
        raise StaleTape(f"the tape {tape.path or '(in memory)'} stands for another checkout: "
                        + "; ".join(stale) + f". Re-record: {RECORD_COMMAND} --profile "
                        f"{profile}")
    return start(tape.meta["argv"], REPLAY_URL, replaying(tape, log))


def url(server) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


class Replayed:
    """A profile's corpus replayed through one shim, once per process (replayed()): each
    case's answer as corpus.py records it, and the engine calls that answered it (reads and
    generations only: the chat and text completion routes)."""

    def __init__(self, profile: str):
        corpus = parity_corpus()
        self.tape = Tape.load(tape_path(FIXTURES, profile))
        self.recorded = corpus.read(str(answers_path(FIXTURES, profile)))
        self.cases = corpus.corpus(self.tape.meta["vision"])
        self.answers, self.calls = {}, {}
        with without_zstd():
            server = replay(self.tape)
            self.engine = server.service.engine
            self.facts = server.service.pipeline.facts
            try:
                for case in self.cases:
                    self.engine.log = []
                    line = corpus.entry(case, *corpus.post(url(server), case, 60))
                    self.answers[case.name] = corpus.loads(corpus.dump(line))  # as recorded
                    self.calls[case.name] = [c for c in self.engine.log
                                             if "completions" in c[1]]
            finally:
                self.engine.log = None
                stop_shim(server)

    def body(self, name: str) -> dict:
        """A case's answer document, numbers as Python numbers."""
        return json.loads(parity_corpus().dump(self.answers[name]["body"]))


_REPLAYED: dict[str, Replayed] = {}


def replayed(profile: str) -> Replayed:
    if profile not in _REPLAYED:
        _REPLAYED[profile] = Replayed(profile)
    return _REPLAYED[profile]


def parity_corpus():
    """bench/parity/corpus.py (its directory on sys.path: it imports its siblings)."""
    folder = str(ROOT / "bench" / "parity")
    if folder not in sys.path:
        sys.path.append(folder)
    import corpus
    return corpus
