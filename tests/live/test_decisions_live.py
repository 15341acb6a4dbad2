"""/v1/decisions through the real openai==3.51.0 client against the real stack (shim + vLLM), and the
same decision through both APIs."""
import pytest

from tests.support.json_http import request
from tests.support.live_stack import free_port, start_shim, vllm_auth, wait_health
from tests.support.openai_calls import CHOICE, PREDICATE, SCORE, TICKET
from tests.support.openai_client import client


def check_decision(out: dict, names: list) -> list:
    """Every answer typed and named (the tool runner's checks), usage six ints, sums to 1."""
    assert out["usage_types"] == ["int"]
    usage = out["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] == 0
    assert usage["total_tokens"] == usage["input_tokens"]
    assert 0 <= usage["input_tokens_details"]["cached_tokens"] <= usage["input_tokens"]
    answers = out["answers"]
    assert [a["name"] for a in answers] == names
    for a in answers:
        assert {"name", "type"} <= set(a["_set"])
        if a["type"] == "predicate":
            assert 0 <= a["probability"] <= 1
        else:
            probs = [p["probability"] for p in a["probabilities"]]
            assert abs(sum(probs) - 1) < 1e-6 and 0 <= a["confidence"] <= 1
    return answers


def test_every_question_type(stack):
    """openai: predicate, choice, score parsed by the client; score = Σ i·p over {value, label}."""
    out = client(stack.url + "/v1", "types")
    assert out["model"] == "onepass-smollm2-135m-instruct"
    predicate, choice, score = check_decision(out, ["refund", "team", "anger"])
    assert [p["value"] for p in choice["probabilities"]] == ["billing", "tech"]
    best = max(choice["probabilities"], key=lambda p: p["probability"])
    assert choice["choice"] == best["value"]
    assert [(p["value"], p["label"]) for p in score["probabilities"]] == \
        [(0, "calm"), (1, "annoyed"), (2, "furious")]
    assert abs(score["score"] - sum(p["value"] * p["probability"]
                                    for p in score["probabilities"])) < 1e-9


def test_boolean_choice_values_round_trip(stack):
    """openai: true, false and "true" are three choices; each comes back with its JSON type."""
    out = client(stack.url + "/v1", "booleans")
    [answer] = check_decision(out, [None])
    assert [p["value"] for p in answer["probabilities"]] == [True, False, "true"]
    assert out["choice_types"] == [["bool", "bool", "str",
                                    type(answer["choice"]).__name__]]
    best = max(answer["probabilities"], key=lambda p: p["probability"])
    assert answer["choice"] == best["value"] and type(answer["choice"]) is type(best["value"])


def test_message_input_with_parts_and_unnamed_question(stack):
    """openai: developer/user/assistant messages, input_text/input_json parts, a tool call and
    its output, instructions as parts, extra_body and cache keys ignored; name null but set."""
    out = client(stack.url + "/v1", "messages")
    unnamed, named = check_decision(out, [None, "team"])
    assert "name" in unnamed["_set"]


def test_tool_runner_completes_a_step(stack):
    """openai: DecisionsToolRunner accepts the answer (name, type, integer usage) and acts."""
    out = client(stack.url + "/v1", "runner")
    assert out["status"] == "unverified"
    [step] = out["decisions"]
    [answer] = check_decision(step, ["next_action"])
    best = max(answer["probabilities"], key=lambda p: p["probability"])
    assert answer["choice"] == best["value"]
    assert out["executed"] == ([] if answer["choice"] == "done" else [answer["choice"]])


def test_alias_without_v1(stack):
    """openai: a base URL without /v1 posts to /decisions, which answers the same."""
    out = client(stack.url, "types")
    check_decision(out, ["refund", "team", "anger"])


@pytest.mark.parametrize("scenario,status,exception,param,code", [
    ("one_choice", 400, "BadRequestError", "questions[0].choices", None),
    ("no_questions", 400, "BadRequestError", "questions", None),
    ("unknown_model", 404, "NotFoundError", "model", "model_not_found"),
    ("stream", 400, "BadRequestError", "stream", None),
    ("remote_image", 400, "BadRequestError", "input[0].content[0].image_url", None),
    ("data_image", 400, "BadRequestError", "questions[0].instructions[0].image_url", None),
])
def test_errors_become_the_right_exceptions(stack, scenario, status, exception, param, code):
    """openai: each error status parses into its exception with .type, .param and .code."""
    out = client(stack.url + "/v1", scenario)
    assert (out["exception"], out["status"], out["param"], out["code"]) == \
        (exception, status, param, code)
    assert out["type"] == "invalid_request_error" and out["message"]


def test_auth_401_invalid_api_key(stack):
    """openai: with a key configured, a wrong key is AuthenticationError invalid_api_key, a
    missing one 401 in OpenAI's shape, and the right one answers."""
    port = free_port()
    proc = start_shim(stack.vllm_url, port, env_extra={"ONEPASS_API_KEY": "sk-right"})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_health(base, {"ok"})
        out = client(base + "/v1", "auth", key="sk-wrong")
        assert (out["exception"], out["status"], out["code"]) == \
            ("AuthenticationError", 401, "invalid_api_key")
        status, _, doc = request(base, "POST", "/v1/decisions",
                                 {"model": "jev-latest", "input": TICKET, "questions": [PREDICATE]})
        assert status == 401 and doc["error"]["code"] == "invalid_api_key"
        check_decision(client(base + "/v1", "types", key="sk-right"), ["refund", "team", "anger"])
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_same_decision_through_both_apis(stack):
    """The same state and questions via /v1/systemone and /v1/decisions: same probabilities."""
    status, _, so = stack.request("POST", "/v1/systemone", {
        "model": "jev-latest", "state": TICKET, "questions": {
            "refund": {"type": "noul", "instructions": PREDICATE["instructions"]},
            "team": {"type": "choice", "instructions": CHOICE["instructions"],
                     "criteria": {"billing": "Payments and refunds", "tech": None}},
            "anger": {"type": "score", "instructions": SCORE["instructions"],
                      "criteria": ["calm", "annoyed: some frustration", "furious"]}}})
    assert status == 200, so
    status, _, oa = stack.request("POST", "/v1/decisions", {
        "model": "jev-latest", "input": TICKET, "questions": [PREDICATE, CHOICE, SCORE]})
    assert status == 200, oa
    predicate, choice, score = oa["answers"]
    assert abs(predicate["probability"] - so["answers"]["refund"]["noul"]) < 1e-4
    for p in choice["probabilities"]:
        assert abs(p["probability"] - so["answers"]["team"]["probabilities"][p["value"]]) < 1e-4
    for p in score["probabilities"]:
        assert abs(p["probability"] - so["answers"]["anger"]["probabilities"][str(p["value"])]) \
            < 1e-4
    assert oa["usage"]["input_tokens"] == so["usage"]["input_tokens"]
    assert oa["x_attention_mode"] == so["x_attention_mode"]


def test_cached_tokens_are_vllms_count(stack):
    """usage.input_tokens_details.cached_tokens: with the state first, the shim prefills the
    shared head (system turn and state) once, so every read, the first one too, is served
    all but the head's last partial block from vLLM's cache."""
    state = " ".join(f"Line {i}: the customer wrote again about order {4400 + i}." for i in range(40))
    base = {"model": "jev-latest", "input": state}
    two = {**base, "questions": [PREDICATE, CHOICE],
           "kwargs": {"layout": {"question_first": False, "orders": 2, "orders_as_reads": True}}}
    status, _, doc = stack.request("POST", "/v1/decisions", two)
    assert status == 200, doc
    cached = doc["usage"]["input_tokens_details"]["cached_tokens"]
    assert 0 < cached < doc["usage"]["input_tokens"]
    head = request(stack.vllm_url, "POST", "/tokenize", {
        "model": "smollm2-135m-instruct", "prompt": state, "add_special_tokens": False},
        vllm_auth(stack.vllm_url))[2]
    reads = 3  # the predicate once, the choice in two orders
    assert cached >= reads * (len(head["tokens"]) - 32), (cached, len(head["tokens"]))
