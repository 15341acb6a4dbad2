"""Prompt techniques and calibration options through a real shim and vLLM: per-request layout
overrides, and the re-read of uncertain answers (a profile with reread_below set)."""
import json
import math

from tests.support.json_http import request
from tests.support.live_bodies import PLAIN, UNTEMPERED
from tests.support.live_stack import config_doc, ROOT, free_port, start_shim, wait_health
from tests.support.response_contract import check_response

CHOICE = {"type": "choice", "instructions": "Which team should handle it?",
          "criteria": {"billing": "Payments and refunds", "tech": "Bugs and outages",
                       "sales": "Pricing and upgrades"}}
BODY = {"model": "jev-latest", "state": "I was charged twice for order 4471; refund one charge.",
        "questions": {"team": CHOICE, "refund": {"type": "noul", "instructions": "Refund?"}}}


def answer(base, body):
    status, _, doc = request(base, "POST", "/v1/systemone", body)
    assert status == 200, doc
    check_response(body, doc)
    return doc




def test_layout_overrides_change_the_reading(stack):
    """kwargs.layout: each technique, on top of every technique off, answers in the contract's
    shape and changes the prompt (so the answer); input tokens grow with repetition and
    listings. Untempered (kwargs.calibration), so the differences are the model's."""
    plain = answer(stack.url, {**BODY, "kwargs": {"layout": PLAIN, "calibration": UNTEMPERED}})
    for layout in ({"repeat": 2}, {"orders": 2}, {"orders": 2, "orders_as_reads": True,
                                                  "shrink": 1.0}, {"question_first": True},
                   {"guard_line": False}):
        doc = answer(stack.url, {**BODY, "kwargs": {"layout": {**PLAIN, **layout},
                                                    "calibration": UNTEMPERED}})
        got, base = doc["answers"]["team"]["probabilities"], plain["answers"]["team"]["probabilities"]
        assert abs(math.fsum(got.values()) - 1) < 1e-9
        assert max(abs(got[k] - base[k]) for k in got) > 1e-4, layout
        if layout.get("repeat") or layout.get("orders"):
            assert doc["usage"]["input_tokens"] > plain["usage"]["input_tokens"]
    status, _, doc = request(stack.url, "POST", "/v1/systemone",
                             {**BODY, "kwargs": {"layout": {"repeat": 99}}})
    assert status == 422 and doc["detail"][0]["loc"] == ["body", "kwargs", "layout"]


def test_calibration_overrides_apply_the_temperature(stack):
    """kwargs.calibration: the noul's log-odds divide by the temperature given (the other kinds
    keep the profile's), the floor lifts the chosen side, and a bad value is a 422 at its key."""
    def noul(calibration):
        doc = answer(stack.url, {**BODY, "kwargs": {"calibration": calibration}})
        return doc["answers"]["refund"]["noul"]
    one = noul(UNTEMPERED)
    three = noul({"temperature": {"noul": 3.0}, "label_prior": {}})  # the prior off, as in one
    log_odds = math.log(one / (1 - one))
    assert abs(log_odds) > 0.05  # far enough from 1/2 for the check to mean something
    assert abs(math.log(three / (1 - three)) - log_odds / 3) < 1e-6
    floored = noul({**UNTEMPERED, "noul_floor": 0.95})
    assert abs(floored - (max(one, 0.95) if one >= 0.5 else min(one, 0.05))) < 1e-6
    status, _, doc = request(stack.url, "POST", "/v1/systemone",
                             {**BODY, "kwargs": {"calibration": {"temperature": {"noul": -1}}}})
    assert status == 422 and doc["detail"][0]["loc"] == ["body", "kwargs", "calibration"]


def test_reread_below_threshold_blends_two_to_one(stack, tmp_path):
    """calibration.reread_below: an uncertain choice is read again with the request written
    twice and blended 2/3 first + 1/3 second; the response says how many were re-read."""
    doc = config_doc()
    doc["profiles"][doc["default_profile"]]["calibration"]["reread_below"] = 0.999
    doc["profiles"][doc["default_profile"]]["layout"]["option_sets"] = False  # sets: read once
    config = tmp_path / "serve_config.json"
    config.write_text(json.dumps(doc))
    port = free_port()
    proc = start_shim(stack.vllm_url, port, args=("--config", str(config)))
    base = f"http://127.0.0.1:{port}"
    try:
        wait_health(base, {"ok"})
        got = answer(base, BODY)
        assert got["x_effort_used"]["reread"] == {"below": 0.999, "first_weight": 0.6667,
                                                  "questions": 1}  # the noul is never re-read
        first = answer(stack.url, {**BODY, "kwargs": {"layout": {"option_sets": False}}})
        first = first["answers"]["team"]["probabilities"]
        second = answer(stack.url, {**BODY, "kwargs": {"layout": {"repeat": 2}}})
        second = second["answers"]["team"]["probabilities"]
        for k, p in got["answers"]["team"]["probabilities"].items():
            assert abs(p - (2 / 3 * first[k] + 1 / 3 * second[k])) < 1e-6
    finally:
        proc.terminate()
        proc.wait(timeout=30)
