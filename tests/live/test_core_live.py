"""The decision core in process, against the session's real vLLM (no HTTP edge):
(1) adding a question kind is one module, one registry line and its profile keys: two toy kinds
    defined here (a label-read kind with labels of its own, and a kind answered by a
    constrained generation) are registered, a copy of the profile file gains their keys, and a
    Service built as shim.py builds it verifies their labels, warms them up and answers them
    on /v1/systemone, beside the built-in kinds, with nothing else changed;
(2) a request runs the steps marked in onepass/ (`# step: <name>`) in the order onepass.STEPS
    lists them (a line tracer records which marked lines run).
The toy kinds are removed from the registry after their test."""
import json
import sys

import pytest
from tests.support.paths import ROOT

from onepass import STEPS, config, kinds
from onepass.api import systemone
from onepass.decision import Answer, Option
from onepass.kinds.base import Generation, Kind, Limit, Plan, best, generation_refusal
from onepass.server import Service

MOODS = ("negative", "neutral", "positive")


class Mood(Kind):
    """A toy label-read kind: a fixed three-way mood, read from three labels of its own."""
    name, systemone, decisions = "mood", "mood", None
    label_key, labels_needed = "mood_labels", "3"
    systemone_keys = frozenset({"type", "instructions"})
    warmup_short = ("mood", {"type": "mood"})

    def labels_ok(self, labels) -> bool:
        return len(labels) == 3

    def warmup_body(self, state, image_url=""):
        return {"state": state, "questions": {"mood": {"type": "mood"}}}

    def listings(self, q, labels, opts):
        pairs = labels.mood
        lines = [f"Question: {q.instructions or 'What is the mood of the record?'}"]
        lines += [f"{label} means: {mood}" for (label, _), mood in zip(pairs, MOODS)]
        lines.append(f"Reply with {', '.join(label for label, _ in pairs)} only.")
        return [(lines, pairs, (0, 1, 2), (0, 0, 0))]

    def answer(self, probs, question):
        return Answer(self.name, tuple(probs), max(probs), 0.0, best(probs))

    def systemone_options(self, criteria, loc, check, max_options, instructions=None):
        return [Option(mood, None) for mood in MOODS]

    def systemone_answer(self, q, a, legend):
        return {"type": "mood", "mood": MOODS[a.best],
                "probabilities": dict(zip(MOODS, a.probabilities))}


class Year(Kind):
    """A toy generated kind: a four-digit year under a regular expression, no label read."""
    name, systemone, decisions = "year", "year", None
    reads, rereads, thinks = False, False, None
    systemone_keys = frozenset({"type", "instructions"})

    def labels_ok(self, labels) -> bool:
        return True

    def warmup_body(self, state, image_url=""):
        return {"state": state, "questions": {"y": {"type": "year", "instructions": "When?"}}}

    def plan(self, q, job):
        return Plan(generation=Generation(q, {"regex": "(19|20)[0-9]{2}"}, 8))

    def combine(self, q, answers, generated, job):
        text, tokens, cut, _ = generated
        year = None if cut else int(text)
        return Answer(self.name, (), 1.0 if year else 0.0, year or 0, 0, number=year, text=text)

    def limit(self, settings, facts):
        return Limit(2, generation_refusal("year", facts.structured))

    def listings(self, q, labels, opts):
        return [([f"Question: {q.instructions}", "Reply with the year only."], (), (), ())]

    def systemone_options(self, criteria, loc, check, max_options, instructions=None):
        return []

    def systemone_answer(self, q, a, legend):
        return {"type": "year", "year": a.number, "text": a.text}


@pytest.fixture(scope="module")
def service(stack, tmp_path_factory):
    """A Service on the session's vLLM with the toy kinds registered and their profile keys
    in a copy of serve_config.json; warmed up (its guard and warm-up run)."""
    toys = (Mood(), Year())
    for toy in toys:
        kinds.register(toy)  # the one registry line each kind needs
    try:
        doc = json.loads((ROOT / "serve_config.json").read_text())
        profile = doc["profiles"][doc["default_profile"]]
        profile["mood_labels"] = ["X", "Y", "Z"]  # its profile keys: labels ...
        profile["calibration"]["temperature"]["mood"] = 1.0  # ... and a temperature
        path = tmp_path_factory.mktemp("toy") / "serve_config.json"
        path.write_text(json.dumps(doc))
        settings = config.load(["--port", "0", "--vllm", stack.vllm_url, "--config", str(path)],
                               environ={})
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


def test_a_request_runs_the_steps_in_order(service):
    """Every marked step runs, first in the order STEPS lists them (a thought re-reads, so
    fit and reads run again later; only first runs are compared)."""
    marks = {}
    for path in (ROOT / "onepass").rglob("*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "# step: " in line:
                marks[(str(path), n)] = line.split("# step: ")[1].strip()
    ran = []

    def trace(frame, event, arg):
        if event == "line":
            step = marks.get((frame.f_code.co_filename, frame.f_lineno))
            if step and step not in ran:
                ran.append(step)
        return trace

    body = {"state": "The customer was charged twice for order 4471.",
            "questions": {"team": {"type": "choice", "criteria": {"billing": None,
                                                                  "tech": None}},
                          "n": {"type": "number", "instructions": "What is the order number?"}},
            "kwargs": {"reasoning": {"mode": "on"}, "calibration": {"reread_below": 1.0},
                       "layout": {"option_sets": False}}}  # a set is never re-read
    sys.settrace(trace)
    try:
        doc = ask(service, body)
    finally:
        sys.settrace(None)
    assert doc["answers"]["team"]["choice"] in ("billing", "tech")
    assert tuple(ran) == STEPS, ran
