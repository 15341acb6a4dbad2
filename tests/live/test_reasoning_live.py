"""Number questions and reasoning before answering, end to end on the real stack (serve.sh with
the embedded SmolLM2-135M on vLLM CPU; the tiny vision model for the image route).

The model is tiny: these tests check what the product promises whatever the model's skill
(numbers always parse under the constraint, the gate follows the first read, the same request
gives the same thought, counts add up, limits and logs), not that thinking helps; that is
measured by bench/measure/reasoning_modes.py.
"""
import base64

from tests.support.image_requests import RED
from tests.support.json_http import request
from tests.support.live_stack import FAST_PROFILE, ROOT

from onepass.kinds.number import WHOLE
from onepass.profile import load_profile

STATE = "Order 4471 was delivered 12 days late; the customer was charged twice and is angry."
READS = {"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"},
         "team": {"type": "choice", "instructions": "Which team handles this?",
                  "criteria": {"billing": "payments", "tech": "bugs", "sales": "pricing"}},
         "anger": {"type": "score", "criteria": ["calm", "annoyed", "furious"]}}
LATE = {"type": "number", "instructions": "How many days late was the delivery?"}


def ask(stack, questions, state=STATE, **extra):
    status, _, doc = stack.request("POST", "/v1/systemone", {
        "model": "jev-latest", "state": state, "questions": questions, **extra})
    assert status == 200, doc
    return doc


def reasoning(mode, **more):
    return {"kwargs": {"reasoning": {"mode": mode, **more}}}


def thought(doc) -> dict:
    return {q["question"]: q for q in doc["x_effort_used"]["reasoning"]["questions"]}


def test_number_answers_parse_and_count(stack):
    """Numbers written in the state, asked for without arithmetic: every answer is a number
    (the constraint holds), its text is a plain decimal, the generated tokens are counted."""
    got = []
    for n, words in ((12, "days late"), (391, "items returned"), (7, "calls made")):
        doc = ask(stack, {"n": {"type": "number", "instructions": f"How many {words}?"}},
                  state=f"Case 88{n}: {n} {words}, the customer reports.")
        a = doc["answers"]["n"]
        assert set(a) == {"type", "number", "text", "confidence"} and a["type"] == "number"
        assert WHOLE.fullmatch(a["text"]) and a["number"] == float(a["text"]), a
        assert 0 < a["confidence"] <= 1
        assert doc["usage"]["output_tokens"] >= 1 and "reasoning_tokens" not in doc["usage"]
        got.append(a["number"])
    print("numbers read:", got)


def test_off_auto_on_follow_the_gate(stack):
    """off: nobody thinks; on: every question thinks; auto: exactly the read questions whose
    first answer's top probability is below the profile's tau. Counts: reasoning tokens are
    part of the output tokens, and input tokens grow with the thoughts' and re-reads' prompts."""
    tau = load_profile(str(ROOT / "serve_config.json"), FAST_PROFILE)[1].reasoning.tau
    off = ask(stack, READS, **reasoning("off"))
    assert "x_effort_used" not in off or "reasoning" not in off["x_effort_used"]
    on = ask(stack, {**READS, "late": LATE}, **reasoning("on"))
    assert all(q["thought"] and q["tokens"] > 0 for q in thought(on).values())
    assert 0 < on["usage"]["reasoning_tokens"] <= on["usage"]["output_tokens"]
    assert on["usage"]["input_tokens"] > off["usage"]["input_tokens"]
    auto = ask(stack, READS, **reasoning("auto"))
    for qid, a in off["answers"].items():
        top = a["noul"] if a["type"] == "noul" else max(a["probabilities"].values())
        top = max(top, 1 - top) if a["type"] == "noul" else top
        assert thought(auto)[qid]["thought"] == (top < tau), (qid, top)
        if not thought(auto)[qid]["thought"]:
            assert auto["answers"][qid] == a  # an unsure-free question is answered as with off


