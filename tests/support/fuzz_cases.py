"""Hostile requests for test_security.py, standard library only: the framing corpus (each case
must be one 4xx and a closed connection), and the deterministic cases of the fuzz run.

Each case starts from a valid body of one of the two APIs (every field present) and breaks it
(or is one of issue 25's classes: a hostile kwargs scalar, thousands of validation problems, a
request over the work budget, a flood of empty data URLs):
a wrong JSON type at any field, deletions, lone surrogates, nesting 400 to 1,000 deep, numbers
beyond a float, odd values where the answer echoes them (model, question ids, names, choice
values, levels); or it is random bytes, a compression bomb, a truncated or padded compressed
body, or a body under the wrong Content-Type. Same seed, same cases.
"""
import copy
import gzip
import json
import random
import zlib

from tests.support.edge_client import request
from tests.support.systemone_bodies import NOUL_Q, req

TICKET = {"ticket": "I was charged twice for order 4471.", "lines": [1, 2.5, True, None]}
SYSTEMONE = {
    "model": "jev-latest", "state": TICKET, "attention_mode": "causal",
    "questions": {
        "refund": {"type": "noul", "instructions": "Refund?",
                   "criteria": {"true": "asks for money", "false": None}},
        "team": {"type": "choice", "instructions": ["Team?", {"k": 1}],
                 "criteria": {"billing": "Payments", "tech": None, "sales": {"x": 1}}},
        "anger": {"type": "score", "instructions": "Angry?",
                  "criteria": ["calm", "annoyed", "furious"]}},
    "kwargs": {"attention_mode": "causal", "layout": {"repeat": 1, "orders": 2},
               "calibration": {"temperature": {"choice": 2.0}, "noul_floor": 0.8}}}
