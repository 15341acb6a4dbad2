"""The decision core in process, against the session's real vLLM:
(1) adding a question kind is one module, one registry line and its profile keys: two toy kinds
    defined here (a label-read kind with labels of its own, and a kind answered by a
    constrained generation) are registered, a copy of the profile file gains their keys, and a
    Service built as shim.py builds it verifies their labels, warms them up and answers them
    on /v1/systemone, beside the built-in kinds, with nothing else changed; behind the real
    HTTP edge, the toy kinds are in /openapi.json (their schemas), counted under their own
    type in /metrics, offered by the try-it page (/try/info, which its form is built from) and
    answered there in a browser;
(2) a request's steps fill the Record fields docs/architecture.md's table gives each, in the
    table's order (each step wrapped to note which fields it replaced), and its answers are
    the state's.
The toy kinds are removed from the registry after their test."""
import dataclasses
import json
import re
import threading
import urllib.request

import pytest
from tests.support.browser import Watched, chromium, drawn, open_page, send
from tests.support.live_stack import config_doc
from tests.support.paths import ROOT

from onepass import config, kinds
from onepass import pipeline
from onepass.pipeline import NAMES
from onepass.steps.record import Record
from onepass.api import systemone
from onepass.decision_model import Answer, Option
from onepass.edge.connections import Server
from onepass.kinds.adapters import SystemOne
from onepass.kinds.base import (Generation, Kind, Limit, Listing, OwnLabels, Plan, best,
                                generation_refusal)
from onepass.kinds.schema_parts import PROBABILITY, TEXT_OR_NULL, const, obj
from onepass.server import Service

MOODS = ("negative", "neutral", "positive")


class MoodOnSystemOne(SystemOne):
    """The mood kind on /v1/systemone: its type, fields, answer, schemas and warm-up."""
    type = "mood"
    keys = frozenset({"type", "instructions"})

    def options(self, criteria, loc, check, max_options, instructions=None):
        return [Option(mood, None) for mood in MOODS]

    def answer(self, q, a, legend):
        return {"type": "mood", "mood": MOODS[a.best],
                "probabilities": dict(zip(MOODS, a.probabilities))}

    def warmup_body(self, state, image_url=""):
        return {"state": state, "questions": {"mood": {"type": "mood"}}}

    def question_schema(self):
        return obj({"type": const("mood"), "instructions": TEXT_OR_NULL}, ["type"])

    def answer_schema(self):
        return obj({"type": const("mood"), "mood": {"enum": list(MOODS)},
                    "probabilities": obj({m: PROBABILITY for m in MOODS}, MOODS)},
                   ["type", "mood", "probabilities"], extra="x_")


class Mood(Kind):
    """A toy label-read kind: a fixed three-way mood, read from three labels of its own."""
    name, systemone = "mood", MoodOnSystemOne()
    own_labels = OwnLabels(3, 3)  # its profile key: mood_labels

    def listings(self, q, labels, opts):
        pairs = labels.mood
        lines = [f"Question: {q.instructions or 'What is the mood of the record?'}"]
        lines += [f"{label} means: {mood}" for (label, _), mood in zip(pairs, MOODS)]
        lines.append(f"Reply with {', '.join(label for label, _ in pairs)} only.")
        return [Listing(lines, pairs, (0, 1, 2), (0, 0, 0))]

    def answer(self, probs, question):
        return Answer(self.name, tuple(probs), max(probs), best(probs))


class YearOnSystemOne(SystemOne):
    """The year kind on /v1/systemone; its schemas are the defaults (its type and keys)."""
    type = "year"
    keys = frozenset({"type", "instructions"})

    def options(self, criteria, loc, check, max_options, instructions=None):
        return []

    def answer(self, q, a, legend):
        year, text = a.payload
        return {"type": "year", "year": year, "text": text}

    def warmup_body(self, state, image_url=""):
        return {"state": state, "questions": {"y": {"type": "year", "instructions": "When?"}}}


class Year(Kind):
    """A toy generated kind: a four-digit year under a regular expression, no label read."""
    name, systemone = "year", YearOnSystemOne()
    reads, rereads, thinks = False, False, None

    def plan(self, q, job):
        return Plan(generation=Generation(q, {"regex": "(19|20)[0-9]{2}"}, 8))

    def combine(self, q, answers, generated, job):
        year = None if generated.cut else int(generated.text)
        return Answer(self.name, (), 1.0 if year else 0.0, 0, (year, generated.text))

    def limit(self, settings, facts):
        return Limit(2, generation_refusal("year", facts.structured))

    def listings(self, q, labels, opts):
        return [Listing([f"Question: {q.instructions}", "Reply with the year only."])]


