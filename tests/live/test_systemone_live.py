"""/v1/systemone against the real vLLM CPU server: every question type and checklist row."""
import gzip
import json
import math
from dataclasses import replace

import pytest

from tests.support.live_bodies import (CHOICE, NOUL, PLAIN, SCORE, TICKET, UNTEMPERED, body,
                                       raw)
from tests.support.live_stack import FAST_PROFILE, ROOT, vllm_auth
from tests.support.response_contract import check_response


def ok(stack, request, headers=None):
    status, hdrs, doc = stack.request("POST", "/v1/systemone", request, headers)
    assert status == 200, doc
    assert hdrs["content-type"] == "application/json"
    assert hdrs["x-typesafe-request-id"]
    check_response(request, doc)
    return doc


def test_ready_line_and_health(stack):
    """serve.sh printed one ready line with the URL; /health is 200 with the model."""
    assert stack.output[-1].startswith(f"onepass ready: {stack.url}/v1/systemone")
    status, _, doc = stack.request("GET", "/health")
    assert (status, doc["status"], doc["model"]) == (200, "ok", "onepass-smollm2-135m-instruct")
    assert stack.request("GET", "/health?live=1")[0] == 200


def test_every_question_type_alone_and_together(stack):
    """request.multi: noul, choice and score answer alone and in one request, identically."""
    together = ok(stack, raw({"refund": NOUL, "team": CHOICE, "anger": SCORE}))
    for qid, q in (("refund", NOUL), ("team", CHOICE), ("anger", SCORE)):
        alone = ok(stack, raw({qid: q}))["answers"][qid]
        for key, value in alone.items():
            if isinstance(value, float):
                assert abs(value - together["answers"][qid][key]) <= 0.02
    assert together["model"] == "onepass-smollm2-135m-instruct"
    assert together["usage"]["input_tokens"] > 100


@pytest.mark.parametrize("state", [TICKET, {"subject": "Double charge", "body": TICKET,
                                            "customer": {"plan": "pro", "tickets": 3}},
                                   [TICKET, "Still waiting.", "Any news?"]])
def test_state_forms(stack, state):
    """request.state: string, object and array states answer."""
    ok(stack, body({"refund": NOUL}, state=state))


def test_model_names(stack):
    """request.model-alias: jev-latest resolves; a concrete name echoes; unknown is 404."""
    assert ok(stack, body({"r": NOUL}))["model"] == "onepass-smollm2-135m-instruct"
    pinned = dict(body({"r": NOUL}), model="onepass-smollm2-135m-instruct")
    assert ok(stack, pinned)["model"] == "onepass-smollm2-135m-instruct"
    status, _, doc = stack.request("POST", "/v1/systemone", dict(body({"r": NOUL}), model="nope"))
    assert status == 404 and doc["detail"]["error_type"] == "not_found"
    status, _, doc = stack.request("GET", "/v1/models")
    assert status == 200
    names = [m["name"] for m in doc["models"]]
    assert names == ["onepass-smollm2-135m-instruct", "jev-latest"]
    assert all(isinstance(m[k], str) for m in doc["models"] for k in ("description", "release_date"))


def test_question_ids_round_trip_and_do_not_matter(stack):
    """request.question-ids + semantics.question-id: odd ids echo, answers do not move."""
    base = ok(stack, raw({"refund": NOUL}))["answers"]["refund"]["noul"]
    for qid in ("ticket-1", "q.2", "with space", "질문", "🎯"):
        got = ok(stack, raw({qid: NOUL}))["answers"][qid]["noul"]
        assert abs(got - base) <= 0.02, qid


def test_batching_and_order_do_not_matter(stack):
    """semantics.batching / question-order: extra questions and reversed order change nothing."""
    three = {"refund": NOUL, "team": CHOICE, "anger": SCORE}
    base = ok(stack, raw(three))["answers"]
    more = dict(three, urgent={"type": "noul", "instructions": "Is it urgent?"},
                lang={"type": "choice", "criteria": {"English": None, "Korean": None}})
    rev = dict(reversed(list(three.items())))
    for other in (ok(stack, raw(more))["answers"], ok(stack, raw(rev))["answers"]):
        assert abs(other["refund"]["noul"] - base["refund"]["noul"]) <= 0.02
        for qid in ("team", "anger"):
            for k, p in base[qid]["probabilities"].items():
                assert abs(other[qid]["probabilities"][k] - p) <= 0.02


def test_unicode_options_round_trip(stack):
    """request.unicode: Korean state and option names come back byte-identical."""
    q = {"type": "choice", "instructions": "어떤 문의인가요?",
         "criteria": {"환불 요청": None, "배송 문의": None, "🙂 기타": None}}
    doc = ok(stack, body({"kind": q}, state="두 번 결제되었어요 😡 환불해 주세요"))
    assert list(doc["answers"]["kind"]["probabilities"]) == ["환불 요청", "배송 문의", "🙂 기타"]