def test_the_same_request_thinks_the_same_and_trace_shows_it(stack):
    """Determinism: the same request twice gives the same thoughts and answers. trace: true
    returns each thought's text; without it no text is returned, and no thought is logged."""
    body = {**READS, "late": LATE}
    first = ask(stack, body, **reasoning("on", trace=True))
    again = ask(stack, body, **reasoning("on", trace=True))
    assert first["answers"] == again["answers"] and first["x_thoughts"] == again["x_thoughts"]
    assert [t["question"] for t in first["x_thoughts"]] == list(body)
    plain = ask(stack, body, **reasoning("on"))
    assert "x_thoughts" not in plain and plain["answers"] == first["answers"]
    texts = [t["text"] for t in first["x_thoughts"] if len(t["text"]) > 20]
    for log in stack.log_dir.glob("*.log"):
        content = log.read_text(errors="replace")
        for text in texts:
            assert text[:40] not in content, log.name


def test_a_wall_clock_budget_cuts_thoughts_and_still_answers(stack):
    """budget_ms: 1 ms is over before vLLM writes much: thoughts are cut (and say so), every
    question is still answered in its shape."""
    doc = ask(stack, {**READS, "late": LATE}, **reasoning("on", budget_ms=1))
    assert all(q["cut"] for q in thought(doc).values() if q["thought"])
    assert set(doc["answers"]) == {*READS, "late"}


def test_bad_reasoning_asks_and_limits_are_4xx(stack):
    """kwargs.reasoning problems: 422 at the field on /v1/systemone, 400 on /v1/decisions;
    a number question on /v1/decisions: 400; a bare top-level `reasoning` is ignored."""
    for bad, loc in (({"mode": "always"}, ["body", "kwargs", "reasoning", "mode"]),
                     ({"budget_ms": -5}, ["body", "kwargs", "reasoning", "budget_ms"]),
                     ({"trace": 1}, ["body", "kwargs", "reasoning", "trace"])):
        status, _, doc = stack.request("POST", "/v1/systemone", {
            "model": "jev-latest", "state": STATE, "questions": READS,
            "kwargs": {"reasoning": bad}})
        assert status == 422 and doc["detail"][0]["loc"] == loc, doc
    status, _, doc = stack.request("POST", "/v1/decisions", {
        "model": "jev-latest", "input": STATE, "kwargs": {"reasoning": {"mode": "sometimes"}},
        "questions": [{"type": "predicate", "instructions": "Refund?"}]})
    assert status == 400 and doc["error"]["param"] == "kwargs.reasoning.mode", doc
    status, _, doc = stack.request("POST", "/v1/decisions", {
        "model": "jev-latest", "input": STATE, "questions": [LATE]})
    assert status == 400 and "/v1/systemone" in doc["error"]["message"], doc
    status, _, doc = stack.request("POST", "/v1/systemone", {
        "model": "jev-latest", "state": STATE,
        "questions": {f"n{i}": LATE for i in range(9)}})
    assert status == 422 and "at most 8 number questions" in doc["detail"][0]["msg"], doc
    bare = ask(stack, READS, reasoning={"effort": "high"})
    assert bare["answers"] == ask(stack, READS)["answers"]


def test_decisions_counts_reasoning_tokens(stack):
    """/v1/decisions with kwargs.reasoning on: usage.output_tokens_details.reasoning_tokens
    counts the thoughts, total_tokens adds the output."""
    status, _, doc = stack.request("POST", "/v1/decisions", {
        "model": "jev-latest", "input": STATE, "kwargs": {"reasoning": {"mode": "on"}},
        "questions": [{"type": "predicate", "instructions": "A refund is asked for."}]})
    assert status == 200, doc
    usage = doc["usage"]
    assert usage["output_tokens_details"]["reasoning_tokens"] == usage["output_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_images_think_on_the_chat_route(vision_stack):
    """A vision profile: thoughts and the re-read after them continue the assistant turn on
    vLLM's chat route with the image; the answer keeps its shape."""
    url = "data:image/png;base64," + base64.b64encode(RED).decode()
    doc = ask(vision_stack, {"red": {"type": "noul", "instructions": "Is [image 1] red?"},
                             "n": {"type": "number", "instructions": "How many squares?"}},
              state={"photo": url}, **reasoning("on", trace=True))
    assert all(q["thought"] for q in thought(doc).values())
    assert 0 <= doc["answers"]["red"]["noul"] <= 1 and doc["usage"]["images"] == 1
    assert request(vision_stack.url, "GET", "/health")[0] == 200
