"""The real openai client against a onepass server, one scenario per run, in its own interpreter
(openai 3.51.0 from <venv>/clients, ahead of the venv's newer copy that vLLM needs).

Usage: PYTHONPATH=<venv>/clients python tests/support/openai_calls.py BASE_URL SCENARIO [API_KEY]
The test module imports this file's constants, never openai. Prints one JSON object: what the client parsed (answers as model_dump plus the fields each answer
set), or the exception class and its .status_code/.type/.param/.code.
"""
import json
import sys

PREDICATE = {"type": "predicate", "name": "refund",
             "instructions": "The customer asks for money back."}
CHOICE = {"type": "choice", "name": "team", "instructions": "Which team should handle it?",
          "choices": [{"value": "billing", "description": "Payments and refunds"},
                      {"value": "tech"}]}
SCORE = {"type": "score", "name": "anger", "instructions": "How angry is the customer?",
         "levels": [{"label": "calm"}, {"label": "annoyed", "description": "some frustration"},
                    {"label": "furious"}]}
TICKET = "I was charged twice for order 4471. Please refund one charge."
PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8"
       "DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==")


def decision(d) -> dict:
    return {"model": d.model, "answers": [dict(a.model_dump(), _set=sorted(a.model_fields_set))
                                          for a in d.answers],
            "usage": d.usage.model_dump(),
            "usage_types": sorted({type(v).__name__ for v in (
                d.usage.input_tokens, d.usage.output_tokens, d.usage.total_tokens,
                d.usage.input_tokens_details.cached_tokens,
                d.usage.input_tokens_details.cache_write_tokens,
                d.usage.output_tokens_details.reasoning_tokens)}),
            "choice_types": [[type(p.value).__name__ for p in a.probabilities] + [
                type(a.choice).__name__] for a in d.answers if a.type == "choice"]}


def run(client, scenario: str) -> dict:
    import openai
    create = client.decisions.create
    if scenario == "types":
        return decision(create(model="jev-latest", input=TICKET,
                               questions=[PREDICATE, CHOICE, SCORE]))
    if scenario == "booleans":
        q = {"type": "choice", "instructions": "Should the refund be approved?",
             "choices": [{"value": True}, {"value": False}, {"value": "true"}]}
        return decision(create(model="onepass-smollm2-135m-instruct", input=TICKET, questions=[q]))
    if scenario == "messages":
        items = [{"role": "developer", "content": "Support triage for a web shop."},
                 {"role": "user", "content": [
                     {"type": "input_text", "text": "I was charged twice."},
                     {"type": "input_json", "data": {"order": 4471, "items": ["mug"]}}]},
                 {"role": "assistant", "content": "Let me check.", "phase": "commentary"},
                 {"type": "function_call", "call_id": "c1", "name": "lookup_order",
                  "arguments": "{\"order\": 4471}"},
                 {"type": "function_call_output", "call_id": "c1",
                  "output": "two captured payments"}]
        q = {"type": "predicate",
             "instructions": [{"type": "input_text", "text": "Was the customer charged twice?"}]}
        return decision(create(model="jev-latest", input=items, questions=[q, CHOICE],
                               prompt_cache_key="tenant-a", safety_identifier="user-123",
                               extra_body={"top_logprobs": 5}))
    if scenario == "image":  # a vision profile: the image as an input_image part
        items = [{"role": "user", "content": [
            {"type": "input_text", "text": "Product photo attached."},
            {"type": "input_image", "image_url": PNG, "detail": "low"}]}]
        return decision(create(model="jev-latest", input=items, questions=[PREDICATE, CHOICE]))
    if scenario == "runner":
        from openai.lib.decisions_tool_runner import DecisionsToolRunner
        done = []
        runner = DecisionsToolRunner(
            observe=lambda: f"step {len(done)}",
            candidates=lambda _: ([{"id": "refund", "description": "Refund the duplicate charge",
                                    "execute": lambda: done.append("refund")},
                                   {"id": "escalate", "description": "Escalate to a human",
                                    "execute": lambda: done.append("escalate")}] if not done
                                  else []) + [{"id": "done", "description": "The task is complete",
                                               "done": True}])
        result = runner.run(client, {"model": "jev-latest", "input": "Refund order 4471"},
                            max_steps=3)
        return {"status": result["status"], "executed": done,
                "decisions": [decision(d) for d in result["decisions"]],
                "attempted": result["attempted_candidate_ids"],
                "completed": result["completed_candidate_ids"]}
    if scenario == "models":  # GET /v1/models as the client pages through it
        return {"models": [[m.id, m.object, type(m.created).__name__, m.owned_by]
                           for m in client.models.list()]}
    bad = {"one_choice": dict(model="jev-latest", input=TICKET,
                              questions=[{**CHOICE, "choices": [{"value": "billing"}]}]),
           "unknown_model": dict(model="gpt-6-luna", input=TICKET, questions=[PREDICATE]),
           "remote_image": dict(model="jev-latest", input=[{"role": "user", "content": [
               {"type": "input_image", "image_url": "https://example.com/a.png"}]}],
               questions=[PREDICATE]),
           "data_image": dict(model="jev-latest", input=TICKET, questions=[
               {**PREDICATE, "instructions": [{"type": "input_image", "image_url": PNG}]}]),
           "no_questions": dict(model="jev-latest", input=TICKET, questions=[]),
           "stream": dict(model="jev-latest", input=TICKET, questions=[PREDICATE],
                          extra_body={"stream": True}),
           "auth": dict(model="jev-latest", input=TICKET, questions=[PREDICATE])}[scenario]
    try:
        create(**bad)
    except openai.APIStatusError as e:
        return {"exception": type(e).__name__, "status": e.status_code, "type": e.type,
                "param": e.param, "code": e.code, "message": e.message}
    return {"exception": None}


if __name__ == "__main__":  # openai is imported only here: the tests import the constants above
    import openai
    from openai import OpenAI
    base, scenario = sys.argv[1], sys.argv[2]
    key = sys.argv[3] if len(sys.argv) > 3 else "sk-anything"
    with OpenAI(base_url=base, api_key=key, max_retries=0, timeout=300) as client:
        out = run(client, scenario)
    print(json.dumps({"version": openai.__version__, **out}))