def test_unknown_fields_and_structured_text(stack):
    """request.unknown-fields + request.structured-text: ignored extras; objects as text."""
    ok(stack, body({"r": NOUL}, x_trace_id="t", seed=7, reasoning={"effort": "low"}))
    questions = {
        "n": {"type": "noul", "instructions": {"task": "refund?", "include": ["charges"]},
              "criteria": {"true": {"means": "asks"}, "false": ["does", "not"]}},
        "c": {"type": "choice", "instructions": ["Pick", "a team"],
              "criteria": {"Billing": {"d": "pay"}, "Technical": ["bugs"], "Sales": "sell"}},
        "s": {"type": "score", "instructions": {"q": "anger"},
              "criteria": [{"l": "calm"}, {"l": "angry"}]},
    }
    doc = ok(stack, body(questions))
    assert doc["answers"]["s"]["legend"] == {"0": {"l": "calm"}, "1": {"l": "angry"}}


@pytest.mark.parametrize("criteria", [{"true": "Asks for a refund", "false": "Does not"},
                                      {"true": "Asks for a refund"}, {"false": "Does not"}, None])
def test_noul_criteria_forms(stack, criteria):
    """noul.criteria + noul.no-instructions: every criteria form answers."""
    ok(stack, body({"r": dict(NOUL, criteria=criteria)}))
    if criteria:
        ok(stack, body({"r": {"type": "noul", "criteria": criteria}}))


def test_choice_null_descriptions_and_sizes(stack):
    """choice.null-description + choice.options + score.levels: 2..255 options, 2..10 levels."""
    ok(stack, body({"t": {"type": "choice", "criteria": {"Billing": None, "Technical": None,
                                                          "Sales": None}}}))
    for n in (2, 26, 64, 255):
        criteria = {"Billing": None, **{f"Queue {i:03}": None for i in range(1, n)}}
        ok(stack, body({"t": {"type": "choice", "instructions": "Which queue?",
                              "criteria": criteria}}, state="Refund please."))
    for n in (2, 3, 5, 10):
        ok(stack, body({"s": {"type": "score", "criteria": [f"level {i}" for i in range(n)]}}))


INVALID = {
    "not-json": b'{"model": "jev-latest", "state": "x", "questions": {',
    "missing-state": {"model": "jev-latest", "questions": {"r": NOUL}},
    "missing-questions": {"model": "jev-latest", "state": "x"},
    "empty-questions": body({}),
    "missing-type": body({"r": {"instructions": "x"}}),
    "boolean-type": body({"r": {"type": "boolean", "instructions": "x"}}),
    "empty-choice": body({"c": {"type": "choice", "criteria": {}}}),
    "score-map": body({"s": {"type": "score", "criteria": {"0": "a", "1": "b", "2": "c"}}}),
    "one-option": body({"c": {"type": "choice", "criteria": {"a": None}}}),
    "256-options": body({"c": {"type": "choice", "criteria": {str(i): None for i in range(256)}}}),
    "one-level": body({"s": {"type": "score", "criteria": ["a"]}}),
    "11-levels": body({"s": {"type": "score", "criteria": ["a"] * 11}}),
    "null-level": body({"s": {"type": "score", "criteria": ["a", None]}}),
    "null-state": body({"r": NOUL}, state=None),
}
CAPACITY = {"one-option": "a choice needs at least two options",
            "256-options": "options per choice", "one-level": "a score takes 2 to 10 levels",
            "11-levels": "a score takes 2 to 10 levels"}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_requests_get_422_detail(stack, name):
    """errors.reject-invalid + validation-shape + no-5xx: 422 detail[] rooted at body."""
    status, hdrs, doc = stack.request("POST", "/v1/systemone", INVALID[name])
    assert status == 422, doc
    assert hdrs["content-type"] == "application/json" and hdrs["x-typesafe-request-id"]
    assert doc["detail"] and all(d["loc"][0] == "body" and isinstance(d["msg"], str)
                                 and isinstance(d["type"], str) for d in doc["detail"])
    if name in CAPACITY:
        assert CAPACITY[name] in json.dumps(doc)


def test_routes_and_methods(stack):
    """http.endpoint: GET on the real route is 405, an unknown route 404, both JSON."""
    assert stack.request("GET", "/v1/systemone")[0] == 405
    status, _, doc = stack.request("POST", "/v1/conformance-no-such-route", body({"r": NOUL}))
    assert status == 404 and doc["detail"]["error_type"] == "not_found"
    assert stack.request("POST", "/systemone", body({"r": NOUL}))[0] == 200


