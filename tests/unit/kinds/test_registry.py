"""Stdlib-only tests of the question-kind registry (onepass/kinds/registry.py, the built-in
kinds registered by onepass/kinds/__init__.py): every kind is one unit with every hook and its
API adapters, an unknown kind raises (at start-up through the profile check, never a fallback),
the profile reads each kind's labels and temperature from the registry, the lookups by
capability (a yes/no kind, named options, levels, set readers, labelled kinds), and what the
kinds add up to (the types telemetry counts, the start-up probe, the option cap, the limits
/openapi.json states, the calibration settings). A kind registered later, end to end:
tests/unit/kinds/test_toy_kind.py.
Run: python3 -m unittest tests.unit.kinds.test_registry
"""
import json
import tempfile
import types
import unittest
from pathlib import Path

from onepass import config, kinds
from onepass.kinds.adapters import Decisions, SystemOne
from onepass.kinds.base import LEVELS, MAX_OPTIONS, NAMED, YES_NO, Kind, Limit, Tuning
from onepass.profile import ConfigError, load_profile
from tests.support.paths import ROOT
from tests.support.unit_profile import LABELS, PROFILE

HOOKS = ("listings", "answer")
API_HOOKS = {SystemOne: ("options", "answer", "warmup_body", "question_schema", "answer_schema"),
             Decisions: ("options", "answer", "answer_schema")}  # predicate: the default question
# box and number are answered by generations, on /v1/systemone only: their own hooks, none of
# the reads'
GENERATED_HOOKS = {"box": ("listings", "plan", "combine", "limit", "limits_text",
                           "check_profile", "probe"),
                   "number": ("listings", "plan", "combine", "limit", "limits_text", "probe")}


def overrides(unit, hooks, base) -> None:
    for hook in hooks:
        assert getattr(type(unit), hook) is not getattr(base, hook), (type(unit), hook)


