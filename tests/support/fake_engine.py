"""A stand-in for vLLM's HTTP API, standard library only, for three kinds of test and no other:
getting hostile requests past validation (fuzzing: the shim must then do all its work),
failure injection (an engine that fails with 5xx, drops calls or answers slowly), and start-up
against vLLM configured as serve.sh starts it for a profile and device (`Setup`: the plugin
loaded or not, the V1 or V2 model runner; the plugin's refusals come from its own rules).
Never used to test what an answer says: its log-probs are a hash of the prompt.

It answers what the shim asks (onepass/backend/engine.py, onepass/backend/probes.py): /v1/models
(the profile's served name and context), /tokenizer_info (its added tokens, id -> text as vLLM
0.32 writes them: the contract's specials and `added`; a 404 with `tokenizer_info=False`, as
vLLM started without --enable-tokenizer-info-endpoint), /tokenize (a word-level tokenizer; the
tokenizer contract's probe texts and each added token alone give their ids; chat messages are
rendered with the profile's template, so the start-up guard passes), /v1/completions with
`logprob_token_ids` (over the context: vLLM's 400; a set read, vllm_xargs.set_spans, answers
alike in any order of its spans), and /v1/chat/completions for image reads (a vision profile:
`profile="idefics3-tiny"`). With `key`, every call without `Authorization: Bearer <key>` gets
vLLM's 401 (vLLM checks its /v1 routes only; here every path, so a call the shim sends without
the key fails wherever it goes).
"""
import collections
import hashlib
import json
import math
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import NamedTuple

from onepass import config
from onepass.prompt.layout import wrap_chat
from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "engine"))
from onepass_engine import flags, rules  # noqa: E402  (the plugin's own, without vLLM)


class Setup(NamedTuple):
    """How vLLM was started, as far as the shim can tell: the engine plugin loaded or not, the
    V2 model runner or the V1, and the one-step budget (--max-num-batched-tokens)."""
    plugin: bool
    v2_runner: bool
    budget: int = 8192

PIECE = re.compile(r"\w+|\s+|[^\w\s]")


