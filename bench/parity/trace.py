#!/usr/bin/env python3
"""Trace one corpus request through a checkout's decision path and count where it goes.

    python3 bench/parity/trace.py --root OLD --vllm http://127.0.0.1:8796 [--show]
    python3 bench/parity/trace.py --root NEW --vllm URL --case s1_readme --show
    python3 bench/parity/trace.py --root NEW --replay tests/fixtures/replay/P.tape.jsonl.gz

Imports onepass from --root (first on sys.path), builds the Service as shim.py does (config.load
with --config ROOT/serve_config.json and --vllm; nothing from ONEPASS_* in the environment),
runs its warm-up synchronously (the start-up guard fills in the engine facts: labels, context
length, two-way, structured outputs; then every question type once), then sends ONE corpus
request (bodies from cases.py, not sent over HTTP) into the decision entry under
sys.setprofile: `service.pipeline.decide(adapter, raw, headers)`, or `service.handle(adapter,
raw, headers)` in a checkout from before the ten steps moved into Pipeline.decide.

--replay TAPE instead of --vllm: the engine answers from a tape (bench/parity/record.sh wrote
it; tests/support/replay_engine.py, loaded from this checkout, over ROOT's Engine), with the
tape's settings (its profile among them): no vLLM needed, and ROOT's Service must take an
`engine`. The engine's worker threads are not counted either way; a call on the request's own
thread (the first read of a request with images) stops in fewer modules than over HTTP.

What is counted: at every Python call and return on the request's thread (the thread that
calls the entry; sys.setprofile sees only it, so the engine's worker threads that talk to vLLM
are not counted), the innermost frame whose code file is under ROOT/onepass/ is where control
is; its module is noted. Consecutive notes of one module collapse into one "stop". Reported:
the stops, the distinct modules, and the returns: stops in a module that already had a stop
earlier but not just before (stops - distinct modules). --show prints the sequence.

--passing counts only the calls that pass the request on: a call is followed when one of its
arguments is the request in some form (the body as received, the body as parsed: an object with
`questions`, or an object of the request's own types: Request, Decision, Record (Split before
it was renamed), Outcome), and control is where the innermost such call is. Helper calls that
take a part of it (a question, a kind's name, a label list, a decision.Page: the state, images,
questions, mode and techniques a prompt shows; a decision.Effort) are not stops. Both counts
are reported in docs/measured.md.
"""
from __future__ import annotations

import argparse
import functools
import gzip
import importlib
import importlib.util
import inspect
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


class Fields:
    """Request headers by lower-case name, the interface the edge hands the decision entry
    (onepass.edge.framing.Fields); defined here so that its look-ups are not counted."""

    def __init__(self, headers: dict):
        self.values = {k.lower(): [v] for k, v in headers.items()}

    def get(self, name, default=None):
        found = self.values.get(name.lower())
        return ", ".join(found) if found else default

    def all(self, name):
        return self.values.get(name.lower(), [])

    def tokens(self, name):
        return {t.strip().lower() for t in (self.get(name) or "").split(",") if t.strip()}


def load_service(root: Path, vllm: str, profile: str, tape=None):
    sys.path.insert(0, str(root))
    config = importlib.import_module("onepass.config")
    server = importlib.import_module("onepass.server")
    argv = ["--config", str(root / "serve_config.json"), "--vllm", vllm, "--port", "0"]
    if profile:
        argv += ["--profile", profile]
    engine = {}
    if tape is not None:  # the tape's settings, the vLLM URL one that nothing answers
        if "engine" not in inspect.signature(server.Service).parameters:
            raise SystemExit(f"trace: --replay needs a checkout whose Service takes an engine "
                             f"({root}/onepass/server.py does not)")
        argv = [str(root / a) if a == "serve_config.json" else a for a in tape.meta["argv"]]
        argv += ["--vllm", "http://127.0.0.1:1"]
        engine = {"engine": replay_engine().replaying(tape)}
    # vLLM's key only (serve.sh's, when it was started with ONEPASS_VLLM_KEY): no other setting
    settings = config.load(argv, environ={k: v for k, v in os.environ.items()
                                          if k == "ONEPASS_VLLM_KEY"})
    service = server.Service(settings, root, **engine)
    service.warm_up(poll_s=1.0)  # the guard and every question type, as shim.py's thread does
    phase = getattr(service, "phase", None)
    if phase not in (None, getattr(server, "READY", "ready")):
        raise SystemExit(f"trace: the service did not get ready: {phase} "
                         f"{getattr(service, 'reason', '')}")
    return service, server


