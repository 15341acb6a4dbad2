"""Stdlib-only plumbing test that a question kind is one module and one registry line: a toy kind
(tests/support/toy_kind.py: a traffic light read from labels of its own), registered here and
nowhere else, is served by an in-process shim started after the registration (its profile keys
in a copy of serve_config.json; before a fake engine, so its answers say nothing of a model):
warmed up with the built-in kinds, accepted and answered in each API's shape on /v1/systemone
and /v1/decisions, held to its own cap, listed in /openapi.json's question and answer schemas
and limits, counted by its type in /metrics, and offered by the try-it page (/try/info, with
its temperature in the raw read's calibration). It is unregistered when the class is done.
Run: python3 -S -m unittest tests.unit.kinds.test_toy_kind
"""
import http.client
import json
import math
import tempfile
import threading
import unittest
from pathlib import Path

from onepass import config, kinds, telemetry
from onepass.backend.probes import Facts
from onepass.edge.connections import Server
from onepass.prompt.layout import LabelSet
from onepass.server import READY, Service
from tests.support import toy_kind
from tests.support.fake_engine import FakeEngine
from tests.support.paths import ROOT
from tests.support.prometheus_text import samples
from tests.support.unit_profile import LABELS

STATE = "Junction 4: the northbound light has been amber for a minute."
ASKED = {"type": "light", "instructions": "Which light is on?",
         "criteria": {"amber": "get ready to stop"}}