@pytest.fixture(scope="module")
def service(stack, tmp_path_factory):
    """A Service on the session's vLLM with the toy kinds registered and their profile keys
    in a copy of serve_config.json; warmed up (its guard and warm-up run)."""
    toys = (Mood(), Year())
    for toy in toys:
        kinds.register(toy)  # the one registry line each kind needs
    try:
        doc = config_doc()
        profile = doc["profiles"][doc["default_profile"]]
        profile["mood_labels"] = ["X", "Y", "Z"]  # its profile keys: labels ...
        profile["calibration"]["temperature"]["mood"] = 1.0  # ... and a temperature
        path = tmp_path_factory.mktemp("toy") / "serve_config.json"
        path.write_text(json.dumps(doc))
        settings = config.load(["--port", "0", "--vllm", stack.vllm_url, "--config", str(path)],
                               environ={"ONEPASS_VLLM_KEY": stack.vllm_key})
        s = Service(settings, ROOT)
        s.warm_up(poll_s=0.5)
        assert s.phase == "ready", s.reason
        yield s
        s.engine.close()
    finally:
        for toy in toys:
            kinds.KINDS.pop(toy.name, None)


def ask(service, body: dict) -> dict:
    return service.pipeline.decide(systemone, json.dumps({"model": "jev-latest", **body}).encode(),
                                   {})


def test_a_toy_kind_is_one_module_one_line_and_its_keys(service):
    """The toy kinds' labels were verified at start-up and warmed; both are answered beside a
    built-in kind, twice the same; a generated year is a year or null."""
    assert [label for label, _ in service.pipeline.facts.labels.mood] == ["X", "Y", "Z"]
    body = {"state": "Order 4471 arrived broken in 1999 and the customer is furious.",
            "questions": {"m": {"type": "mood"}, "y": {"type": "year", "instructions":
                                                       "Which year did the order arrive?"},
                          "r": {"type": "noul", "instructions": "Is a refund asked for?"}}}
    first, again = ask(service, body), ask(service, body)
    assert first["answers"] == again["answers"]
    mood, year = first["answers"]["m"], first["answers"]["y"]
    assert mood["type"] == "mood" and mood["mood"] in MOODS
    assert abs(sum(mood["probabilities"].values()) - 1) < 1e-9
    assert year["type"] == "year" and (year["year"] is None or 1900 <= year["year"] <= 2099)
    assert year["year"] is None or str(year["year"]) == year["text"]
    assert 0 <= first["answers"]["r"]["noul"] <= 1
    assert first["usage"]["output_tokens"] >= 1  # the year was generated


@pytest.fixture(scope="module")
def edge(service):
    """The toy kinds' Service behind the real HTTP edge, on a free loopback port (auth off:
    local callers only, as shim.py serves it): its base URL."""
    server = Server(service)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://%s:%d" % server.server_address[:2]
    server.shutdown()
    server.server_close()


def get(base: str, path: str, body: dict | None = None) -> bytes:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data,
                                 headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=120) as r:
        assert r.status == 200, (path, r.status)
        return r.read()


def test_a_toy_kind_is_in_openapi_metrics_and_the_try_page(edge):
    """Nothing but the toy kinds' own code and their registry lines: /openapi.json lists their
    question and answer schemas (Mood's own, Year's the defaults) after the built-in kinds';
    an answered request is counted under each toy's own type in /metrics (never `other`);
    /try/info, which the try-it page builds its type list from, offers both as served."""
    doc = json.loads(get(edge, "/openapi.json"))
    post = doc["paths"]["/v1/systemone"]["post"]
    body = post["requestBody"]["content"]["application/json"]["schema"]
    asked = [q["properties"]["type"]["const"]
             for q in body["properties"]["questions"]["additionalProperties"]["anyOf"]]
    assert asked == ["noul", "choice", "score", "box", "number", "mood", "year"], asked
    reply = post["responses"]["200"]["content"]["application/json"]["schema"]
    answers = reply["properties"]["answers"]["additionalProperties"]["anyOf"]
    assert answers[-2] == Mood.systemone.answer_schema()
    assert answers[-1]["properties"]["type"] == {"const": "year"}

    def counted() -> dict:
        text = get(edge, "/metrics").decode()
        return {t: float(line.rsplit(" ", 1)[1]) for t in ("mood", "year", "other")
                for line in text.splitlines()
                if line.startswith(f'onepass_questions_total{{type="{t}"}}')}
    before = counted()
    answered = json.loads(get(edge, "/v1/systemone", {
        "model": "jev-latest", "state": "The order arrived broken in 1999.",
        "questions": {"m": {"type": "mood"},
                      "y": {"type": "year", "instructions": "Which year did it arrive?"}}}))
    assert {a["type"] for a in answered["answers"].values()} == {"mood", "year"}
    after = counted()
    assert (after["mood"] - before.get("mood", 0), after["year"] - before.get("year", 0),
            after.get("other", 0) - before.get("other", 0)) == (1, 1, 0), (before, after)

    info = json.loads(get(edge, "/try/info"))
    assert info["authorized"] and info["kinds"]["mood"] is None and info["kinds"]["year"] is None


