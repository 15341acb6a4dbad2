#!/usr/bin/env python3
"""Parity corpus: record a running shim's answers to a fixed corpus, and compare two recordings.

    python3 bench/parity/corpus.py record --shim http://127.0.0.1:8795 --out old.jsonl
    python3 bench/parity/corpus.py record --shim URL --out new.jsonl
    python3 bench/parity/corpus.py compare old.jsonl new.jsonl     # exit 1 if any differ
    python3 bench/parity/corpus.py list [--vision]                 # the corpus, one line each

The acceptance test for a refactor of the decision core: old and new code on one vLLM answer
the corpus byte for byte alike. Standard library only; requests are sent one at a time, in the
corpus order, each on a fresh connection (nothing of one request's connection reaches the next).

Text corpus (cases.py, error_cases.py): for the embedded SmolLM2 profile, started as
    ONEPASS_PORT=8795 ONEPASS_VLLM_PORT=8796 \\
        VLLM_CPU_OMP_THREADS_BIND=nobind bash serve.sh
Vision section (vision_cases.py, `record --vision`, recorded after the text corpus): for the
tiny random-weight Idefics3 profile the live tests use (conftest.py's vision_stack fixture runs
serve.sh with ONEPASS_PROFILE=idefics3-tiny; serve.sh builds its model under
~/.cache/onepass/models/idefics3-tiny on first use):
    ONEPASS_PROFILE=idefics3-tiny ONEPASS_PORT=8795 \\
        ONEPASS_VLLM_PORT=8796 VLLM_CPU_OMP_THREADS_BIND=nobind bash serve.sh
(the text corpus then records that profile's own answers and refusals; compare recordings of
one profile only).

Each output line: name, route, status, a few contract headers, the body as parsed JSON with
every number kept as the text the server wrote (never re-rounded through a float), keys sorted,
and bytes_sha256: the hash of the body re-serialised in the server's own key order and
separators, which equals the hash of the raw bytes whenever bytes_roundtrip is true (it is for
every body json.dumps writes), so key order and formatting are compared too; request_sha256
pins the request sent (`list` prints the whole corpus's hash).
"""
from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cases import main_cases  # noqa: E402
from error_cases import error_cases  # noqa: E402

# Fields that differ between two identical requests to one server, replaced by MASK. Found by
# recording the corpus three times (twice on one shim, once on a second shim process, one vLLM)
# and diffing: this is the only body field that moved. Request ids live in headers only.
# A path's "*" matches any key or list index.
MASKED = (
    # /v1/decisions' usage: vLLM's count of prompt tokens served from its prefix cache. It
    # depends on what earlier requests (warm-up, other clients, the last recording) left in
    # the cache, not on this request: a first recording after start-up got 96 where the second
    # got 192 for dec_readme. onepass passes it through; answers do not depend on it.
    ("usage", "input_tokens_details", "cached_tokens"),
)
MASK = "<masked>"
# Response headers that are part of the contract. Left out on purpose: x-typesafe-request-id
# and x-request-id (a fresh uuid per request), Date (the clock), Server and Content-Length
# (bytes_sha256 covers the body's length).
HEADERS = ("content-type", "retry-after-ms", "retry-after", "allow", "connection")


class Num(str):
    """A JSON number's text exactly as received (parse_float/parse_int), dumped unquoted."""


def corpus(vision: bool = False) -> list:
    cases = main_cases() + error_cases()
    if vision:
        from vision_cases import vision_cases
        cases += vision_cases()
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), "case names must be unique"
    return cases


def loads(text: str):
    return json.loads(text, parse_float=Num, parse_int=Num)


def dump(value, sort: bool = True, ascii_: bool = True) -> str:
    """json.dumps' default layout (", " and ": "), numbers as their received text."""
    if isinstance(value, Num):
        return str.__str__(value)
    if isinstance(value, dict):
        items = sorted(value.items()) if sort else value.items()
        return "{" + ", ".join(json.dumps(k, ensure_ascii=ascii_) + ": " + dump(v, sort, ascii_)
                               for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dump(v, sort, ascii_) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_)


def mask(value, path=()):
    """(value with MASKED paths replaced, the paths masked)."""
    done = []

    def walk(v, at):
        if any(len(p) == len(at) and all(a == "*" or a == b for a, b in zip(p, at))
               for p in MASKED):
            done.append(".".join(map(str, at)))
            return MASK
        if isinstance(v, dict):
            return {k: walk(x, at + (k,)) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, at + (i,)) for i, x in enumerate(v)]
        return v
    return walk(value, path), done