class TestRegistry(unittest.TestCase):
    def test_every_kind_is_one_complete_unit(self):
        """kinds: each registered kind overrides every hook, and its adapters theirs, with
        their warm-up questions; the box and number kinds their own hooks, no label list, no
        /v1/decisions adapter; box's params hook reads its mode."""
        self.assertEqual(kinds.names(), ("noul", "choice", "score", "box", "number"))
        self.assertEqual([k.name for k in kinds.reading()], ["noul", "choice", "score"])
        for name, hooks in GENERATED_HOOKS.items():
            unit = kinds.get(name)
            overrides(unit, hooks, Kind)
            overrides(unit.systemone, API_HOOKS[SystemOne], SystemOne)
            self.assertIsNone(unit.own_labels)
            self.assertIsNone(unit.decisions)
            self.assertNotIn(unit, kinds.by_api("decisions").values())
            self.assertIn(name, kinds.by_api("systemone"))
        overrides(kinds.get("box").systemone, ("params", "check_images"), SystemOne)
        for kind in kinds.reading():
            overrides(kind, HOOKS, Kind)
            overrides(kind.systemone, API_HOOKS[SystemOne], SystemOne)
            overrides(kind.decisions, API_HOOKS[Decisions], Decisions)
            self.assertTrue(kind.systemone.warmup_short and kind.decisions.warmup, kind.name)
            self.assertIn(f"{kind.name}_labels", json.loads((ROOT / "serve_config.json")
                                                            .read_text())["profiles"]
                          ["smollm2-135m-fast"])
        self.assertEqual(kinds.label_keys(), {"noul_labels": "noul", "choice_labels": "choice",
                                              "score_labels": "score"})

    def test_types_by_api(self):
        """by_api: each API's types, in registration order; types(): each once, System One's
        first, for telemetry."""
        self.assertEqual(list(kinds.by_api("systemone")),
                         ["noul", "choice", "score", "box", "number"])
        self.assertEqual(list(kinds.by_api("decisions")), ["predicate", "choice", "score"])
        self.assertEqual(kinds.types(), ("noul", "choice", "score", "box", "number", "predicate"))

    def test_the_probe_is_the_first_kind_that_offers_one(self):
        """probe: box's (its schema, box_max_tokens), the first registered kind with one; a
        generation in its schema obeys it, another does not."""
        probe = kinds.probe(types.SimpleNamespace(box_max_tokens=48, number_max_tokens=24))
        self.assertEqual((probe.named, probe.max_tokens), ("the box schema", 48))
        self.assertEqual(probe.structured, {"json": kinds.box.schema(1000)})
        self.assertTrue(probe.obeys('{"box": [1, 2, 3, 4]}') and probe.obeys('{"box": null}'))
        self.assertFalse(probe.obeys('{"box": [1, 2, 3]}') or probe.obeys("hello"))

    def test_kinds_by_capability(self):
        """shaped: the first kind whose options are yes/no, named or levels (an unknown shape
        raises); set_readers: choice; labelled: the kinds with labels of their own."""
        self.assertEqual([kinds.shaped(s).name for s in (YES_NO, NAMED, LEVELS)],
                         ["noul", "choice", "score"])
        with self.assertRaises(kinds.UnknownKind):
            kinds.shaped("polygon")
        self.assertEqual([k.name for k in kinds.set_readers()], ["choice"])
        self.assertEqual([k.name for k in kinds.labelled()], ["noul", "choice", "score"])
        self.assertEqual([k.name for k in kinds.labelled() if k.own_labels.prior],
                         ["noul", "choice"])

    def test_what_the_kinds_add_up_to(self):
        """option_cap: the contracts' 255, or the choice labels' count when fewer;
        stated_limits: each kind's own words, the box and number caps from the settings;
        calibration_settings: noul's floor and number's fit, each with its default."""
        settings = config.load(["--port", "0"], environ={})
        for n, cap in ((3, 3), (403, MAX_OPTIONS)):
            facts = types.SimpleNamespace(labels=types.SimpleNamespace(choice=(("A", 1),) * n),
                                          structured="")
            self.assertEqual(kinds.option_cap(settings, facts), cap)
        self.assertEqual(kinds.stated_limits(settings), [
            "2 to 255 options per choice", "2 to 10 levels per score", "4 box questions",
            "8 number questions"])
        found = kinds.calibration_settings()
        self.assertEqual({k: t.default for k, t in found.items()},
                         {"noul_floor": 0.0, "number_confidence": None})
        self.assertTrue(found["noul_floor"].good(0.9) and not found["noul_floor"].good(0.5))

    def test_a_kind_is_registered_once_with_its_own_settings(self):
        """register: a calibration setting another kind has is refused; unregister removes."""
        class Floored(Kind):
            name, calibration = "floored", {"noul_floor": Tuning(0.0, bool, "")}
        with self.assertRaises(ValueError):
            kinds.register(Floored())
        self.assertNotIn("floored", kinds.names())
        settings = config.load([], environ={})

        class Capped(Kind):
            name, systemone, reads = "capped", None, False

            def limit(self, settings, facts):
                return Limit(options=7)
        kinds.register(Capped())
        self.addCleanup(kinds.unregister, "capped")
        self.assertEqual(kinds.option_cap(settings, types.SimpleNamespace(
            labels=types.SimpleNamespace(choice=(("A", 1),) * 26), structured="")), 7)
        kinds.unregister("capped")
        self.assertNotIn("capped", kinds.names())

    def test_unknown_kind_raises_never_falls_back(self):
        """kinds: a kind nobody registered raises; so does registering one twice."""
        with self.assertRaises(kinds.UnknownKind):
            kinds.get("polygon")
        with self.assertRaises(ValueError):
            kinds.register(kinds.get("noul"))

    def test_a_profile_must_name_exactly_the_registered_kinds(self):
        """profile: temperatures and labels are read per registered kind; a kind the registry
        does not know, or one it knows left out, stops start-up with a ConfigError."""
        doc = json.loads((ROOT / "serve_config.json").read_text())
        name = doc["default_profile"]
        for change in ({"calibration": {**doc["profiles"][name]["calibration"],
                                        "temperature": {"noul": 1.0, "choice": 1.0,
                                                        "score": 1.0, "polygon": 1.0}}},
                       {"calibration": {**doc["profiles"][name]["calibration"],
                                        "temperature": {"noul": 1.0, "choice": 1.0,
                                                        "score": 1.0, "box": 1.0}}},
                       {"calibration": {**doc["profiles"][name]["calibration"],
                                        "temperature": {"noul": 1.0, "choice": 1.0}}},
                       {"score_labels": None}):
            changed = json.loads(json.dumps(doc))
            profile = changed["profiles"][name]
            profile.update(change)
            if change.get("score_labels", 0) is None:
                del profile["score_labels"]
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "serve_config.json"
                path.write_text(json.dumps(changed))
                with self.assertRaises(ConfigError, msg=change):
                    load_profile(str(path), name)
        _, profile = load_profile(str(ROOT / "serve_config.json"), "")
        self.assertEqual(set(profile.labels), {k.name for k in kinds.reading()})

    def test_each_kind_lays_out_and_answers(self):
        """kinds: every kind's listings give one label per option listing and its answer keeps
        the probabilities it was given."""
        from onepass.decision_model import Option, Question
        for kind in kinds.reading():
            n = 2
            q = Question(kind.name, "Which?", (Option("a", None), Option("b", "B")))
            for lines, pairs, option_of_label, _ in kind.listings(q, LABELS, PROFILE.layout):
                self.assertEqual(len(pairs), len(option_of_label))
                self.assertTrue(lines[-1].startswith("Reply with"))
            a = kind.answer([0.75, 0.25][:n], q)
            self.assertEqual((a.kind, a.probabilities, a.best), (kind.name, (0.75, 0.25), 0))


if __name__ == "__main__":
    unittest.main()