def tape_meta(path: str) -> dict:
    """A tape's first line (tests/support/replay_engine.py writes it), read without onepass."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.loads(f.readline())["meta"]


def only_root(root: Path) -> None:
    """The onepass package imported from ROOT from now on: bodies.py imported this checkout's
    (its PNG writer), which a --root elsewhere would otherwise trace (no stop under ROOT)."""
    for name in [m for m in sys.modules if m == "onepass" or m.startswith("onepass.")]:
        del sys.modules[name]
    mine = str(HERE.parents[1])
    while mine in sys.path:
        sys.path.remove(mine)
    sys.path.insert(0, str(root))


@functools.lru_cache(maxsize=None)
def replay_engine():
    """This checkout's tests/support/replay_engine.py, loaded by its path: its Engine is then
    the traced ROOT's (onepass resolves there), whatever ROOT's own tests/ hold."""
    path = HERE.parents[1] / "tests" / "support" / "replay_engine.py"
    spec = importlib.util.spec_from_file_location("parity_replay_engine", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Record: the per-request record every step takes and returns (Split before the rename)
REQUEST_TYPES = {"Request", "Decision", "Split", "Record", "Outcome"}


class Tracer:
    def __init__(self, root: Path, passing: bool = False, body=None):
        self.prefix = str((root / "onepass").resolve()) + "/"
        self.root = str(root.resolve()) + "/"
        self.stops: list[str] = []
        self.events = 0
        self._modules: dict[str, str | None] = {}
        self.passing, self.body = passing, body
        self.followed: dict[int, object] = {}  # id -> frame (kept alive: ids stay unique)

    def carries(self, frame) -> bool:
        """The call was handed the request in some form (see --passing)."""
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        for name in names:
            value = frame.f_locals.get(name)
            if (value is self.body or type(value).__name__ in REQUEST_TYPES
                    or (isinstance(value, dict) and "questions" in value)):
                return True
        return False

    def module(self, filename: str) -> str | None:
        if filename not in self._modules:
            path = str(Path(filename).resolve()) if filename.startswith("/") else filename
            self._modules[filename] = (path[len(self.root):-3].replace("/", ".")
                                       .removesuffix(".__init__")
                                       if path.startswith(self.prefix) and path.endswith(".py")
                                       else None)
        return self._modules[filename]

    def __call__(self, frame, event, arg):
        if event not in ("call", "return"):
            return  # c_call and friends: C code never moves control between onepass modules
        self.events += 1
        if self.passing and event == "call" and self.module(frame.f_code.co_filename) \
                and (not self.followed or self.carries(frame)):
            self.followed[id(frame)] = frame  # the entry call, then the calls that pass it on
        f = frame if event == "call" else frame.f_back  # return: control goes to the caller
        while f is not None:
            name = self.module(f.f_code.co_filename)
            if name is not None and (not self.passing or id(f) in self.followed):
                if not self.stops or self.stops[-1] != name:
                    self.stops.append(name)
                return
            f = f.f_back


def trace(service, server, case, passing: bool = False) -> tuple[Tracer, object]:
    adapters = getattr(server, "ADAPTERS")
    adapter = adapters[case.route]
    fields = Fields(case.headers)  # ours, outside onepass/: header look-ups are no stops
    tracer = Tracer(Path(service.root), passing, case.body)
    if hasattr(service, "handle"):  # before the ten steps moved into Pipeline.decide
        entry, args = service.handle, (adapter, case.body, fields)
    else:
        entry, args = service.pipeline.decide, (adapter, case.body, fields)
    result = None
    sys.setprofile(tracer)
    try:
        result = entry(*args)
    except Exception as e:  # an error case: the refusal is the outcome
        result = e
    finally:
        sys.setprofile(None)
    return tracer, result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", required=True, help="the checkout whose onepass/ is traced")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--vllm", help="a live vLLM serving the profile's model")
    source.add_argument("--replay", metavar="TAPE", help="answer from a tape instead "
                        "(tests/fixtures/replay/*.tape.jsonl.gz; its profile)")
    p.add_argument("--case", default="", help="a corpus case name (default: the mixed "
                   "multi-kind System One request)")
    p.add_argument("--profile", default="", help="serve_config.json profile (default: its own)")
    p.add_argument("--vision", action="store_true", help="cases from the vision section too")
    p.add_argument("--show", action="store_true", help="print the module sequence")
    p.add_argument("--passing", action="store_true", help="only the calls that pass the "
                   "request on (see the module's docstring)")
    args = p.parse_args(argv)
    root = Path(args.root).resolve()
    sys.path.insert(0, str(HERE))
    import corpus  # the corpus module of this directory; bodies are built from constants
    from cases import DEFAULT_TRACE
    name = args.case or DEFAULT_TRACE
    meta = tape_meta(args.replay) if args.replay else {}
    if args.profile and meta and args.profile != meta["profile"]:
        raise SystemExit(f"trace: the tape is {meta['profile']}'s, not {args.profile}'s")
    found = [c for c in corpus.corpus(args.vision or meta.get("vision", False))
             if c.name == name]
    if not found:
        raise SystemExit(f"trace: no corpus case {name!r} (corpus.py list)")
    sys.path.remove(str(HERE))  # the checkout's modules only from here on
    only_root(root)
    tape = replay_engine().Tape.load(args.replay) if args.replay else None  # ROOT's Engine
    service, server = load_service(root, args.vllm, args.profile, tape)
    tracer, result = trace(service, server, found[0], args.passing)
    service.engine.close()
    stops, distinct = len(tracer.stops), len(set(tracer.stops))
    outcome = type(result).__name__ if isinstance(result, Exception) else "answered"
    entry = "service.handle" if hasattr(service, "handle") else "service.pipeline.decide"
    print(f"root {root}\ncase {name} ({found[0].route}) via {entry}: {outcome}"
          f"{' (calls that pass the request on)' if args.passing else ''}")
    print(f"stops {stops}\ndistinct modules {distinct}\nreturns {stops - distinct}")
    print(f"profiled events {tracer.events}")
    if tape is not None:
        misses = service.engine.misses
        print(f"replayed from {args.replay}: {len(misses)} misses")
        if misses:
            return 1
    if args.show:
        for i, m in enumerate(tracer.stops, 1):
            seen = m in tracer.stops[:i - 1]
            print(f"{i:4} {m}{'   <- return' if seen else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