class Vocabulary:
    def __init__(self, profile, added=None):
        self.profile, self.ids, self.lock = profile, {}, threading.Lock()
        contract = profile.tokenizer_contract
        doc = json.loads((ROOT / contract).read_text()) if contract else {}
        self.fixed = {p["text"]: p["ids"] for p in doc.get("probes", [])}
        self.added = {**doc.get("specials", {}), **(added or {})}  # text -> id
        self.fixed.update({s: [i] for s, i in self.added.items()})

    def tokenize(self, text) -> list[int]:
        if isinstance(text, list):  # a prompt sent as token ids (a set read)
            return text
        if text in self.fixed:
            return self.fixed[text]
        with self.lock:
            return [self.ids.setdefault(piece, 1000 + len(self.ids))
                    for piece in PIECE.findall(text)]

    def chat(self, messages: list) -> str:
        turns = {m["role"]: m["content"] if isinstance(m["content"], str) else
                 "".join(part.get("text", "") for part in m["content"]) for m in messages}
        return wrap_chat(self.profile, turns.get("system", ""), turns.get("user", ""))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK stall
    mode, delay_s, vocab, tokenizer_info = "answer", 0.0, None, True  # set by FakeEngine
    drop, calls = "", None  # a path whose calls are dropped unanswered; calls per path
    configured = None  # a Setup (vLLM as configured); None: set reads as sets, other flags ignored
    key = None  # vLLM's key (VLLM_API_KEY); None: vLLM started without one
    health_open = None  # set: GET /health answers 200; clear: it waits (a hung vLLM)

    def parse_request(self):
        if not super().parse_request():
            return False
        with self.vocab.lock:
            self.calls[self.path] += 1
        if self.drop and self.path.endswith(self.drop):
            self.close_connection = True  # dropped: the connection closes, nothing answered
            return False
        if self.key is not None and self.headers.get("Authorization") != f"Bearer {self.key}":
            self.rfile.read(int(self.headers.get("Content-Length", 0)))  # the connection goes on
            self.reply(401, {"error": "Unauthorized"})  # vLLM's own answer
            return False
        return True

    def do_GET(self):
        if self.path.endswith("/health"):
            self.health_open.wait()
            return self.reply(200, {})
        if self.path.endswith("/v1/models"):
            p = self.vocab.profile
            return self.reply(200, {"data": [{"id": p.served_model_name,
                                              "max_model_len": p.max_model_len}]})
        if self.path.endswith("/tokenizer_info") and self.tokenizer_info:
            return self.reply(200, {"tokenizer_class": "FakeTokenizer", "added_tokens_decoder": {
                str(i): s for s, i in self.vocab.added.items()}})
        self.reply(404, {"error": {"message": "no such route"}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.mode == "5xx":
            return self.reply(500, {"error": {"message": "boom"}})
        if self.path.endswith("/tokenize"):
            text = self.vocab.chat(body["messages"]) if "messages" in body else body["prompt"]
            return self.reply(200, {"tokens": self.vocab.tokenize(text)})
        if self.path.endswith("/v1/completions"):
            return self.completion(body)
        if self.path.endswith("/v1/chat/completions"):  # image reads
            return self.chat(body)
        self.reply(404, {"error": {"message": "no such route"}})

    def completion(self, body: dict) -> None:
        n = len(self.vocab.tokenize(body["prompt"]))
        limit = self.vocab.profile.max_model_len
        if n + body.get("max_tokens", 1) > limit:
            return self.reply(400, {"error": {"message": f"This model's maximum context length "
                                              f"is {limit} tokens; the prompt has {n}"}})
        setup = self.configured
        asked = SimpleNamespace(extra_args=body.get("vllm_xargs") or {})
        if setup is not None and not setup.plugin:
            asked.extra_args = {}  # stock vLLM: the plugin's flags mean nothing
        spans, two_way = flags.requested_spans(asked), flags.requested_two_way(asked)
        if setup is None:
            two_way = False  # the plain stand-in reads two-way flags as one-way
        elif two_way or spans:  # the plugin's own admission rules refuse what they refuse
            refused = (rules.before_processing(two_way, spans, setup.v2_runner,
                                               body.get("min_tokens", 0))
                       or rules.after_processing(two_way, spans, n, setup.budget))
            if refused:
                return self.reply(400, {"error": {"message": refused[0], "param": refused[1],
                                                  "type": "BadRequestError", "code": 400}})
        ids = body.get("logprob_token_ids", ())  # none: the shim's head prefill
        reference = self.reference(body["prompt"]) if two_way else None
        if reference:  # a healthy model read two-way meets the profile's reference answers
            top = {f"token_id:{t}": math.log(p) for t, p in zip(ids, reference)}
        else:
            seed = hashlib.sha256(json.dumps(_read_as(body["prompt"], spans, two_way))
                                  .encode()).digest()
            top = {f"token_id:{t}": -((seed[t % 32] + t) % 700) / 100 - 0.01 for t in ids}
        self.reply(200, {"choices": [{"logprobs": {"top_logprobs": [top]}}],
                         "usage": {"prompt_tokens": n, "prompt_tokens_details":
                                   {"cached_tokens": 0}}})

    def reference(self, prompt) -> list | None:
        """The profile's reference answer for a two-way probe's read, else None."""
        for probe in self.vocab.profile.two_way_probes:
            if isinstance(prompt, str) and probe["state"] in prompt and \
                    probe["question"] in prompt:
                return probe["reference"]
        return None

    def chat(self, body: dict) -> None:
        text = self.vocab.chat(body["messages"])
        seed = hashlib.sha256(text.encode()).digest()
        top = [{"token": f"token_id:{t}", "logprob": -((seed[t % 32] + t) % 700) / 100 - 0.01}
               for t in body.get("logprob_token_ids", ())]
        self.reply(200, {"choices": [{"logprobs": {"content": [{"top_logprobs": top}]}}],
                         "usage": {"prompt_tokens": len(self.vocab.tokenize(text))}})

    def reply(self, status: int, doc: dict) -> None:
        payload = json.dumps(doc).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the shim gave up waiting (a slow engine): nobody is listening

    def log_message(self, *args):
        pass


def _read_as(prompt, spans, two_way: bool):
    """What a read's answer depends on: its prompt (and its mode, read two-way), or for a set
    read (the engine plugin's `set_spans`) its spans in sorted order, so the start-up guard's
    set probe passes as it does on the plugin: every listing reads alike, and unlike the same
    tokens read plainly."""
    if spans:
        parts = sorted(prompt[a:b] for a, b in spans)
        return ["set", prompt[:spans[0][0]], parts, prompt[spans[-1][1]:]]
    return [prompt, "two-way"] if two_way else prompt


class Listening(ThreadingHTTPServer):
    """A listen backlog like vLLM's (uvicorn: 2048), not socketserver's 5: the shim opens up to
    --engine-connections (32) at once, and an overflowing backlog reset some of them (a 503
    `unreachable` in the fuzz run, 1 request in 10,500, on a loaded machine)."""
    request_queue_size = 2048


class FakeEngine:
    """mode: "answer" (default) or "5xx"; delay_s: each POST waits this long first; port: 0 for
    any free one, or a given one (a vLLM that comes up where the shim already waits);
    tokenizer_info: False answers /tokenizer_info with a 404; added: more added tokens (text ->
    id) beside the contract's specials; drop: a path (its end) whose calls are dropped, the
    connection closed unanswered; setup: vLLM's configuration to answer as (None: set reads
    read as sets, two-way flags ignored); key: the key every call must carry (None: none).
    `calls` counts the calls per path; `health_open` (an Event, set) cleared makes GET /health
    wait until it is set again, as a hung vLLM's would."""

    def __init__(self, mode: str = "answer", delay_s: float = 0.0, profile: str = "",
                 port: int = 0, tokenizer_info: bool = True, added: dict | None = None,
                 drop: str = "", setup: Setup | None = None, key: str | None = None):
        _, prof = config.load_profile(str(ROOT / "serve_config.json"), profile)
        self.calls = collections.Counter()
        self.health_open = threading.Event()
        self.health_open.set()
        handler = type("FakeHandler", (Handler,), {"mode": mode, "delay_s": delay_s,
                                                   "vocab": Vocabulary(prof, added),
                                                   "tokenizer_info": tokenizer_info,
                                                   "drop": drop, "calls": self.calls,
                                                   "configured": setup, "key": key,
                                                   "health_open": self.health_open})
        self.server = Listening(("127.0.0.1", port), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def set_delay(self, delay_s: float) -> None:
        """From now on each POST waits this long (an engine turning slow under way)."""
        self.server.RequestHandlerClass.delay_s = delay_s

    def stop(self) -> None:
        self.health_open.set()  # a held /health probe ends too
        self.server.shutdown()
        self.server.server_close()
