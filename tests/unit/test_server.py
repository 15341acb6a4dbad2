"""Stdlib tests of the shim's routes (onepass/server.py) on an in-process shim before a fake
engine.

What the clients' own calls get: the model list in both shapes (typesafe-sdk reads `models`,
openai's client `data`; the live suite lists models with both real clients), an unknown model
naming the served ones in each route's error shape, and a streaming request refused on
/v1/decisions.

GET /metrics and GET /openapi.json: the auth rule, the content types, counters that move with
requests, the build's series, and the start-up wait for vLLM counted as no engine error. The
live suite repeats the counting against real vLLM and parses the scrape with prometheus_client.
Run: python3 -m unittest tests.unit.test_server
"""
import datetime
import http.client
import json
import socket
import threading
import time
import types
import unittest
from unittest import mock

import onepass
from onepass import config, telemetry
from onepass.edge.connections import Server
from onepass.server import FAILED, READY, ROUTES, WARMING, Service
from tests.support.fake_engine import FakeEngine
from tests.support.inprocess_shim import AgainstFakeEngine, call, start_shim, stop_shim
from tests.support.paths import ROOT
from tests.support.prometheus_text import samples
from tests.support.systemone_bodies import NOUL_Q, SCORE_Q, req

# -- what the clients' own calls get -----------------------------------------------------------
# the shim here serves the default profile, as it does with no --profile
DEFAULT_NAME, DEFAULT = config.load_profile(str(ROOT / "serve_config.json"), "")
SERVED = (DEFAULT.model_name, "jev-latest")
# OpenAI's `created`: the profile's release day at 00:00 UTC, in Unix seconds
RELEASED = int(datetime.datetime.fromisoformat(DEFAULT.release_date + "T00:00:00+00:00")
               .timestamp())
QUESTION = {"type": "predicate", "instructions": "Refund?"}


def decisions(**extra):
    return {"model": "jev-latest", "input": "I was charged twice.", "questions": [QUESTION],
            **extra}


class TestClientCalls(AgainstFakeEngine):
    def test_models_in_both_shapes(self):
        status, _, doc = call(self.server, "GET", "/v1/models")
        self.assertEqual(status, 200)
        # System One's (the contract, section 5): name, description, release_date, all strings
        self.assertEqual([m["name"] for m in doc["models"]], list(SERVED))
        for m in doc["models"]:
            self.assertEqual(set(m), {"name", "description", "release_date"})
            self.assertTrue(all(isinstance(v, str) and v for v in m.values()))
        # OpenAI's list object: what openai's client.models.list() pages through
        self.assertEqual(doc["object"], "list")
        self.assertEqual([m["id"] for m in doc["data"]], list(SERVED))
        for m in doc["data"]:
            self.assertEqual((set(m), m["object"], m["owned_by"]),
                             ({"id", "object", "created", "owned_by"}, "model", "onepass"))
            self.assertEqual(m["created"], RELEASED)

    def test_unknown_model_names_the_served_ones(self):
        status, _, doc = call(self.server, body=req({"a": NOUL_Q}, model="smollm2"))
        message = doc["detail"]["message"]
        self.assertEqual((status, doc["detail"]["error_type"]), (404, "not_found"))
        self.assertTrue(message.startswith("Unknown model: smollm2;"), message)
        for name in (*SERVED, "/v1/models"):
            self.assertIn(name, message)
        status, _, doc = call(self.server, path="/v1/decisions", body=decisions(model="smollm2"))
        err = doc["error"]
        self.assertEqual((status, err["type"], err["param"], err["code"]),
                         (404, "invalid_request_error", "model", "model_not_found"))
        self.assertTrue(err["message"].startswith("Unknown model: smollm2;"), err["message"])
        for name in (*SERVED, "/v1/models"):
            self.assertIn(name, err["message"])

    def test_unknown_model_name_is_cut(self):
        status, _, doc = call(self.server, body=req({"a": NOUL_Q}, model="m" * 5000))
        self.assertEqual(status, 404)
        self.assertLess(len(doc["detail"]["message"]), 300)

    def test_stream_refused_on_decisions(self):
        """No answer is streamed: `stream: true` is a 400 naming the parameter (openai raises
        BadRequestError with .param "stream"); false or null is the ordinary request."""
        status, _, doc = call(self.server, path="/v1/decisions", body=decisions(stream=True))
        err = doc["error"]
        self.assertEqual((status, err["type"], err["param"], err["code"]),
                         (400, "invalid_request_error", "stream", None))
        self.assertIn("streaming is not supported", err["message"])
        status, _, doc = call(self.server, path="/v1/decisions", body=decisions(stream="yes"))
        self.assertEqual((status, doc["error"]["param"]), (400, "stream"))
        for value in (False, None):
            status, _, doc = call(self.server, path="/v1/decisions", body=decisions(stream=value))
            self.assertEqual(status, 200, doc)


