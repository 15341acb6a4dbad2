"""The official TypeSafe SDK and 16 concurrent requests against the real stack."""
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.live_bodies import CHOICE, NOUL, SCORE, TICKET, raw
from tests.support.openai_client import client as openai_client
from tests.support.response_contract import check_response


def test_typesafe_sdk_system_one_and_models(stack):
    """dropin.sdk-python: typesafe-sdk (zstd extra) reads typed answers and lists models."""
    from typesafe_sdk import Choice, Noul, Score, TypeSafeClient
    with TypeSafeClient(api_key="some-key", base_url=stack.url, timeout=120) as client:
        r = client.system_one(
            state=TICKET * 12,  # over 1 KiB: the SDK sends the body zstd-compressed
            questions={
                "refund": Noul(instructions="Is the customer asking for money back?"),
                "team": Choice(instructions="Which team?",
                               criteria={"billing": "Payments and refunds", "tech": None}),
                "anger": Score(instructions="How angry?",
                               criteria=["Calm", "Annoyed", "Furious"]),
            })
        assert r.model == "onepass-smollm2-135m-instruct"
        assert r.request_id.startswith("req_")
        assert r.raw_http_response.request.headers.get("content-encoding") == "zstd"
        assert 0 <= r.nouls["refund"].noul <= 1
        team, anger = r.choices["team"], r.scores["anger"]
        # the answer is the most likely option, its score the expected level (the contract's
        # definitions), as the SDK parsed them
        assert set(team.probabilities) == {"billing", "tech"}
        assert team.choice == max(team.probabilities, key=team.probabilities.get)
        assert abs(sum(team.probabilities.values()) - 1) < 1e-6
        assert {int(k): v for k, v in anger.legend.items()} == {0: "Calm", 1: "Annoyed",
                                                                 2: "Furious"}
        assert abs(anger.score - sum(int(k) * p for k, p in anger.probabilities.items())) < 1e-9
        assert isinstance(r.usage.input_tokens, int) and r.usage.input_tokens > 0
        names = [m.name for m in client.models.list().models]
        assert "jev-latest" in names and "onepass-smollm2-135m-instruct" in names


def test_both_clients_list_the_models(stack):
    """GET /v1/models in one document both real clients read: typesafe-sdk's models.list()
    (System One's `models`) and openai 3.51.0's client.models.list() (OpenAI's `data`); an
    unknown model's error names them on both routes."""
    from typesafe_sdk import Noul, TypeSafeClient, TypeSafeNotFoundError
    served = ["onepass-smollm2-135m-instruct", "jev-latest"]
    with TypeSafeClient(api_key="some-key", base_url=stack.url, timeout=120) as client:
        assert [m.name for m in client.models.list().models] == served
        with pytest.raises(TypeSafeNotFoundError) as caught:
            client.system_one(state=TICKET, questions={"r": Noul(instructions="Refund?")},
                              model="smollm2")
    assert "Unknown model: smollm2" in str(caught.value)
    assert all(name in str(caught.value) for name in served)
    out = openai_client(stack.url + "/v1", "models")
    assert out["models"] == [[name, "model", "int", "onepass"] for name in served]
    out = openai_client(stack.url + "/v1", "unknown_model")
    assert out["status"] == 404 and all(name in out["message"] for name in served)


def test_sixteen_parallel_requests(stack):
    """server: 16 requests at once all answer, each equal to its answer alone."""
    requests = [raw({"refund": NOUL, "team": CHOICE, "anger": SCORE},
                    state=f"{TICKET} (ticket {i % 4})") for i in range(16)]
    alone = {i: stack.request("POST", "/v1/systemone", requests[i])[2] for i in range(4)}
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda r: stack.request("POST", "/v1/systemone", r), requests))
    for i, (status, _, doc) in enumerate(results):
        assert status == 200, doc
        check_response(requests[i], doc)
        want = alone[i % 4]["answers"]
        assert abs(doc["answers"]["refund"]["noul"] - want["refund"]["noul"]) <= 0.02
        for k, p in want["team"]["probabilities"].items():
            assert abs(doc["answers"]["team"]["probabilities"][k] - p) <= 0.02


def test_load_bench_short_run(stack):
    """bench/measure/load.py: 8 clients for 6 s against the stack: every request answered (exit 0),
    valid ones 200, invalid ones 422 or 404, oversized ones 413, the shim's RSS read."""
    import json
    import subprocess
    import sys
    from tests.support.live_stack import ROOT
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "measure" / "load.py"), stack.url,
                          "--clients", "8", "--minutes", "0.1"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    statuses = report["by_status"]
    assert statuses.get("valid 200", 0) > 0 and statuses.get("oversized 413", 0) > 0, statuses
    assert set(statuses) <= {"valid 200", "invalid 422", "invalid 404", "oversized 413"}, statuses
    assert report["no_response"] == 0 and report["shim_rss_mib"]["end"] > 0