def test_auth_ignored_when_off(stack):
    """auth.ignored-when-off: any Authorization header is accepted without a key."""
    ok(stack, body({"r": NOUL}), headers={"Authorization": "Bearer some-key"})


def test_gzip_and_zstd_bodies(stack):
    """transport: gzip and zstd request bodies decode to the same answers as plain JSON."""
    from backports import zstd
    request = raw({"r": NOUL, "t": CHOICE}, state=TICKET * 8)
    data = json.dumps(request).encode()
    plain = ok(stack, request)
    for encoding, packed in (("gzip", gzip.compress(data)), ("zstd", zstd.compress(data))):
        status, _, doc = stack.request("POST", "/v1/systemone", packed,
                                       {"Content-Encoding": encoding})
        assert status == 200, doc
        assert abs(doc["answers"]["r"]["noul"] - plain["answers"]["r"]["noul"]) <= 0.02


@pytest.mark.parametrize("override", [False, True], ids=["embedded-profile", "plain-untempered"])
def test_answers_are_the_models_label_distribution(stack, override):
    """readout: answers are vLLM's label log-probs, per read less the profile's label-position
    prior, tempered by its temperature and renormalised, the reads (option orders) averaged and shrunk toward uniform by
    the disagreement between them; recomputed here through vLLM's prompt_logprobs, both with the
    embedded profile's defaults and with every technique off and no temperature (kwargs). The
    profile's choices are read as option sets, which no text prompt can reproduce: here they
    are read as a listing (kwargs), its prior and temperature the profile's; set reads are
    checked against an HF reference in test_sets_live.py."""
    from onepass import config
    from onepass.api import systemone
    from onepass.pipeline import offline
    from onepass.prompt.layout import layout
    from onepass.backend.probes import verified_labels
    from onepass.backend.engine import Engine
    _, profile = config.load_profile(str(ROOT / "serve_config.json"), FAST_PROFILE)
    if override:
        profile = replace(profile, layout=config.Layout(),
                          calibration=config.Calibration(UNTEMPERED["temperature"]))
    engine = Engine(stack.vllm_url, profile.served_model_name, timeout_s=120, num_connections=2,
                    key=stack.vllm_key)
    labels = verified_labels(engine, profile)
    engine.close()
    q = {"c": {"type": "choice", "instructions": "What colour is named in the record?",
               "criteria": {"red": None, "blue": None, "green": None}}}
    kwargs = ({"kwargs": {"layout": PLAIN, "calibration": UNTEMPERED}} if override else
              {"kwargs": {"layout": {"option_sets": False}}})
    profile = replace(profile, layout=replace(profile.layout, option_sets=False))
    temperature, shrink = profile.calibration.temperature["choice"], profile.layout.shrink
    # A temperature T divides every log-odds, so probabilities (and their errors) move 1/T as far.
    tolerance = 1e-3 / temperature
    seen = []
    for state in ("The colour is red.", "The colour is blue."):
        request = body(q, state=state, **kwargs)
        got = list(ok(stack, request)["answers"]["c"]["probabilities"].values())
        decision, _ = offline(systemone, request, max_questions=10)
        per_read = []
        for read in layout(decision, profile, labels):
            # an independent path: each label appended to the prompt, scored by prompt_logprobs
            weights = [0.0] * 3
            prior = profile.calibration.label_prior.get("choice", {}).get("3", [0.0] * 3)
            positions = [read.order_of_label[:i].count(o) if read.order_of_label else i
                         for i, o in enumerate(read.order_of_label or read.label_token_ids)]
            for token_id, option, position in zip(read.label_token_ids, read.option_of_label,
                                                  positions):
                label = next(text for text, tid in labels.choice if tid == token_id)
                doc = stack.request("POST", "/v1/completions", {
                    "model": profile.served_model_name, "prompt": read.prompt + label,
                    "max_tokens": 1, "prompt_logprobs": 0, "add_special_tokens": False},
                    headers=vllm_auth(stack.vllm_url), base=stack.vllm_url)[2]
                logprob = doc["choices"][0]["prompt_logprobs"][-1][str(token_id)]["logprob"]
                weights[option] += math.exp((logprob - prior[position]) / temperature)
            per_read.append([w / sum(weights) for w in weights])
        mean = [sum(col) / len(per_read) for col in zip(*per_read)]
        spread = sum(0.5 * sum(abs(a - b) for a, b in zip(d, mean)) for d in per_read)
        weight = shrink * spread / len(per_read)
        want = [(1 - weight) * p + weight / 3 for p in mean]
        assert len(per_read) == (profile.layout.orders if profile.layout.orders_as_reads else 1)
        for p, w in zip(got, want):
            assert abs(p - w) <= tolerance, (got, want, per_read)
        seen.append(got)
    assert max(abs(a - b) for a, b in zip(*seen)) > tolerance