# -- /metrics and /openapi.json ----------------------------------------------------------------
KEY = {"Authorization": "Bearer k-9"}


def get(server, path, headers=None):
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=10)
    conn.request("GET", path, headers=headers or {})
    r = conn.getresponse()
    out = r.status, r.getheader("Content-Type"), r.read().decode()
    conn.close()
    return out


class TestRoutes(unittest.TestCase):
    def setUp(self):
        self.fake = FakeEngine()
        self.addCleanup(self.fake.stop)
        self.server = start_shim(self.fake.url, ONEPASS_API_KEY="k-9")
        self.addCleanup(stop_shim, self.server)

    def test_auth_rule(self):
        """Both routes take the key like the decision routes: 401 without and wrong."""
        for path in ("/metrics", "/openapi.json"):
            self.assertEqual(get(self.server, path)[0], 401, path)
            self.assertEqual(get(self.server, path, {"Authorization": "Bearer no"})[0], 401)
            self.assertEqual(get(self.server, path, KEY)[0], 200, path)

    def test_counts_follow_requests(self):
        def scrape():
            status, ctype, text = get(self.server, "/metrics", KEY)
            self.assertEqual((status, ctype), (200, "text/plain; version=0.0.4; charset=utf-8"))
            return samples(text)
        before = scrape()
        ok = call(self.server, body=req({"a": NOUL_Q, "b": SCORE_Q}), headers=KEY)
        self.assertEqual(ok[0], 200)
        self.assertEqual(call(self.server, body=req({"a": {"type": "nope"}}), headers=KEY)[0], 422)
        after = scrape()

        def delta(name):
            return after.get(name, 0) - before.get(name, 0)
        self.assertEqual(delta('onepass_requests_total{route="/v1/systemone",status="200"}'), 1)
        self.assertEqual(delta('onepass_requests_total{route="/v1/systemone",status="422"}'), 1)
        self.assertEqual(delta('onepass_questions_total{type="noul"}'), 1)
        self.assertEqual(delta('onepass_questions_total{type="score"}'), 1)
        self.assertEqual(delta("onepass_input_tokens_total"), ok[2]["usage"]["input_tokens"])
        self.assertEqual(delta("onepass_engine_reads_total"), 2)
        self.assertEqual(after['onepass_phase{phase="ready"}'], 1)
        self.assertEqual(after["onepass_in_flight_requests"], 0)

    def test_route_labels_are_the_routes(self):
        """Every route has its own label value in the metrics, but the try-it page's files and
        info, which share /try's; nothing else has one."""
        self.assertEqual(set(telemetry.ROUTES), {telemetry.route_of(p) for p in ROUTES})
        self.assertEqual({p for p in ROUTES if telemetry.route_of(p) == "/try"},
                         {"/", "/try", "/try/app.js", "/try/page.js", "/try/form.js",
                          "/try/request.js", "/try/answers.js", "/try/style.css", "/try/info"})

    def test_openapi_document(self):
        status, ctype, text = get(self.server, "/openapi.json", KEY)
        doc = json.loads(text)
        self.assertEqual((status, ctype, doc["openapi"]), (200, "application/json", "3.1.0"))
        self.assertEqual({(m.upper(), p) for p, item in doc["paths"].items() for m in item},
                         {(m, p) for p, methods in ROUTES.items() for m in methods})
        self.assertIn("400 questions per request", doc["info"]["description"])


