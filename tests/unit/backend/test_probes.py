"""Start-up checks of backend/probes.py without HTTP: label log-probs from fp32 logits, and the
special tokens neutralised in client text (each its contract's one id, no neutral spelling
giving one; through the real vLLM in tests/live/test_client_text_live.py)."""
import json
import random
import re
import unittest
from dataclasses import replace
from pathlib import Path

from onepass.backend import probes
from onepass.decision import ReadResult


class Reads:
    """An engine stand-in that answers each read with the given log-probs (no HTTP)."""

    def __init__(self, make):
        self.make = make

    def read(self, read):
        return ReadResult(tuple(self.make(len(read.label_token_ids))), 100, 0)

    def map(self, fn, items):
        return [fn(i) for i in items]


class FullPrecision(unittest.TestCase):
    def setUp(self):
        from onepass import config
        _, self.profile = config.load_profile("serve_config.json", "")
        self.labels = probes.LabelSet(choice=[(chr(65 + i), 100 + i) for i in range(26)],
                                      noul=[("Yes", 1), ("No", 2)],
                                      score=[(str(i), 10 + i) for i in range(10)])

    def test_bf16_logits_are_refused_and_fp32_ones_pass(self):
        rng = random.Random(7)
        bf16 = lambda n: [round(rng.uniform(-8, -1) * 64) / 64 - 0.3141 for _ in range(n)]  # noqa: E731
        fp32 = lambda n: [rng.uniform(-8, -1) for _ in range(n)]  # noqa: E731
        with self.assertRaises(probes.GuardFailed) as caught:
            probes.check_full_precision(Reads(bf16), self.profile, self.labels)
        self.assertIn("head_dtype", str(caught.exception))
        probes.check_full_precision(Reads(fp32), self.profile, self.labels)

    def test_a_profile_that_opted_out_is_not_checked(self):
        from dataclasses import replace
        grid = lambda n: [-i / 16 for i in range(n)]  # noqa: E731
        probes.check_full_precision(Reads(grid), replace(self.profile, head_dtype="model"),
                                    self.labels)

    def test_the_grid_test_itself(self):
        self.assertTrue(probes.on_half_grid([-2.125, -1.0, -0.875 + 2 ** -9]))
        self.assertFalse(probes.on_half_grid([-2.0116, -1.3039, -0.9011]))


class Tokenizer:
    """An engine stand-in with added tokens like a real tokenizer's: each of `specials` found
    in the text (leftmost, longest) is its id, any other character is an id of its own."""

    def __init__(self, specials: dict, fold=""):
        self.specials, self.fold, self.calls = specials, fold, 0
        self.pattern = re.compile("|".join(map(re.escape, sorted(specials, key=len,
                                                                 reverse=True))))

    def tokenize(self, prompt, add_special_tokens):
        self.calls += 1
        text, out, at = prompt.replace(self.fold, "") if self.fold else prompt, [], 0
        for m in self.pattern.finditer(text):
            out += [1000 + ord(c) for c in text[at:m.start()]] + [self.specials[m.group()]]
            at = m.end()
        return out + [1000 + ord(c) for c in text[at:]]

    def map(self, fn, items):
        return [fn(i) for i in items]


class Specials(unittest.TestCase):
    def setUp(self):
        from onepass import config
        _, self.profile = config.load_profile("serve_config.json", "")
        self.contract = json.loads(Path(self.profile.tokenizer_contract).read_text())["specials"]

    def test_the_shipped_spelling_passes(self):
        engine = Tokenizer(self.contract)
        probes.check_specials(engine, self.profile, self.contract)
        self.assertLessEqual(engine.calls, 3)  # one batch of ids, one of spellings (+markers: 0)

    def test_a_tokenizer_that_folds_the_joiner_away_is_refused(self):
        with self.assertRaisesRegex(probes.GuardFailed, "spelled neutral still gives"):
            probes.check_specials(Tokenizer(self.contract, fold="\u200b"), self.profile,
                                  self.contract)

    def test_a_special_with_another_id_is_refused(self):
        drifted = dict(self.contract, **{"<|im_end|>": 7})
        with self.assertRaisesRegex(probes.GuardFailed, "'<\\|im_end\\|>' gives \\[7\\]"):
            probes.check_specials(Tokenizer(drifted), self.profile, self.contract)

    def test_a_contract_listing_a_string_the_tokenizer_does_not_have_is_refused(self):
        engine = Tokenizer({k: v for k, v in self.contract.items() if k != "<gh_stars>"})
        with self.assertRaisesRegex(probes.GuardFailed, "<gh_stars>"):
            probes.check_specials(engine, self.profile, self.contract)

    def test_a_special_that_cannot_be_split_fails_the_guard(self):
        profile = replace(self.profile, specials=self.profile.specials + ("x",))
        with self.assertRaisesRegex(probes.GuardFailed, "cannot neutralise"):
            probes.check_specials(Tokenizer(self.contract), profile, self.contract)

    def test_many_specials_go_in_batches(self):
        many = {f"<unused{i}>": 100 + i for i in range(600)}
        profile = replace(self.profile, specials=tuple(many) + tuple(self.contract))
        engine = Tokenizer({**many, **self.contract})
        probes.check_specials(engine, profile, {**many, **self.contract})
        self.assertEqual(engine.calls, 2 * 3)  # 617 strings: 3 batches of ids, 3 of spellings

    def test_without_a_contract_the_profiles_own_markers_are_checked(self):
        """Markers not in a contract: their ids are learnt one by one, then checked alike."""
        bare = replace(self.profile, specials=())
        probes.check_specials(Tokenizer(self.contract), bare, {})
        with self.assertRaises(probes.GuardFailed):
            probes.check_specials(Tokenizer(self.contract, fold="\u200b"), bare, {})


if __name__ == "__main__":
    unittest.main()
