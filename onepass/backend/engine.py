"""The vLLM client: reads, tokenization and model listing over pooled keep-alive connections.

Owns: HTTP to vLLM (/v1/completions; /v1/chat/completions for reads with images, sent as data
URLs in image parts where the user turn has its image slots; /tokenize, /tokenizer_info,
/v1/models), vLLM's key on every call (never logged), timeouts, the connection pool, turning
vLLM failures into EngineUnavailable (503), EngineFailed (502; EngineRefused for vLLM's own 4xx)
or a capacity 422, and counting reads and failures by kind at this boundary (telemetry; the
start-up wait for vLLM to come up is not a failure).
Never: builds prompts or interprets probabilities beyond picking the label log-probs.
In: Reads. Out: ReadResults, in the same order.
"""
from __future__ import annotations

import contextvars
import http.client
import json
import queue
import time
import urllib.parse
from collections import Counter

from .. import inflight, telemetry
from . import fair_pool, refusals, set_read, token_counts, wire
from ..decision_model import TWO_WAY, Read, ReadResult
from ..errors import (EngineFailed, EngineRefused, EngineUnavailable, InvalidRequest, OverBudget,
                      Problem)

MAX_LOGPROB_TOKEN_IDS = 128  # vLLM 0.32's cap on logprob_token_ids per request
GENERATIONS = ("/v1/completions", "/v1/chat/completions")  # the calls vLLM's scheduler queues
IDLE_KEEPALIVE_S = 4.0  # uvicorn (vLLM) closes idle keep-alive connections after 5 s