class TestFailureCounts(unittest.TestCase):
    """The counts of what went wrong: 529s by reason, engine errors by kind."""

    def test_warming_529_and_phase(self):
        from onepass.server import WARMING
        server = start_shim("http://127.0.0.1:9")
        self.addCleanup(stop_shim, server)
        server.service.phase = WARMING
        before = samples(get(server, "/metrics")[2])  # auth off: anyone may scrape
        self.assertEqual(call(server, body=req({"a": NOUL_Q}))[0], 529)
        after = samples(get(server, "/metrics")[2])
        name = 'onepass_overloaded_total{reason="warming"}'
        self.assertEqual(after.get(name, 0) - before.get(name, 0), 1)
        self.assertEqual((after['onepass_phase{phase="warming"}'],
                          after['onepass_phase{phase="ready"}']), (1, 0))

    def test_build_info(self):
        server = start_shim("http://127.0.0.1:9", ONEPASS_VLLM_DTYPE="float32",
                            ONEPASS_VLLM_DEVICE="cpu")
        self.addCleanup(stop_shim, server)
        info = {n: v for n, v in samples(get(server, "/metrics")[2]).items()
                if n.startswith("onepass_build_info")}
        self.assertEqual(info, {f'onepass_build_info{{version="{onepass.__version__}",'
                                f'model="{DEFAULT.model_name}",profile="{DEFAULT_NAME}",'
                                'dtype="float32",device="cpu"}': 1})

    def test_engine_errors_by_kind(self):
        fake = FakeEngine("5xx")
        self.addCleanup(fake.stop)
        for url, kind, status in (("http://127.0.0.1:9", "unreachable", 503),
                                  (fake.url, "failed", 502)):
            server = start_shim(url)
            self.addCleanup(stop_shim, server)
            name = f'onepass_engine_errors_total{{kind="{kind}"}}'
            before = samples(get(server, "/metrics")[2]).get(name, 0)
            self.assertEqual(call(server, body=req({"a": NOUL_Q}))[0], status)
            self.assertGreaterEqual(samples(get(server, "/metrics")[2])[name] - before, 1)


class TestEarlyRefusal(unittest.TestCase):
    """A request whose deadline comes before the time a decision is expected to take now is
    refused at once (529, reason deadline, Retry-After), before any engine work; one with time
    enough, or none given, is answered."""

    def test_a_deadline_sooner_than_the_expected_answer_is_refused_now(self):
        fake = FakeEngine(delay_s=0.2)  # a slow engine: each read takes 0.2 s at least
        self.addCleanup(fake.stop)
        server = start_shim(fake.url)
        self.addCleanup(stop_shim, server)
        body = req({"a": NOUL_Q})
        self.assertEqual(call(server, body=body)[0], 200)  # no deadline: answered, and timed
        self.assertGreaterEqual(server.service.pace.expected_s(), 0.2)
        before = samples(get(server, "/metrics")[2])
        status, headers, doc = call(server, body=body,
                                    headers={"x-envoy-expected-rq-timeout-ms": "50"})
        after = samples(get(server, "/metrics")[2])
        self.assertEqual((status, doc["detail"]["error_type"]), (529, "overloaded_error"))
        self.assertIn("deadline", doc["detail"]["message"])
        self.assertGreaterEqual(int(headers["retry-after-ms"]), 200)
        self.assertGreaterEqual(int(headers["Retry-After"]), 1)
        name = 'onepass_overloaded_total{reason="deadline"}'
        self.assertEqual(after.get(name, 0) - before.get(name, 0), 1)
        self.assertEqual(after["onepass_engine_reads_total"], before["onepass_engine_reads_total"])
        self.assertGreater(after["onepass_expected_answer_seconds"], 0.05)
        self.assertEqual(call(server, body=body, headers={
            "x-envoy-expected-rq-timeout-ms": "30000"})[0], 200)
        self.assertEqual(server.service.slots.busy, 0)  # the refused one gave its slot back


