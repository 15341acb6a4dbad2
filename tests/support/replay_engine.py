"""Record and replay at the engine boundary: every vLLM exchange passes Engine.call, so a tape
of its (request, reply) pairs lets a real shim answer without vLLM.

Owns: the tape (its key, its file, the order of several replies to one request), the recording
engine (Engine.call forwarded to vLLM, each reply kept) and the replaying one (Engine.call
answered from the tape; a request the tape lacks, or one called more often than recorded, raises
ReplayMiss, naming the path, the key and the re-record command, and is kept in `misses`; over
HTTP the shim answers it as an engine failure, a 502 whose message is the miss). Everything else of Engine (fitting counts,
read slicing, set reads' token prompts, the caches) runs for real in both.
Never: makes up an answer, or changes what the shim sends (the key is computed from the very
body Engine.call was given).
In: a tape file, or a live vLLM. Out: Engine instances (through Service's `engine` argument).

The tape: gzip'd JSON lines, sorted, gzip's clock fixed (a new recording changes the lines
whose replies changed, no others): first a `meta` line (the profile, the shim's arguments),
then one line per request key, sha256 of the canonical JSON of [method, path, body]: {"key",
"method", "path", "replies": [[status, doc], ...]}, its replies in the order vLLM gave them
(vLLM's cached-token counts differ between two identical calls). What vLLM writes fresh for
every call, response ids and creation times, is stored as fixed values: the shim reads neither.
"""
from __future__ import annotations

import copy
import gzip
import hashlib
import json
import re
import threading
from functools import partial
from pathlib import Path

from onepass.backend.engine import Engine
from onepass.errors import EngineFailed

RECORD_COMMAND = "bash bench/parity/record.sh"  # bench/parity/README.md; --help for one profile
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "replay"  # tapes and answers
FRESH_ID = re.compile(r"^(cmpl|chatcmpl|modelperm)-[0-9A-Za-z_-]+$")


def key(method: str, path: str, body) -> str:
    canonical = json.dumps([method, path, body], sort_keys=True, separators=(",", ":"),
                           default=data_url)
    return hashlib.sha256(canonical.encode()).hexdigest()


def data_url(value) -> str:
    """An image in a body (an Image: wire.pieces sends its data URL's bytes) as that URL."""
    if not hasattr(value, "data_url_bytes"):
        raise TypeError(f"{type(value).__name__} is not JSON")
    return value.data_url_bytes.decode("ascii")


def steady(doc):
    """The reply with the values vLLM makes fresh for every call fixed (see the docstring)."""
    if isinstance(doc, dict):
        return {k: (0 if k == "created" and isinstance(v, int) else
                    FRESH_ID.sub(r"\1-recorded", v) if k == "id" and isinstance(v, str) else
                    steady(v)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [steady(v) for v in doc]
    return doc


class ReplayMiss(EngineFailed):
    """A request the tape has no reply for: the shim now sends what it did not when recorded,
    or sends it more often. An engine failure, so that a client of a replaying shim reads it."""


class Tape:
    """Requests by key, each with its replies in order. Replayed, the n-th call of a key gets
    its n-th reply; a call past the last one is counted in `repeats` and gets none: the shim
    calls vLLM more often than when the tape was recorded."""

    def __init__(self, meta: dict | None = None, entries: dict | None = None, path: str = ""):
        self.meta, self.entries, self.path = meta or {}, entries or {}, path
        self.served: dict[str, int] = {}
        self.repeats = 0
        self.lock = threading.Lock()

    @classmethod
    def load(cls, path) -> "Tape":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.strip()]
        return cls(lines[0]["meta"], {e["key"]: e for e in lines[1:]}, str(path))

    def save(self, path) -> None:
        lines = [json.dumps({"meta": self.meta}, sort_keys=True)]
        lines += [json.dumps(self.entries[k], sort_keys=True) for k in sorted(self.entries)]
        with open(path, "wb") as raw, gzip.GzipFile("", "wb", 9, raw, mtime=0) as f:
            f.write(("\n".join(lines) + "\n").encode())

    def add(self, k: str, method: str, path: str, status: int, doc) -> None:
        with self.lock:
            entry = self.entries.setdefault(k, {"key": k, "method": method, "path": path,
                                                "replies": []})
            entry["replies"].append([status, steady(doc)])

    def next(self, k: str):
        """(the reply to the key's next call or None, the calls of the key so far, the replies
        recorded for it): None when the tape never saw the request or its replies ran out."""
        with self.lock:
            entry = self.entries.get(k)
            if entry is None:
                return None, 1, 0
            n = self.served[k] = self.served.get(k, 0) + 1
            replies = entry["replies"]
            self.repeats += n > len(replies)
            return (replies[n - 1] if n <= len(replies) else None), n, len(replies)


class RecordingEngine(Engine):
    """Engine.call forwarded to vLLM, each exchange added to `tape`; a call that raised (vLLM
    down, a timeout) is kept in `failures`: the recording is then not to be trusted."""

    def __init__(self, *args, tape: Tape, **kwargs):
        super().__init__(*args, **kwargs)
        self.tape, self.failures = tape, []

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        k = key(method, path, body)  # the body as it is sent, whatever its caller does next
        try:
            status, doc = super().call(method, path, body)
        except Exception as e:
            self.failures.append(f"{method} {path}: {type(e).__name__}: {e}")
            raise
        self.tape.add(k, method, path, status, doc)
        return status, doc


class ReplayEngine(Engine):
    """Engine.call answered from `tape`; vLLM is never asked (waiting() says it is up). With
    `log` (a list), each call served is appended as (method, path, body, status, doc)."""

    def __init__(self, *args, tape: Tape, log: list | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.tape, self.log, self.misses = tape, log, []

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        k = key(method, path, body)
        reply, n, recorded = self.tape.next(k)
        if reply is None:
            self.misses.append((method, path, k))
            sent = (f"sends it {n} times, the recording {recorded}" if recorded else
                    "sends a request it did not send when the tape was recorded")
            raise ReplayMiss(f"the tape {self.tape.path or '(in memory)'} has no reply for "
                             f"{method} {path} (key {k}): the shim {sent}; re-record: "
                             f"{RECORD_COMMAND}")
        status, doc = reply[0], copy.deepcopy(reply[1])  # callers may change what they get
        if self.log is not None:
            self.log.append((method, path, body, status, doc))
        return status, doc

    def waiting(self) -> str | None:
        return None


def recording(tape: Tape):
    """Service's `engine` argument: a RecordingEngine adding to `tape`."""
    return partial(RecordingEngine, tape=tape)


def replaying(tape: Tape, log: list | None = None):
    """Service's `engine` argument: a ReplayEngine answering from `tape`."""
    return partial(ReplayEngine, tape=tape, log=log)


def tape_path(folder: Path, profile: str) -> Path:
    return folder / f"{profile}.tape.jsonl.gz"


def answers_path(folder: Path, profile: str) -> Path:
    return folder / f"{profile}.answers.jsonl"