def call(server, path, body=None):
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=30)
    conn.request("GET" if body is None else "POST", path,
                 body=None if body is None else json.dumps(body).encode(),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    status, data = r.status, r.read()
    conn.close()
    return status, data.decode() if path == "/metrics" else json.loads(data)


class TestToyKind(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fake = FakeEngine()
        kinds.register(toy_kind.KIND)  # the one registry line
        for api_type in ("light", "traffic_light"):  # later scrapes count as before
            cls.addClassCleanup(telemetry.QUESTIONS.series.pop, (api_type,), None)
        cls.addClassCleanup(kinds.unregister, toy_kind.KIND.name)
        cls.addClassCleanup(cls.fake.stop)
        tmp = tempfile.TemporaryDirectory()
        cls.addClassCleanup(tmp.cleanup)
        path = Path(tmp.name) / "serve_config.json"
        path.write_text(json.dumps(toy_kind.profile_doc()))
        settings = config.load(["--port", "0", "--vllm", cls.fake.url, "--config", str(path)],
                               environ={})
        service = Service(settings, ROOT)
        labels = LabelSet(**LABELS.by_kind, light=toy_kind.LABELS)
        # no generation on this engine: the kinds answered by one are refused, not warmed
        service.start(Facts(labels, settings.model.max_model_len, False, "a fake engine"))
        service.warm_up()
        cls.server = Server(service)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.addClassCleanup(service.engine.close)
        cls.addClassCleanup(cls.server.server_close)
        cls.addClassCleanup(cls.server.shutdown)

    def test_warmed_up_with_the_others(self):
        """warm_up: ready, its own warm-up body and the mixed one answered."""
        self.assertEqual(self.server.service.phase, READY, self.server.service.reason)

    def test_answered_on_systemone(self):
        """/v1/systemone: its answer beside a built-in one, in its own shape; over its cap a
        422 naming it."""
        status, doc = call(self.server, "/v1/systemone", {
            "model": "jev-latest", "state": STATE,
            "questions": {"light": ASKED, "late": {"type": "noul", "instructions": "Late?"}}})
        self.assertEqual(status, 200, doc)
        light = doc["answers"]["light"]
        self.assertEqual((light["type"], set(light["probabilities"])),
                         ("light", set(toy_kind.LIGHTS)))
        self.assertEqual(light["light"], max(light["probabilities"],
                                             key=light["probabilities"].get))
        self.assertAlmostEqual(math.fsum(light["probabilities"].values()), 1.0)
        self.assertEqual(doc["answers"]["late"]["type"], "noul")
        status, doc = call(self.server, "/v1/systemone", {
            "model": "jev-latest", "state": STATE,
            "questions": {f"q{i}": ASKED for i in range(toy_kind.MOST + 1)}})
        self.assertEqual(status, 422)
        self.assertIn(f"at most {toy_kind.MOST} light questions", doc["detail"][0]["msg"])

    def test_answered_on_decisions(self):
        """/v1/decisions: its own type there, answered with its name, in the request's order."""
        status, doc = call(self.server, "/v1/decisions", {
            "model": "jev-latest", "input": STATE,
            "questions": [{"type": "traffic_light", "name": "light",
                           "instructions": "Which light is on?"},
                          {"type": "predicate", "name": "late", "instructions": "Late?"}]})
        self.assertEqual(status, 200, doc)
        light, late = doc["answers"]
        self.assertEqual((light["type"], light["name"], late["type"]),
                         ("traffic_light", "light", "predicate"))
        self.assertIn(light["light"], toy_kind.LIGHTS)
        self.assertEqual([p["value"] for p in light["probabilities"]], list(toy_kind.LIGHTS))

    def test_in_the_openapi_document(self):
        """/openapi.json: its question and answer schemas on both APIs, its cap in the
        limits."""
        status, doc = call(self.server, "/openapi.json")
        self.assertEqual(status, 200)

        def body_types(route, direction):
            post = doc["paths"][route]["post"]
            content = (post["requestBody"] if direction == "question"
                       else post["responses"]["200"])["content"]["application/json"]["schema"]
            return content

        systemone = body_types("/v1/systemone", "question")["properties"]["questions"]
        self.assertIn(toy_kind.KIND.systemone.question_schema(),
                      systemone["additionalProperties"]["anyOf"])
        answers = body_types("/v1/systemone", "answer")["properties"]["answers"]
        self.assertIn(toy_kind.KIND.systemone.answer_schema(),
                      answers["additionalProperties"]["anyOf"])
        asked = body_types("/v1/decisions", "question")["properties"]["questions"]["items"]
        self.assertIn("traffic_light", [q["properties"]["type"]["const"] for q in asked["anyOf"]])
        answered = body_types("/v1/decisions", "answer")["properties"]["answers"]["items"]
        self.assertIn(toy_kind.KIND.decisions.answer_schema(), answered["anyOf"])
        self.assertIn(f"{toy_kind.MOST} light questions", doc["info"]["description"])

    def test_counted_by_type_in_metrics(self):
        """/metrics: an answer of each of its types counts once under that type."""
        def counted():
            status, text = call(self.server, "/metrics")
            self.assertEqual(status, 200)
            found = samples(text)
            return [found[f'onepass_questions_total{{type="{t}"}}']
                    for t in ("light", "traffic_light")]
        before = counted()
        self.assertEqual(call(self.server, "/v1/systemone", {
            "model": "jev-latest", "state": STATE, "questions": {"light": ASKED}})[0], 200)
        self.assertEqual(call(self.server, "/v1/decisions", {
            "model": "jev-latest", "input": STATE, "questions": [
                {"type": "traffic_light", "instructions": "Which light?"}]})[0], 200)
        self.assertEqual(counted(), [before[0] + 1, before[1] + 1])

    def test_offered_by_the_try_page(self):
        """/try/info: its type served; the raw read's calibration gives it temperature 1 and
        that raw read is answered."""
        status, info = call(self.server, "/try/info")
        self.assertEqual(status, 200)
        self.assertIn("light", info["kinds"])
        self.assertIsNone(info["kinds"]["light"])
        raw = info["raw_calibration"]
        self.assertEqual(raw["temperature"]["light"], 1)
        status, doc = call(self.server, "/v1/systemone", {
            "model": "jev-latest", "state": STATE, "questions": {"light": ASKED},
            "kwargs": {"calibration": raw}})
        self.assertEqual((status, doc["answers"]["light"]["type"]), (200, "light"), doc)


if __name__ == "__main__":
    unittest.main()