class TestStartUp(unittest.TestCase):
    """The start-up wait for vLLM polls it until it answers: no poll is an engine error, so a
    restart fires no error alert; a failure under a request afterwards still is one."""

    def test_waiting_is_no_error_and_a_later_failure_is(self):
        errors = [f'onepass_engine_errors_total{{kind="{k}"}}' for k in telemetry.ENGINE_ERRORS]

        def counts():
            got = samples(telemetry.REGISTRY.render())
            return [got.get(n, 0) for n in errors]
        with socket.socket() as s:  # a port nobody listens on yet: vLLM still loading
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        service = Service(config.load(["--port", "0", "--vllm", f"http://127.0.0.1:{port}"],
                                      environ={}), ROOT)
        self.addCleanup(service.engine.close)
        before = counts()
        polls = []  # the wait sleeps once after each poll that found vLLM not up
        pause = types.SimpleNamespace(sleep=lambda s: polls.append(s) or time.sleep(s),
                                      monotonic=time.monotonic)  # the default deadline reads it
        patch = mock.patch("onepass.server.time", pause)
        patch.start()
        self.addCleanup(patch.stop)
        warm = threading.Thread(target=service.warm_up, kwargs={"poll_s": 0.01}, daemon=True)
        warm.start()
        deadline = time.monotonic() + 10
        while len(polls) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual((service.phase, service.reason[:16]), (WARMING, "waiting for vLLM"))
        fake = FakeEngine(port=port)  # vLLM comes up where the shim waits
        warm.join(timeout=60)
        self.assertEqual(service.phase, READY, service.reason)
        self.assertGreaterEqual(len(polls), 20)
        self.assertEqual(counts(), before)

        self.addCleanup(fake.stop)
        fake.server.RequestHandlerClass.mode = "5xx"  # vLLM failing: a request's failure counts
        server = Server(service)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        self.assertEqual(call(server, body=req({"a": NOUL_Q}))[0], 502)
        failed = errors.index('onepass_engine_errors_total{kind="failed"}')
        self.assertGreaterEqual(counts()[failed] - before[failed], 1)

    def test_a_failing_warm_up_request_leaves_it_failed_not_ready(self):
        """The warm-up's requests go out together (WARM_UP_AT_ONCE); one that fails, here every
        one once vLLM turns to 5xx after the start-up checks, ends in FAILED with the reason."""
        fake = FakeEngine()
        self.addCleanup(fake.stop)
        service = Service(config.load(["--port", "0", "--vllm", fake.url], environ={}), ROOT)
        self.addCleanup(service.engine.close)
        start = service.start

        def start_then_fail(facts):  # the checks passed; every later call gets a 5xx
            start(facts)
            fake.server.RequestHandlerClass.mode = "5xx"
        service.start = start_then_fail
        service.warm_up(poll_s=0.01)
        self.assertEqual(service.phase, FAILED)
        self.assertTrue(service.reason.startswith("warm-up request failed: "), service.reason)

    def test_a_dropped_start_up_call_costs_a_few_checks_a_minute(self):
        """vLLM answers /v1/models but drops every /tokenize: the start-up check is tried again
        after pauses that double to WAIT_CEILING_S, /health's reason saying what is awaited
        and when the next try is; over the first simulated minute that is 6 checks (at 0, 1,
        3, 7, 15 and 31 s), then two a minute. Once vLLM answers, the shim gets ready."""
        fake = FakeEngine(drop="/tokenize")
        self.addCleanup(fake.stop)
        service = Service(config.load(["--port", "0", "--vllm", fake.url], environ={}), ROOT)
        self.addCleanup(service.engine.close)
        pauses, reasons, seen = [], [], {}

        def pause(s):  # simulated time: the minute passes at once
            pauses.append(s)
            reasons.append(service.reason)
            if sum(pauses) >= 60 and not seen:
                seen.update(fake.calls)
            if sum(pauses) >= 150:
                fake.server.RequestHandlerClass.drop = ""  # vLLM answers from now on
        with mock.patch("onepass.server.time", types.SimpleNamespace(sleep=pause)):
            service.warm_up(poll_s=1.0)
        self.assertEqual(service.phase, READY, service.reason)
        self.assertEqual(pauses[:8], [1, 2, 4, 8, 16, 30, 30, 30])
        self.assertTrue(reasons[0].startswith("waiting for vLLM: the start-up checks, which it "
                                              "did not answer (vLLM is unreachable"), reasons[0])
        self.assertTrue(reasons[5].endswith("; next try in 30 s"), reasons[5])
        checks = seen["/v1/models"] // 2  # each try: the quiet poll, then the check's listing
        self.assertEqual(checks, 6, seen)
        self.assertLessEqual(seen["/tokenize"], 2 * checks, seen)  # one call, tried twice


if __name__ == "__main__":
    unittest.main()