class Engine:
    def __init__(self, base_url: str, served_model_name: str, *, timeout_s: float,
                 num_connections: int, image_slot: str | None = None, key: str = "",
                 max_bytes_in_flight: int = 256 << 20, max_bytes_per_request: int = 64 << 20,
                 calls_per_request: int = 0, scheduling: str = "fcfs"):
        url = urllib.parse.urlsplit(base_url)
        if url.scheme != "http" or not url.hostname:
            raise ValueError(f"the vLLM URL must be http://host:port, got {base_url!r}")
        self.host, self.port = url.hostname, url.port or 80
        self.prefix = url.path.rstrip("/")
        self.model = served_model_name
        self.auth = {"Authorization": f"Bearer {key}"} if key else {}  # vLLM's key: every call
        self.image_slot = image_slot  # the placeholder the layout writes for each image
        self.timeout_s = timeout_s
        self.by_priority = scheduling == "priority"  # vLLM's policy (config.py: vllm_scheduling)
        self.gate = wire.Gate(max_bytes_in_flight, timeout_s)  # bodies on their way to vLLM
        self.bytes_per_request = max_bytes_per_request  # the same, for each request (request())
        self._idle: queue.LifoQueue = queue.LifoQueue()
        self._pool = fair_pool.FairPool(num_connections, calls_per_request or
                                        max(1, num_connections // 2))  # fair between requests
        self._counts = token_counts.Counts(self.ids, self.map)
        self._heads = set_read.IdCache()  # a set read's head ids, shared by a state's questions
        self._pieces = set_read.IdCache(set_read.PIECES_KEPT,
                                        set_read.PIECE_CHARS)  # its other pieces' ids
        self.two_way_budget = None  # the plugin's one-step budget in tokens, learnt from its
        # first typed refusal (OverBudget); two-way reads are then fitted to it
        # (steps/engine_calls.py)

    # -- HTTP ---------------------------------------------------------------------------
    def _connection(self, fresh: bool) -> tuple[http.client.HTTPConnection, bool]:
        """A pooled connection (dropping ones idle past vLLM's keep-alive), or a new one."""
        while not fresh:
            try:
                conn, idle_since = self._idle.get_nowait()
            except queue.Empty:
                break
            if time.monotonic() - idle_since < IDLE_KEEPALIVE_S:
                return conn, True
            conn.close()
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s), False

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        """One HTTP exchange, its body's bytes counted in flight (the request's gate, then the
        server's); a pooled connection that fails is retried once on a new one."""
        if body is None:
            return self._exchange(method, path, None, {})
        payload = self.queued(path, wire.pieces(body))
        size = sum(map(len, payload))
        with wire.sending(self.gate, size):
            return self._exchange(method, path, payload, {
                "Content-Type": "application/json", "Content-Length": str(size)})

    def queued(self, path: str, payload: list[bytes]) -> list[bytes]:
        """A generation's body with its place in vLLM's queue when vLLM schedules by priority:
        its request's bytes sent with it (inflight.Call.turn), so vLLM takes the requests in
        turn by cost, as the pool's lanes take them by count."""
        call = inflight.CURRENT.get()
        if not (self.by_priority and call and path in GENERATIONS):
            return payload
        return wire.prioritised(payload, call.turn(sum(map(len, payload))))

    def _exchange(self, method: str, path: str, payload, headers) -> tuple[int, dict]:
        call = inflight.check()  # a request whose client left starts nothing new
        for fresh in (False, True):
            conn, reused = self._connection(fresh)
            try:
                with inflight.flying(call, conn):  # cut when the client leaves
                    conn.request(method, self.prefix + path, body=payload,
                                 headers={**headers, **self.auth, **inflight.headers(call)})
                    response = conn.getresponse()
                    raw = response.read()
            except inflight.STOPPED:
                conn.close()
                raise
            except (OSError, http.client.HTTPException) if call and call.gone.is_set() else ():
                conn.close()  # cut on purpose: vLLM aborts the request
                raise call.why() from None
            except TimeoutError:
                conn.close()
                telemetry.engine_error("timeout")
                raise EngineUnavailable(f"vLLM did not answer {path} within {self.timeout_s} s",
                                        retry_after_ms=1000) from None
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                if reused:
                    continue
                telemetry.engine_error("unreachable")
                raise EngineUnavailable(f"vLLM is unreachable at {self.host}:{self.port} "
                                        f"({type(e).__name__})", retry_after_ms=1000) from None
            if call is not None and call.gone.is_set():  # cut mid-answer: nothing to pool
                conn.close()
                raise call.why()
            self._idle.put((conn, time.monotonic()))
            try:
                return response.status, json.loads(raw) if raw else {}
            except ValueError:
                telemetry.engine_error("not_json")
                raise EngineFailed(f"vLLM answered {path} with a body that is not JSON "
                                   f"(HTTP {response.status})") from None
        raise AssertionError("unreachable: the second attempt always uses a new connection")

    def _checked(self, method: str, path: str, body: dict | None = None) -> dict:
        status, doc = self.call(method, path, body)
        if status == 200:
            inflight.spent(doc)
            return doc
        message, refusal = refusals.message(doc), refusals.plugin_refusal(doc)
        too_long = [Problem(("state",), "the prompt is longer than this server can read: "
                            f"{message}", "too_long")]
        if status == 400 and refusal.get(refusals.PLUGIN_ERROR_KEY) == refusals.OVER_BUDGET:
            telemetry.engine_error("two_way_budget")
            budget = int(refusal["budget_tokens"])
            if budget > 0 and not self.two_way_budget:  # learnt once, kept; no room at
                self.two_way_budget = budget  # all (0) is no budget to fit to
            raise OverBudget(too_long, budget)
        if status == 400 and refusals.too_long(message):
            telemetry.engine_error("context_length")
            raise InvalidRequest(too_long)
        if status == 401:  # vLLM's key check; the key itself is never in a message
            message = f"{message} (ONEPASS_VLLM_KEY is unset or not the key vLLM requires)"
        kind = (EngineUnavailable if status in (503, 529) else
                EngineRefused if 400 <= status < 500 else EngineFailed)
        telemetry.engine_error("unavailable" if kind is EngineUnavailable else "failed")
        raise kind(f"vLLM answered {path} with HTTP {status}: {message}")

    # -- API --------------------------------------------------------------------------
    def read(self, read: Read) -> ReadResult:
        """Label log-probs at the answer slot. vLLM returns at most 128 requested ids per call,
        so longer label lists are read in slices of the same prompt (the later slices hit the
        prefix cache); the values are full-vocabulary log-softmax, so slices combine exactly."""
        ids = read.label_token_ids
        logprobs, counts = [], []
        prompt = (set_read.token_prompt(read, self.ids, self._heads, self._pieces)
                  if read.spans else None)
        for start in range(0, len(ids), MAX_LOGPROB_TOKEN_IDS):
            part = ids[start:start + MAX_LOGPROB_TOKEN_IDS]
            values, tokens = self._read_slice(read, part, prompt)
            logprobs.extend(values)
            counts.append(tokens)
        return ReadResult(tuple(logprobs), *counts[0])  # the prompt counts once

    def read_unset(self, read: Read) -> tuple[float, ...]:
        """A set read's very token ids read without the set flag (the start-up probe's plain
        read: the same tokens, so only the flag can make a difference)."""
        ids, _ = set_read.token_prompt(read, self.ids, self._heads, self._pieces)
        return tuple(self._read_slice(read, read.label_token_ids, (ids, ""))[0])

    def _read_slice(self, read: Read, ids, prompt=None) -> tuple[list[float], tuple[int, int]]:
        """Label log-probs and (prompt, cached) token counts for one slice of ids; with
        images, vLLM's prompt count includes their tokens. `prompt`: a set read's (token ids,
        spans), from set_read."""
        body = {"model": self.model, "max_tokens": 1, "temperature": 0.0,
                "logprob_token_ids": list(ids), "return_tokens_as_token_ids": True}
        xargs = {"attention_mode": TWO_WAY} if read.attention_mode == TWO_WAY else {}
        if prompt is not None and prompt[1]:  # the engine plugin's per-request flags (strings)
            xargs[set_read.SETS_KEY] = prompt[1]
        if xargs:
            body["vllm_xargs"] = xargs
        if read.images:  # the chat route runs the model's vision path
            body.update(messages=wire.messages(read, self.image_slot), logprobs=True)
            if read.assistant:  # the answer turn's start (a thought), continued, not closed
                body["messages"].append({"role": "assistant", "content": read.assistant})
                body.update(continue_final_message=True, add_generation_prompt=False)
            doc = self._checked("POST", "/v1/chat/completions", body)
        else:
            body.update(prompt=read.prompt if prompt is None else prompt[0], logprobs=1,
                        add_special_tokens=False)
            doc = self._checked("POST", "/v1/completions", body)
        try:
            if read.images:
                top = {e["token"]: e["logprob"]
                       for e in doc["choices"][0]["logprobs"]["content"][0]["top_logprobs"]}
            else:
                top = doc["choices"][0]["logprobs"]["top_logprobs"][0]
            by_id = {int(k.split(":", 1)[1]): v for k, v in top.items()}
            usage = doc["usage"]
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            return [float(by_id[t]) for t in ids], (int(usage["prompt_tokens"]), int(cached))
        except (KeyError, IndexError, TypeError, ValueError) as e:
            telemetry.engine_error("bad_answer")
            raise EngineFailed(f"vLLM's completion lacks the label log-probs ({e!r})") from None

    def read_all(self, reads: list[Read]) -> list[ReadResult]:
        """Every read at once, after the heads they share are prefilled once. Reads over one
        state share its head (system turn and record): one call prefills it into vLLM's prefix
        cache, then all reads run in the same engine steps, each computing only its own tail,
        and every read of a head computes the same way, whatever the other questions. Two-way
        reads never touch the prefix cache; question-first reads share no head; reads with
        images share one by the first read alone."""
        telemetry.count_reads(len(reads))  # on the request's own thread: its tally too
        if reads[0].attention_mode == TWO_WAY:
            return self.map(self.read, reads)
        if reads[0].images:
            first = self.read(reads[0])
            return [first] + self.map(self.read, reads[1:])
        heads = Counter(r.prompt[:r.head_chars] for r in reads if r.head_chars)
        self.map(self.prefill, [head for head, n in heads.items() if n > 1])
        return self.map(self.read, reads)

    def prefill(self, text: str) -> None:
        """Fill vLLM's prefix cache with a prompt's head (its full blocks are published)."""
        self._checked("POST", "/v1/completions", {
            "model": self.model, "prompt": text, "max_tokens": 1, "temperature": 0.0,
            "add_special_tokens": False})

    def request(self):
        """A context for answering one request: its bodies in flight to vLLM at once are capped
        at bytes_per_request, on top of the server's cap (wire.sending)."""
        return wire.request(self.bytes_per_request, self.timeout_s)

    def submit(self, fn, *args):
        """fn(*args) on an engine thread: a future (generations run beside the reads). It runs
        in a copy of the caller's context: a request's calls count against its gate, and wait
        in its lane of the pool (fair_pool.py: the lanes take turns)."""
        return self._pool.submit(wire.REQUEST.get(), contextvars.copy_context().run, fn, *args)

    def map(self, fn, items) -> list:
        """fn over items on the engine's threads (one keep-alive connection each); on the first
        failure the items not started yet are dropped, as Executor.map does."""
        futures = [self.submit(fn, item) for item in items]
        try:
            return [f.result() for f in futures]
        finally:
            for f in futures:
                f.cancel()

    def tokenize(self, **body) -> list[int]:
        return self._checked("POST", "/tokenize", {"model": self.model, **body})["tokens"]

    def ids(self, text: str) -> list[int]:
        return self.tokenize(prompt=text, add_special_tokens=False)

    def count(self, texts: list[str], sep: tuple[str, int] | None = None,
              calls=None) -> list[int]:
        """Token counts (no special tokens), the missing ones tokenized concurrently, several a
        call when start-up proved a separator (`sep`: token_counts.separator); texts seen before
        come from a bounded cache. `calls(n)` hears how many /tokenize calls it made."""
        return self._counts.count(texts, sep, calls)

    def waiting(self) -> str | None:
        """Why vLLM is not up yet, or None once it answers /v1/models. On a connection of its
        own and not counted: the shim polls this at start-up, and a poll before vLLM is up is
        expected, not an engine error (the start-up checks that follow count as usual)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            conn.request("GET", self.prefix + "/v1/models", headers=self.auth)
            status = conn.getresponse().status
        except (OSError, http.client.HTTPException) as e:
            return f"vLLM is unreachable at {self.host}:{self.port} ({type(e).__name__})"
        finally:
            conn.close()
        return f"vLLM answered /v1/models with HTTP {status}" if status in (503, 529) else None

    def served_models(self) -> list[dict]:
        """vLLM's model cards: `id` and `max_model_len` among others."""
        return self._checked("GET", "/v1/models").get("data", [])

    def tokenizer_info(self) -> tuple[int, dict]:
        """vLLM's /tokenizer_info as (status, document): 200 with its tokenizer's init kwargs,
        404 when vLLM was started without --enable-tokenizer-info-endpoint. Read once at start-up
        (added_tokens.py decides what an answer means), so no status is an engine error here."""
        return self.call("GET", "/tokenizer_info")

    def close(self) -> None:
        self._pool.shutdown()
        while not self._idle.empty():
            self._idle.get_nowait()[0].close()

