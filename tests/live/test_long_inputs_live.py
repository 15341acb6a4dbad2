"""Long states through the real shim and vLLM: never an error for length, each question fitted
with vLLM's own token counts, the planted paragraph kept, the two-way budget learnt, and many
questions on a long state cut within the token budget in a bounded number of /tokenize calls."""
import json
import re
import urllib.request

import pytest

from tests.support.json_http import request
from tests.support.live_stack import (FAST_PROFILE, ROOT, config_doc, free_port, start_shim,
                                      wait_health)
from tests.support.response_contract import check_response


def tokenize_calls(vllm_url) -> float:
    """The /tokenize calls vLLM has answered, from its /metrics (its HTTP instrumentation)."""
    text = urllib.request.urlopen(vllm_url + "/metrics", timeout=30).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if re.match(r'http_requests_total\{.*handler="/tokenize"', line))


def many_notes(n: int) -> str:
    """n distinct short paragraphs, PLANTED among them: a state of many parts."""
    notes = [f"Note {i}: the parcel left depot {i % 97} on time." for i in range(n)]
    notes.insert(n // 2, PLANTED)
    return "\n\n".join(notes)

CONTEXT = 1024  # the second shim's profile: a small context keeps the CPU reads short
BUDGET = 200_000  # the second shim's --max-prompt-tokens: about 195 questions cut to CONTEXT
FILLER = ("Paragraph {i}: the weather in the harbour town stayed grey, with rain over the hills "
          "and a slow wind from the sea.")
PLANTED = "Invoice 4471 was charged twice; the customer asks for one charge to be refunded."
NOUL = {"type": "noul", "instructions": "Does the customer ask for a refund?"}
CHOICE = {"type": "choice", "instructions": "Which team should handle the invoice?",
          "criteria": {"billing": "Payments and refunds", "shipping": "Parcels"}}


def text_state(tokens: int, planted_at: float | None = 0.5) -> str:
    """About `tokens` tokens of filler (a paragraph is ~30 tokens), PLANTED at that fraction."""
    paragraphs = [FILLER.format(i=i) for i in range(max(2, tokens // 30))]
    if planted_at is not None:
        paragraphs.insert(int(len(paragraphs) * planted_at), PLANTED)
    return "\n\n".join(paragraphs)


@pytest.fixture(scope="module")
def small(stack, tmp_path_factory):
    """A second shim on the session's vLLM whose profile allows CONTEXT tokens."""
    doc = config_doc()
    doc["profiles"][doc["default_profile"]]["max_model_len"] = CONTEXT
    config = tmp_path_factory.mktemp("small") / "serve_config.json"
    config.write_text(json.dumps(doc))
    port = free_port()
    proc = start_shim(stack.vllm_url, port, args=("--config", str(config),
                                                  "--max-prompt-tokens", str(BUDGET)))
    base = f"http://127.0.0.1:{port}"
    wait_health(base, {"ok"}, timeout=300)
    yield base
    proc.terminate()
    proc.wait(timeout=30)


def cut(doc: dict) -> dict:
    return {s["question"]: s for s in doc["x_effort_used"]["state_selection"]}


@pytest.mark.parametrize("times", [2, 50])
def test_text_states_up_to_50x_the_context(small, times):
    """request: a state of `times` x the context answers 200; each question says what it kept
    (at most the context) of the whole, and usage counts the whole input."""
    body = {"model": "jev-latest", "state": text_state(times * CONTEXT),
            "questions": {"refund": NOUL, "team": CHOICE}}
    status, _, doc = request(small, "POST", "/v1/systemone", body, timeout=600)
    assert status == 200, doc
    check_response(body, doc)
    selection = cut(doc)
    assert set(selection) == {"refund", "team"}
    for s in selection.values():
        assert s["method"] == "bm25"
        assert s["kept_tokens"] < CONTEXT < times * CONTEXT * 0.8 < s["total_tokens"]
    assert doc["usage"]["input_tokens"] >= sum(s["total_tokens"] for s in selection.values())


def test_json_and_openai_states_50x(small):
    """A JSON state (leaves with key paths) and an OpenAI message input, both 50x the context."""
    state = {"ticket": {"id": 4471, "events": [FILLER.format(i=i) for i in range(1700)]}}
    state["ticket"]["events"].insert(850, PLANTED)
    body = {"model": "jev-latest", "state": state, "questions": {"refund": NOUL}}
    status, _, doc = request(small, "POST", "/v1/systemone", body, timeout=600)
    assert status == 200, doc
    assert cut(doc)["refund"]["total_tokens"] > 40 * CONTEXT
    status, _, doc = request(small, "POST", "/v1/decisions", {
        "model": "jev-latest", "input": [{"role": "user", "content": text_state(50 * CONTEXT)}],
        "questions": [{"type": "predicate", "name": "refund",
                       "instructions": NOUL["instructions"]}]}, timeout=600)
    assert status == 200, doc
    [s] = doc["x_effort_used"]["state_selection"]
    assert (s["question"], s["name"]) == (0, "refund") and s["kept_tokens"] < CONTEXT


def test_head_tail_for_comparison(small):
    body = {"model": "jev-latest", "state": text_state(5 * CONTEXT),
            "questions": {"refund": NOUL}, "kwargs": {"layout": {"state_selection": "head_tail"}}}
    status, _, doc = request(small, "POST", "/v1/systemone", body, timeout=600)
    assert status == 200, doc
    assert cut(doc)["refund"]["method"] == "head_tail"


def test_many_questions_on_a_long_state_within_the_token_budget(small, stack):
    """A state of 3,000 parts asked 12 questions is cut within the context for each, with a
    bounded number of /tokenize calls (not one per part, nor per question); asked 400 it would
    cost more than --max-prompt-tokens: a 422 saying so, before any part is counted."""
    from onepass.prompt import fitting
    state = many_notes(3000)
    questions = {f"q{k}": {"type": "noul", "instructions": f"Was invoice {k} charged twice?"}
                 for k in range(400)}
    before = tokenize_calls(stack.vllm_url)
    body = {"model": "jev-latest", "state": state, "questions": dict(list(questions.items())[:12])}
    status, _, doc = request(small, "POST", "/v1/systemone", body, timeout=900)
    made = tokenize_calls(stack.vllm_url) - before
    assert status == 200, doc
    assert len(cut(doc)) == 12 and all(s["kept_tokens"] < CONTEXT for s in cut(doc).values())
    # the whole state, the bare prompts, the parts (one batch), then a batch per round
    assert 0 < made <= fitting.MAX_ROUNDS + 3, made
    before = tokenize_calls(stack.vllm_url)
    status, _, doc = request(small, "POST", "/v1/systemone", {**body, "questions": questions},
                             timeout=900)
    made = tokenize_calls(stack.vllm_url) - before
    assert status == 422, doc
    [problem] = doc["detail"]
    assert problem["loc"] == ["body", "questions"] and problem["type"] == "too_long", doc
    assert f"at most {BUDGET} per request (--max-prompt-tokens)" in problem["msg"], doc
    assert made <= 2, made  # the whole state and the bare prompts: no part counted


def test_batched_counts_are_vllms_own(stack):
    """The separator start-up proves splits a batch exactly with vLLM's tokenizer: every
    text's count in one call equals its count alone."""
    from onepass import config
    from onepass.backend import token_counts
    from onepass.backend.engine import Engine
    _, profile = config.load_profile(str(ROOT / "serve_config.json"), FAST_PROFILE)
    engine = Engine(stack.vllm_url, profile.served_model_name, timeout_s=120, num_connections=8,
                    key=stack.vllm_key)
    try:
        sep = token_counts.separator(engine.ids, profile)
        assert sep is not None
        texts = [p for p in many_notes(300).split("\n\n")] + [
            " lead", "trail ", "\n\n", "ünïcödé 日本語", '{"a": [1, 2]}', "x" * 500]
        alone = [len(engine.ids(t)) for t in texts]
        made = []
        assert engine.count(texts, sep, made.append) == alone
        assert made == [1]
    finally:
        engine.close()


def test_planted_paragraph_kept_by_vllms_token_counts(stack):
    """fitting with vLLM's tokenizer: the planted paragraph in the middle of a record 20x the
    budget is in every fitted prompt, and each prompt is within the budget by vLLM's count."""
    from onepass import config
    from onepass.prompt import fitting
    from onepass.backend.engine import Engine
    from onepass.backend.probes import verified_labels
    from onepass.decision_model import Decision, Option, Question
    _, profile = config.load_profile(str(ROOT / "serve_config.json"), FAST_PROFILE)
    engine = Engine(stack.vllm_url, profile.served_model_name, timeout_s=120, num_connections=8,
                    key=stack.vllm_key)
    try:
        labels = verified_labels(engine, profile)
        q = Question("choice", CHOICE["instructions"],
                     tuple(Option(k, v) for k, v in CHOICE["criteria"].items()))
        d = Decision(profile.model_name, text_state(20 * 500), (q,))
        reads, [selection] = fitting.fit(d, profile, labels, engine.count, 500)
        assert len(reads) == profile.layout.orders  # every order of the options is fitted
        for read, n in zip(reads, engine.count([r.prompt for r in reads])):
            assert PLANTED in read.prompt and n <= 500
        assert selection.total_tokens > 15 * 500
    finally:
        engine.close()


def test_two_way_budget_is_learnt(stack):
    """A two-way request longer than the plugin's one-step budget (1,024 here) but within the
    context is fitted to the budget the plugin names, instead of failing."""
    body = {"model": "jev-latest", "state": text_state(3000), "attention_mode": "two-way",
            "questions": {"refund": NOUL}}
    status, _, doc = stack.request("POST", "/v1/systemone", body)
    assert status == 200, doc
    assert doc["x_attention_mode"] == "bidirectional"
    assert cut(doc)["refund"]["kept_tokens"] <= 1024 < cut(doc)["refund"]["total_tokens"]
