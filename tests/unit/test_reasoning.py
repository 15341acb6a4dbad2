"""Stdlib-only tests of reasoning before answering (onepass/reasoning.py): the request's ask and
its 422s, the profile's settings and cost model, the gate, the deterministic token cap, the
blend; a bare top-level `reasoning` key is ignored by both APIs.
Run: python3 -S -m unittest tests.unit.test_reasoning
"""
import json
import unittest
from dataclasses import replace

from onepass import reasoning
from onepass import kinds
from onepass.api import Limits, decisions, systemone
from onepass.api.checks import Checker
from tests.support.kind_names import BOX, CHOICE, NOUL, NUMBER, SCORE
from onepass.profile import load_profile
from tests.support.paths import ROOT

LIMITS = Limits(max_options=255, max_questions=400)
Q = {"r": {"type": "noul", "instructions": "Refund?"}}


def settings():
    return load_profile(str(ROOT / "serve_config.json"), "smollm2-135m-fast")[1].reasoning


class TestAsk(unittest.TestCase):
    def test_kwargs_reasoning_is_checked(self):
        """ask: mode defaults to auto; budget_ms an integer 1..600000; trace a boolean; other
        keys refused; each problem at its own loc."""
        check = Checker()
        self.assertEqual(reasoning.ask({}, ("kwargs", "reasoning"), check), reasoning.Ask("auto"))
        self.assertEqual(reasoning.ask({"mode": "on", "budget_ms": 50, "trace": True},
                                       ("k",), check), reasoning.Ask("on", 50, True))
        self.assertEqual(check.problems, [])
        for raw, loc in (({"mode": "maybe"}, ("k", "mode")), ({"budget_ms": 0}, ("k", "budget_ms")),
                         ({"budget_ms": 1.5}, ("k", "budget_ms")), ({"trace": "yes"}, ("k", "trace")),
                         ({"effort": "low"}, ("k", "effort")), ("on", ("k",))):
            check = Checker()
            reasoning.ask(raw, ("k",), check)
            self.assertEqual([p.loc for p in check.problems], [loc], raw)

    def test_both_apis_take_kwargs_and_ignore_a_bare_reasoning_key(self):
        """parse: kwargs.reasoning reaches the Request on both APIs; a top-level `reasoning`
        (what an SDK's extra_body sends) is ignored, as the wire contract says."""
        r = systemone.parse({"model": "m", "state": "s", "questions": Q,
                             "kwargs": {"reasoning": {"mode": "off"}}}, None, LIMITS)
        self.assertEqual(r.reasoning, reasoning.Ask("off"))
        r = systemone.parse({"model": "m", "state": "s", "questions": Q,
                             "reasoning": {"effort": "high"}}, None, LIMITS)
        self.assertIsNone(r.reasoning)
        body = {"model": "m", "input": "x", "reasoning": {"effort": "low"},
                "questions": [{"type": "predicate", "instructions": "Refund?"}]}
        self.assertIsNone(decisions.parse(body, None, LIMITS).reasoning)
        body["kwargs"] = {"reasoning": {"mode": "on", "trace": True}}
        self.assertEqual(decisions.parse(body, None, LIMITS).reasoning,
                         reasoning.Ask("on", None, True))


class TestPolicy(unittest.TestCase):
    def test_the_gate(self):
        """thinkers: off none; on every noul/choice/score/number; auto the read kinds under tau;
        boxes never."""
        tops = [(kinds.get(k).thinks, top) for k, top in (
            (NOUL, 0.95), (CHOICE, 0.5), (SCORE, 0.79), (NUMBER, None), (BOX, None), (CHOICE, 0.8))]
        self.assertEqual(reasoning.thinkers("off", tops, 0.8), [])
        self.assertEqual(reasoning.thinkers("on", tops, 0.8), [0, 1, 2, 3, 5])
        self.assertEqual(reasoning.thinkers("auto", tops, 0.8), [1, 2])

    def test_the_cap_is_a_pure_function_of_the_request(self):
        """token_cap: the same request, the same cap; fewer tokens for longer prompts, more
        images and more thinking questions; always within the profile's bounds."""
        s = replace(settings(), cost={"overhead_ms": 20, "prefill_ms_per_token": 0.5,
                                      "image_ms": 100, "decode_ms_per_token": 10,
                                      "decode_ms_per_extra_sequence": 5}, target_ms=2000,
                    min_tokens=16, max_tokens=256)
        base = reasoning.token_cap(s, 200, 0, 4, 1)
        self.assertEqual(base, reasoning.token_cap(s, 200, 0, 4, 1))
        self.assertEqual(base, (2000 - 20 - 0.5 * (200 + 50)) // 10)
        self.assertLess(reasoning.token_cap(s, 1000, 0, 4, 1), base)
        self.assertLess(reasoning.token_cap(s, 200, 2, 4, 1), base)
        self.assertLess(reasoning.token_cap(s, 200, 0, 4, 3), base)
        self.assertEqual(reasoning.token_cap(s, 10**6, 0, 4, 1), 16)
        self.assertEqual(reasoning.token_cap(replace(s, target_ms=10**7), 1, 0, 1, 1), 256)

    def test_blend_and_block(self):
        """blend: half and half; block: the label slot follows the close (a newline)."""
        self.assertEqual(reasoning.blend([0.9, 0.1], [0.5, 0.5]), [0.7, 0.3])
        s = settings()
        self.assertEqual(reasoning.block(s, "It is late."), s.open + "It is late." + s.close)
        self.assertTrue(reasoning.block(s, "x").endswith("\n"))

    def test_profiles_settings_and_bad_ones(self):
        """settings: every shipped profile loads its settings and cost model, or never thinks
        and says why in its provenance; a bad cost model or a close that does not end where
        the slot goes is refused."""
        doc = json.loads((ROOT / "serve_config.json").read_text())
        for name in doc["profiles"]:
            profile = load_profile(str(ROOT / "serve_config.json"), name)[1]
            if profile.reasoning is None:
                self.assertIn("never thinks", profile.provenance.get("reasoning", ""), name)
                continue
            self.assertEqual(set(profile.reasoning.cost), reasoning.COST_KEYS, name)
        raw = doc["profiles"]["smollm2-135m-fast"]["reasoning"]
        for bad in ({**raw, "close": "So:"}, {**raw, "tau": 0}, {**raw, "cost_model": "nope.json"},
                    {**raw, "default_mode": "sometimes"}, {k: v for k, v in raw.items()
                                                           if k != "stop"}):
            with self.assertRaises(ValueError, msg=bad):
                reasoning.settings(bad, str(ROOT / "serve_config.json"))


if __name__ == "__main__":
    unittest.main()