DECISIONS = {
    "model": "jev-latest", "attention_mode": "one-way",
    "input": [{"role": "developer", "content": "Support triage."},
              {"role": "user", "content": [{"type": "input_text", "text": "Charged twice."},
                                           {"type": "input_json", "data": {"order": 4471}}]},
              {"role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
              {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
              {"type": "function_call_output", "call_id": "c1", "output": "two payments"}],
    "questions": [{"type": "predicate", "name": "refund", "instructions": "Refund?"},
                  {"type": "choice", "name": "team",
                   "instructions": [{"type": "input_text", "text": "Team?"}],
                   "choices": [{"value": "billing", "description": "Payments"},
                               {"value": True}, {"value": "true"}]},
                  {"type": "score", "name": "anger", "instructions": "Angry?",
                   "levels": [{"label": "calm"}, {"label": "furious", "description": "very"}]}],
    "kwargs": {"layout": {"orders": 1}, "calibration": {"reread_below": 0.5}}}
# With images (a text-only profile refuses them): the image fields' own checks run.
IMAGES = {"images": ["data:image/png;base64,iVBORw0KGgo=", {"type": "image_url",
                                                         "image_url": {"url": "https://x/y"}}],
          "assets": {"<img>": {"type": "image", "format": "png", "data_base64": "AAAA"}}}
ROUTES = {"/v1/systemone": SYSTEMONE, "/systemone": SYSTEMONE, "/v1/decisions": DECISIONS,
          "/decisions": DECISIONS}
RAW = ["1e400", "-1e400", "1" + "0" * 400, "-" + "9" * 4000, "1E+99999", "0.1e-99999"]
BOMBS = {"gzip": gzip.compress(b"\0" * (8 << 20), 9),  # 8 MiB from 8 KiB
         "deflate": zlib.compress(b"[" * (6 << 20), 9)}
ODD = ["", "\x00", "\x1b[31mred", "\u202egnp.exe", "a\u200bb", "🎯" * 50, "\ud800", "x\udfffy",
       "\\u0000", '"}', "</script>", "\r\nX-Injected: 1", "x" * 20000, "名前", "\ufeff"]


def wrong_values(rng: random.Random) -> list:
    return [None, True, False, 0, -1, 7, 1.5, -0.0, 1e308, "", "x", [], {}, [1, "a"],
            {"type": []}, {"type": {}}, {"a": {"b": None}}, rng.choice(ODD),
            [rng.choice(ODD)], {rng.choice(ODD): rng.choice(ODD)}]


def paths(node, prefix=()):
    yield prefix
    if len(prefix) > 12:
        return
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for key, child in items:
        yield from paths(child, prefix + (key,))


def nested(rng: random.Random, depth: int) -> str:
    """JSON text nested `depth` deep (as text: the encoder would refuse to write it)."""
    opens = "".join(rng.choice(['[', '{"a":']) for _ in range(depth))
    return opens + rng.choice(['[]', '{}', '"leaf"', '0']) + "".join(
        "]" if o == "[" else "}" for o in reversed(opens.replace('{"a":', "{")))


def mutate(rng: random.Random, body, raws: list):
    """One break at a random path (never the root)."""
    path = rng.choice(list(paths(body))[1:])
    *parent_path, key = path
    parent = body
    for step in parent_path:
        parent = parent[step]
    op = rng.randrange(7)
    if op == 0:
        parent[key] = rng.choice(wrong_values(rng))
    elif op == 1:
        del parent[key]
    elif op == 2 and isinstance(parent, dict):  # an odd key where ids and names are echoed
        parent[rng.choice(ODD)] = parent.pop(key)
    elif op in (3, 4):  # deep nesting, or a number beyond any float: spliced in after dumps
        raws.append(nested(rng, rng.randint(400, 1000)) if op == 3 else rng.choice(RAW))
        parent[key] = f"__raw{len(raws) - 1}__"
    else:
        parent[key] = rng.choice(ODD)


def json_case(rng: random.Random) -> tuple[str, bytes, dict]:
    path = rng.choice(list(ROUTES))
    body, raws = copy.deepcopy(ROUTES[path]), []
    if rng.random() < 0.1:
        body.update(copy.deepcopy(IMAGES))
    for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):  # 0: a valid body, through to the engine
        if isinstance(body, dict) and len(body) > 0:
            mutate(rng, body, raws)
    text = json.dumps(body)  # ensure_ascii: a lone surrogate travels as its \\u escape
    for i, raw in enumerate(raws):
        text = text.replace(f'"__raw{i}__"', raw)
    data, headers = text.encode(), {"Content-Type": "application/json"}
    if rng.random() < 0.2:
        data, headers = gzip.compress(data), {**headers, "Content-Encoding": "gzip"}
    return path, data, headers


def body_case(rng: random.Random) -> tuple[str, bytes, dict]:
    path = rng.choice(list(ROUTES))
    valid = json.dumps(ROUTES[path]).encode()
    kind = rng.randrange(9)
    if kind == 0:
        return path, rng.randbytes(rng.randint(0, 3000)), {}
    if kind == 1:
        return path, valid[:rng.randint(0, len(valid) - 1)], {}
    if kind == 2:  # inflates past the decoded limit
        return path, BOMBS["gzip"], {"Content-Encoding": "gzip"}
    if kind == 3:
        return path, BOMBS["deflate"], {"Content-Encoding": "deflate"}
    if kind == 4:  # the checksum trailer cut off, or bytes after the end
        packed = gzip.compress(valid)
        return path, packed[:-rng.randint(1, 8)] if rng.random() < 0.5 else packed + b"junk", \
            {"Content-Encoding": "gzip"}
    if kind == 5:
        return path, gzip.compress(gzip.compress(valid)), {"Content-Encoding": "gzip, gzip"}
    if kind == 6:
        return path, rng.randbytes(200), {"Content-Encoding": rng.choice(["zstd", "br", "x"])}
    if kind == 7:
        return path, valid, {"Content-Type": rng.choice(["text/plain", "multipart/form-data",
                                                         "multipart/form-data; boundary=b"])}
    return rng.choice(["/", "/v1", "/health", "/v1/models"]), valid, {}


def issue25_case(rng: random.Random) -> tuple[str, bytes, dict]:
    """Each class of issue 25: a hostile kwargs scalar or key, hundreds to thousands of
    validation problems, a request over the work budget, a flood of empty data URLs."""
    kind = rng.randrange(4)
    if kind == 0:
        path, data = rng.choice(_kwargs_cases())
        return path, data, {}
    if kind == 1:
        n = rng.randint(200, 3000)
        if rng.random() < 0.5:
            return "/v1/decisions", json.dumps({**DECISIONS, "input": [1] * n}).encode(), {}
        ask = {"type": "choice", "criteria": {f"o{i}": i for i in range(n)}}
        return "/v1/systemone", json.dumps({**SYSTEMONE, "questions": {"q": ask}}).encode(), {}
    if kind == 2:  # 300 two-option choices read in 3 orders (900 reads), or 2 + thoughts
        orders, mode = rng.choice([(3, "off"), (2, "on"), (2, "auto")])
        questions = {f"q{i}": {"type": "choice", "criteria": {"a": None, "b": None}}
                     for i in range(300)}
        kwargs = {"layout": {"orders": orders, "orders_as_reads": True},
                  "reasoning": {"mode": mode}}
        return "/v1/systemone", json.dumps({**SYSTEMONE, "questions": questions,
                                            "kwargs": kwargs}).encode(), {}
    flood = " ".join(["data:image/png;base64,"] * rng.randint(5, 20_000))
    return "/v1/systemone", json.dumps({**SYSTEMONE, "state": flood}).encode(), {}


_KWARGS_CASES = []


def _kwargs_cases() -> list:
    if not _KWARGS_CASES:
        _KWARGS_CASES.extend(kwargs_cases())
    return _KWARGS_CASES


def cases(seed: int, n: int):
    """n raw requests (bytes), deterministic for the seed."""
    rng = random.Random(seed)
    for _ in range(n):
        pick = rng.random()
        path, data, headers = (json_case if pick < 0.8 else body_case if pick < 0.95
                               else issue25_case)(rng)
        method = "POST" if rng.random() < 0.97 else rng.choice(["GET", "PUT", "TRACE", "DELETE"])
        yield request(method, path, data, headers)


# -- every kwargs path with hostile scalars -----------------------------------------------
# Each path of a kwargs with every field the shim reads gets each hostile value, and each
# object key on the way is renamed to a hostile key: a 4xx or a 200, never a 5xx.
KWARGS = {"attention_mode": "causal",
          "layout": {"guard_line": True, "question_first": False, "repeat": 1, "orders": 1,
                     "orders_as_reads": False, "shrink": 0.0, "compact_json": True,
                     "state_selection": "bm25"},
          "calibration": {"temperature": {"noul": 1.0, "choice": 1.0, "score": 1.0,
                                          "image": 1.0},
                          "noul_floor": 0, "reread_below": 0,
                          "label_prior": {"noul": {"2": [0.1, 0]}, "choice": {"2": [0, 0.1]}},
                          "number_confidence": {"a": 1, "b": 0}},
          "reasoning": {"mode": "off", "budget_ms": 1000, "trace": False},
          "box": {"mode": "generate"}}
# JSON text: non-ASCII digits (superscript, Arabic-Indic, fullwidth), integers of 400 and
# 4,301 digits (past int()'s limit), beyond a float, NaN and Infinity, nested and odd types
HOSTILE = ['"\\u00b2"', '"\\u0662"', '"\\uff12"', '"' + "9" * 4301 + '"', "1" + "0" * 400,
           "9" * 4301, "-1e308", "1e400", "NaN", "-Infinity", "[[[[]]]]",
           '{"a": {"b": [1, {}]}}', "true", "null", '""', "-0", "[1e308, -1e308]"]
HOSTILE_KEYS = ["\u00b2", "\u0662", "\uff12", "9" * 4301, "", "\ud800x", "__class__"]


def kwargs_cases() -> list[tuple[str, bytes]]:
    """(route, body) for every kwargs path x hostile value and key, on both APIs in turn."""
    out, n = [], 0
    for path in list(paths(KWARGS))[1:]:
        for value in HOSTILE:
            out.append(_kwargs_body(n, path, lambda parent, key: parent.__setitem__(
                key, "__hostile__"), value))
            n += 1
        for key in HOSTILE_KEYS if isinstance(path[-1], str) else ():
            out.append(_kwargs_body(n, path, lambda parent, k, new=key: parent.__setitem__(
                new, parent.pop(k)), None))
            n += 1
    return out


def _kwargs_body(n: int, path: tuple, change, raw) -> tuple[str, bytes]:
    kwargs = copy.deepcopy(KWARGS)
    *parent_path, key = path
    parent = kwargs
    for step in parent_path:
        parent = parent[step]
    change(parent, key)
    route = ("/v1/systemone", "/v1/decisions")[n % 2]
    body = {**ROUTES[route], "kwargs": kwargs}
    text = json.dumps(body)
    if raw is not None:
        text = text.replace('"__hostile__"', raw)
    return route, text.encode()


# -- the framing corpus ----------------------------------------------------------------
def post(body: bytes, *fields: str) -> bytes:
    """A POST head with the given raw header lines (framing under test), then body bytes."""
    return (b"POST /v1/systemone HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer k-123\r\n"
            + "".join(f + "\r\n" for f in fields).encode("latin-1") + b"\r\n" + body)


PIPELINED = b"GET /v1/models HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer k-123\r\n\r\n"
VALID = json.dumps(req({"q": NOUL_Q})).encode()
# RFC 9112, strictly: each is one 400 (431/414 for size) and the connection closes.
CORPUS = {
    "negative chunk size": post(b"-1\r\n" + b"x" * 5000, "Transfer-Encoding: chunked"),
    "chunk size -2": post(b"-2\r\nxx\r\n0\r\n\r\n", "Transfer-Encoding: chunked"),
    "chunk size +5": post(b"+5\r\nhello\r\n0\r\n\r\n", "Transfer-Encoding: chunked"),
    "chunk size 1_0": post(b"1_0\r\n" + b"x" * 16 + b"\r\n0\r\n\r\n", "Transfer-Encoding: chunked"),
    "chunk size 0x5": post(b"0x5\r\nhello\r\n0\r\n\r\n", "Transfer-Encoding: chunked"),
    "chunk size with a space": post(b" 5\r\nhello\r\n0\r\n\r\n", "Transfer-Encoding: chunked"),
    "chunk size of 17 digits": post(b"0" * 16 + b"5\r\nhello\r\n0\r\n\r\n",
                                    "Transfer-Encoding: chunked"),
    "chunk without CRLF after": post(b"5\r\nhelloXX0\r\n\r\n", "Transfer-Encoding: chunked"),
    "xchunked": post(b"0\r\n\r\n", "Transfer-Encoding: xchunked"),
    "chunked, identity": post(b"0\r\n\r\n", "Transfer-Encoding: chunked, identity"),
    "identity": post(b"", "Transfer-Encoding: identity"),
    "two Transfer-Encodings": post(b"0\r\n\r\n", "Transfer-Encoding: chunked",
                                   "Transfer-Encoding: chunked"),
    "Transfer-Encoding and Content-Length": post(b"0\r\n\r\n", "Transfer-Encoding: chunked",
                                                 "Content-Length: 5"),
    "space before the colon": post(b"0\r\n\r\n", "Transfer-Encoding : chunked"),
    "folded header": post(b"", "Content-Length: 0", " folded"),
    "two differing lengths": post(b"", "Content-Length: 0", "Content-Length: 60"),
    "two equal lengths": post(b"{}", "Content-Length: 2", "Content-Length: 2"),
    "a list of lengths": post(b"{}", "Content-Length: 2, 2"),
    "length +2": post(b"{}", "Content-Length: +2"),
    "length 1_0": post(b"x" * 10, "Content-Length: 1_0"),
    "length -1": post(b"", "Content-Length: -1"),
    "length in hex": post(b"{}", "Content-Length: 0x2"),
    "length of 19 digits": post(b"{}", "Content-Length: " + "0" * 18 + "2"),
    "chunked in HTTP/1.0": post(b"0\r\n\r\n", "Transfer-Encoding: chunked").replace(
        b"HTTP/1.1", b"HTTP/1.0"),
    "bare LF": b"GET /health HTTP/1.1\nHost: x\n\n",
    "bare CR in a header": post(b"", "X-A: 1\rContent-Length: 0"),
    "NUL in a header": post(b"", "X-A: a\x00b", "Content-Length: 0"),
    "header without a colon": post(b"", "Content-Length 0"),
    "no Host in HTTP/1.1": b"GET /health HTTP/1.1\r\n\r\n",
    "two Hosts": b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "HTTP/2.0": b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n",
    "HTTP/0.9": b"GET /health\r\n",
    "two spaces": b"GET  /health HTTP/1.1\r\nHost: x\r\n\r\n",
    "control character in the target": b"GET /v1/\x1b[31m HTTP/1.1\r\nHost: x\r\n\r\n",
    "a target that is not a path": b"GET health HTTP/1.1\r\nHost: x\r\n\r\n",
    "request line too long": b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    "header line too long": post(b"", "X-A: " + "a" * 9000),
    "101 headers": post(b"", *(f"X-{i}: v" for i in range(101))),
}
