"""Stdlib-only tests of the question-kind registry: every kind is one unit with every hook, an
unknown kind raises (at start-up through the profile check, never a fallback), and the profile
reads each kind's labels and temperature from the registry.
Run: python3 -m unittest tests.unit.kinds.test_registry
"""
import json
import tempfile
import unittest
from pathlib import Path

from onepass import kinds
from onepass.kinds.base import Kind
from onepass.profile import ConfigError, load_profile
from tests.support.paths import ROOT
from tests.support.unit_profile import LABELS, PROFILE

HOOKS = ("listings", "answer", "systemone_options", "systemone_answer", "decisions_options",
         "decisions_answer", "warmup_body", "labels_ok")
# box and number are answered by generations, on /v1/systemone only: their own hooks, none of
# the reads'
GENERATED_HOOKS = {"box": ("systemone_options", "systemone_extras", "systemone_answer",
                           "labels_ok", "listings"),
                   "number": ("systemone_options", "systemone_answer", "labels_ok", "listings")}


class TestRegistry(unittest.TestCase):
    def test_every_kind_is_one_complete_unit(self):
        """kinds: each registered kind overrides every hook and brings its warm-up questions;
        the box and number kinds their own hooks, no label list, no /v1/decisions type."""
        self.assertEqual(kinds.names(), ("noul", "choice", "score", "box", "number"))
        self.assertEqual([k.name for k in kinds.reading()], ["noul", "choice", "score"])
        for name, hooks in GENERATED_HOOKS.items():
            unit = kinds.get(name)
            for hook in hooks:
                self.assertIsNot(getattr(type(unit), hook), getattr(Kind, hook), (name, hook))
            self.assertIsNone(unit.label_key)
            self.assertNotIn(unit, kinds.by_api("decisions").values())
            self.assertIn(name, kinds.by_api("systemone"))
        self.assertNotIn(None, kinds.by_api("decisions"))
        for kind in kinds.reading():
            for hook in HOOKS:
                self.assertIsNot(getattr(type(kind), hook, None), getattr(Kind, hook, None),
                                 (kind.name, hook))
            self.assertTrue(kind.warmup_short and kind.warmup_decisions, kind.name)
            self.assertIn(kind.label_key, json.loads((ROOT / "serve_config.json").read_text())
                          ["profiles"]["smollm2-135m"])

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
        from onepass.decision import Option, Question
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