def post(url: str, c, timeout: float):
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        conn.request("POST", c.route, body=c.body, headers=c.headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def request_sha(c) -> str:
    return hashlib.sha256(c.route.encode() + dump(c.headers).encode() + c.body).hexdigest()


def corpus_sha(cases) -> str:
    """The whole corpus's hash: its requests, in order."""
    return hashlib.sha256("".join(request_sha(c) for c in cases).encode()).hexdigest()


def entry(c, status: int, headers: dict, raw: bytes) -> dict:
    line = {"name": c.name, "route": c.route, "status": status,
            "request_sha256": request_sha(c),  # the corpus itself must not drift between runs
            "headers": {h: headers[h] for h in HEADERS if h in headers}}
    try:
        parsed = loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):  # not JSON: the bytes are the answer
        line.update(body_text=raw.decode("utf-8", "replace"),
                    bytes_sha256=hashlib.sha256(raw).hexdigest(), bytes_roundtrip=True)
        return line
    body, masked = mask(parsed)
    line.update(body=body, masked=masked,
                bytes_roundtrip=dump(parsed, sort=False, ascii_=False).encode() == raw,
                bytes_sha256=hashlib.sha256(
                    dump(body, sort=False, ascii_=False).encode()).hexdigest())
    return line


def record(args) -> int:
    cases = corpus(args.vision)
    if args.only:
        cases = [c for c in cases if c.name in set(args.only.split(","))]
    with open(args.out, "w", encoding="utf-8") as out:
        for i, c in enumerate(cases, 1):
            started = time.monotonic()
            try:
                status, headers, raw = post(args.shim, c, args.timeout)
                line = entry(c, status, headers, raw)
            except OSError as e:  # a dropped connection is an outcome to compare too
                line = {"name": c.name, "route": c.route, "status": None,
                        "request_sha256": request_sha(c), "error": type(e).__name__}
            out.write(dump(line) + "\n")
            out.flush()
            print(f"[{i}/{len(cases)}] {c.name}: {line['status']} "
                  f"({time.monotonic() - started:.1f} s)", file=sys.stderr)
    return 0


def first_difference(a, b, path="") -> str | None:
    """The first path (keys in sorted order) where a and b differ, with both values."""
    if type(a) is not type(b):
        return f"{path or '.'}: {short(a)} != {short(b)}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: {'missing' if k not in a else 'present'} != " \
                       f"{'missing' if k not in b else 'present'}"
            found = first_difference(a[k], b[k], f"{path}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None if len(a) == len(b) else f"{path}: length {len(a)} != {len(b)}"
    return None if a == b else f"{path or '.'}: {short(a)} != {short(b)}"


def short(v, limit: int = 120) -> str:
    text = dump(v) if not isinstance(v, str) or isinstance(v, Num) else json.dumps(v)
    return text if len(text) <= limit else text[:limit] + "..."


def read(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return {d["name"]: d for d in map(loads, filter(str.strip, f))}


def judge(a: dict, b: dict, a_name: str = "a", b_name: str = "b") -> list:
    """(name, None when the two recordings agree, else the first difference) for every name,
    a's order first (bench/parity/record.py and the replay tests judge with it too)."""
    out = []
    for name in list(a) + [n for n in b if n not in a]:
        if name not in a or name not in b:
            out.append((name, f"only in {a_name if name in a else b_name}"))
            continue
        x, y = dict(a[name]), dict(b[name])
        sha_x, sha_y = x.pop("bytes_sha256", None), y.pop("bytes_sha256", None)
        found = first_difference(x, y)
        if found is None and sha_x != sha_y:
            found = "bytes_sha256: same values, different key order or formatting"
        out.append((name, found))
    return out


def compare(args) -> int:
    verdicts = judge(read(args.a), read(args.b), args.a, args.b)
    for name, found in verdicts:
        print(f"same      {name}" if found is None else f"DIFFERENT {name}: {found}")
    same = sum(found is None for _, found in verdicts)
    print(f"{same} of {len(verdicts)} identical")
    return 0 if same == len(verdicts) else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="post every corpus request, write one JSON line each")
    r.add_argument("--shim", required=True, help="the shim's base URL, http://host:port")
    r.add_argument("--out", required=True)
    r.add_argument("--vision", action="store_true", help="add the vision profile's section")
    r.add_argument("--only", default="", help="comma-separated case names (debugging)")
    r.add_argument("--timeout", type=float, default=900.0)
    c = sub.add_parser("compare", help="per request same/different; exit 1 if any differ")
    c.add_argument("a")
    c.add_argument("b")
    ls = sub.add_parser("list", help="the corpus: name, route, what it covers")
    ls.add_argument("--vision", action="store_true")
    args = p.parse_args(argv)
    if args.cmd == "record":
        return record(args)
    if args.cmd == "compare":
        return compare(args)
    cases = corpus(args.vision)
    for case in cases:
        print(f"{case.name:32} {case.route:15} {case.covers}")
    print(f"{len(cases)} requests, corpus sha256 {corpus_sha(cases)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
