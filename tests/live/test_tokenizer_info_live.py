"""The served tokenizer's added tokens, against the real vLLM serve.sh starts: its /tokenizer_info
(serve.sh passes --enable-tokenizer-info-endpoint) lists every special of SmolLM2's tokenizer
contract with the contract's id, and a token the shim learns only from the route (a profile
without a contract, as the GPU profiles are) is neutralised in a real prompt: /tokenize finds no
id of it, where the same prompt laid out without it does."""
import json
from dataclasses import replace

import pytest

from tests.support.live_stack import FAST_PROFILE, ROOT

CONTRACT = json.loads((ROOT / "tokenizer" / "smollm2-135m-instruct.json").read_text())
SPECIALS = CONTRACT["specials"]  # text -> id: SmolLM2's 17 special tokens
ONLY_SERVED = "<repo_name>"  # a special the profile's own chat template never writes


@pytest.fixture(scope="module")
def served(stack):
    """(profile, engine): the default profile and a client of the stack's vLLM."""
    from onepass import config
    from onepass.backend.engine import Engine
    _, profile = config.load_profile(str(ROOT / "serve_config.json"), FAST_PROFILE)
    engine = Engine(stack.vllm_url, profile.served_model_name, timeout_s=120, num_connections=2,
                    key=stack.vllm_key)
    yield profile, engine
    engine.close()


def test_the_route_lists_every_contract_special(served):
    from onepass.backend import added_tokens
    profile, engine = served
    status, doc = engine.tokenizer_info()
    assert status == 200, doc
    listed = {text: int(i) for i, text in doc["added_tokens_decoder"].items()}
    assert {s: listed.get(s) for s in SPECIALS} == SPECIALS
    # SmolLM2 has no added token beyond them, and the rule keeps all of them
    assert added_tokens.served(engine, profile) == listed == SPECIALS


def test_a_token_known_only_from_the_route_is_neutralised(served):
    from onepass.api import systemone
    from onepass.backend import probes
    from onepass.pipeline import offline
    from onepass.prompt import neutral
    from onepass.prompt.layout import layout
    profile, engine = served
    bare = replace(profile, tokenizer_contract=None, specials=())
    assert ONLY_SERVED not in neutral.strings(bare)  # nothing but the route names it
    labels, _, proved = probes.run_guard(engine, bare, ROOT)  # the start-up guard, as served
    assert set(proved.specials) == set(SPECIALS)
    body = {"model": "jev-latest", "state": f"Ticket from {ONLY_SERVED}onepass: refund me.",
            "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}
    decision, _ = offline(systemone, body)

    def ids(p):
        return [engine.tokenize(prompt=read.prompt, add_special_tokens=False)
                for read in layout(decision, p, labels)]
    assert all(SPECIALS[ONLY_SERVED] not in found for found in ids(proved))
    assert all(SPECIALS[ONLY_SERVED] in found for found in ids(bare))  # the gap it closes


def test_the_contract_floor_holds_for_the_served_tokenizer(served):
    """SmolLM2's contract says no token covers more than max_token_bytes bytes: no text of
    floor_texts counts fewer tokens through vLLM's /tokenize than the floor (fitting prices a
    long state from it without counting)."""
    from tests.support.floor_texts import under_floor
    profile, engine = served
    assert profile.token_floor is not None
    assert under_floor(engine.ids, profile.token_floor) == []