def test_a_toy_kind_is_answered_on_the_try_page(edge):
    """The try-it page in a real browser (headless Chromium) offers the mood kind it heard of
    from /try/info; a mood question added with the form is sent, and the page shows the API's
    answer to that same body: `mood <its mood>` and a bar per mood at its probability."""
    with chromium() as browser:
        watched = Watched(browser)
        try:
            page = open_page(watched, edge)
            assert "mood" in page.text_content("#status.ok")
            page.select_option("#add-type", "mood")
            page.click("#add")
            sent, response = send(page)
            assert response.status == 200
            page.wait_for_selector("#result:not([hidden])")
            body = json.loads(sent.post_data)
            [qid] = [k for k, q in body["questions"].items() if q["type"] == "mood"]
            api = json.loads(get(edge, "/v1/systemone", body))["answers"][qid]
            bars = drawn(page)[qid]
            assert list(bars) == list(MOODS)
            for mood, p in api["probabilities"].items():
                shown, text, width, _ = bars[mood]
                assert shown == pytest.approx(p, abs=1e-9) and text == f"{p:.3f}"
                assert width == pytest.approx(100 * p, abs=0.01)
            summary = page.locator(f".answer[data-qid={qid}] .summary").text_content()
            assert summary == f"mood {api['mood']}"
            assert watched.problems == []
        finally:
            watched.close()

def documented_fields() -> dict:
    """docs/architecture.md's table "The record after each step", in its order: {step: the
    Record fields its row names}."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("### The record after each step\n", 1)[1].split("\n#", 1)[0]
    section = section.split("|---|---|\n", 1)[1]  # the rows, not the header
    names = {f.name for f in dataclasses.fields(Record)}
    return {step: set(re.findall(r"`(\w+)`", said)) & names
            for step, said in re.findall(r"^\| (\w+) \| (.+) \|$", section, re.M)}


def test_a_request_runs_the_steps_in_order(service, monkeypatch):
    """Each step of the pipeline, on a real vLLM, fills the Record fields docs/architecture.md's
    table gives it, in the table's order: every field a step replaces is one its row names,
    and a step whose row names a field no earlier step filled replaces one. The number is the
    one the state names, and the choice is its most probable option."""
    table, filled = documented_fields(), []

    def watched(step):
        def run(record):
            out = step(record)
            filled.append((step.__name__, {f.name for f in dataclasses.fields(Record)
                                           if getattr(out, f.name) is not getattr(record, f.name)}))
            return out
        return run
    for group in ("BEFORE_ENGINE", "AT_ENGINE", "AFTER_ENGINE"):
        monkeypatch.setattr(pipeline, group, tuple(map(watched, getattr(pipeline, group))))

    body = {"state": "The customer was charged twice for order 4471.",
            "questions": {"team": {"type": "choice", "criteria": {"billing": None,
                                                                  "tech": None}},
                          "n": {"type": "number", "instructions": "What is the order number?"}},
            "kwargs": {"reasoning": {"mode": "on"}, "calibration": {"reread_below": 1.0},
                       "layout": {"option_sets": False}}}  # a set is never re-read
    doc = ask(service, body)
    assert [step for step, _ in filled] == list(table), filled  # the table's order, each once
    assert list(table) == list(NAMES)
    before = set()
    for step, changed in filled:
        assert changed <= table[step], (step, changed - table[step])
        assert changed or table[step] <= before, (step, "filled nothing")
        before |= changed
    assert doc["answers"]["n"]["number"] == 4471, doc["answers"]["n"]
    team = doc["answers"]["team"]  # the fast profile's 135M model splits billing/tech evenly
    assert team["choice"] == max(team["probabilities"], key=team["probabilities"].get), team
