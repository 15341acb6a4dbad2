"""The wire contract's response rows (section 6) as one checker, shared by the live tests."""
import json
import math

NOUL_FIELDS = {"type", "noul"}
CHOICE_FIELDS = {"type", "choice", "probabilities", "confidence"}
SCORE_FIELDS = {"type", "score", "legend", "probabilities", "confidence"}


def check_distribution(probs: dict):
    assert all(isinstance(p, (int, float)) and 0 <= p <= 1 for p in probs.values()), probs
    assert abs(math.fsum(probs.values()) - 1) <= 1e-9, math.fsum(probs.values())


def check_response(request: dict, doc: dict, raw: bytes | None = None):
    """Every MUST/SHOULD response row: envelope, usage, ids, types, closed fields, formulas."""
    if raw is not None:
        json.loads(raw, parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(c)))
    # response.extensions: beyond the contract's keys, only x_-prefixed ones; ours says how
    # the answers were read.
    assert {"model", "answers", "usage", "x_attention_mode"} <= set(doc), set(doc)
    assert all(k.startswith("x_") for k in set(doc) - {"model", "answers", "usage"}), set(doc)
    assert doc["x_attention_mode"] in ("causal", "bidirectional")
    assert isinstance(doc["model"], str)
    usage = doc["usage"]
    for key in ("input_tokens", "output_tokens"):
        assert type(usage[key]) is int and usage[key] >= 0, usage
    assert list(doc["answers"]) == list(request["questions"])
    for qid, q in request["questions"].items():
        a = doc["answers"][qid]
        assert a["type"] == q["type"]
        if q["type"] == "noul":
            assert set(a) == NOUL_FIELDS and 0 <= a["noul"] <= 1
        elif q["type"] == "choice":
            assert set(a) == CHOICE_FIELDS
            probs = a["probabilities"]
            assert list(probs) == list(q["criteria"])
            check_distribution(probs)
            assert probs[a["choice"]] >= max(probs.values()) - 0.005
            n = len(probs)
            assert abs(a["confidence"] - (max(probs.values()) - 1 / n) / (1 - 1 / n)) <= 1e-9
        else:
            assert set(a) == SCORE_FIELDS
            n = len(q["criteria"])
            keys = [str(i) for i in range(n)]
            assert list(a["probabilities"]) == keys and list(a["legend"]) == keys
            assert list(a["legend"].values()) == q["criteria"]
            check_distribution(a["probabilities"])
            p = [a["probabilities"][k] for k in keys]
            assert abs(a["score"] - math.fsum(i * x for i, x in enumerate(p))) <= 1e-9
            mode = max(range(n), key=p.__getitem__)
            spread = sum(abs(i - (n - 1) / 2) for i in range(n)) / n
            want = max(0.0, 1 - sum(x * abs(i - mode) for i, x in enumerate(p)) / spread)
            assert abs(a["confidence"] - want) <= 1e-9
            assert 0 <= a["confidence"] <= 1
