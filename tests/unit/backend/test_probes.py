"""Start-up checks of backend/probes.py without HTTP: whether two-way reading is on (and fatal
only where the profile reads two-way by default), label log-probs from fp32 logits, and the
special tokens neutralised in client text (each its contract's one id, no neutral spelling
giving one; through the real vLLM in tests/live/test_client_text_live.py)."""
import json
import logging
import math
import random
import re
import unittest
from dataclasses import replace
from pathlib import Path

from onepass.backend import probes
from onepass.decision_model import CAUSAL, TWO_WAY, ReadResult
from onepass.errors import EngineFailed, EngineRefused
from tests.support.paths import FAST_PROFILE


class Reads:
    """An engine stand-in that answers each read with the given log-probs (no HTTP)."""

    def __init__(self, make):
        self.make = make

    def read(self, read):
        return ReadResult(tuple(self.make(len(read.label_token_ids))), 100, 0)

    def map(self, fn, items):
        return [fn(i) for i in items]


class TwoWayReads:
    """An engine stand-in for the two-way probes: a one-way read gives `one_way`, a two-way one
    `two_way` (a function of the probe's index), or raises `error`."""

    def __init__(self, two_way, one_way=(-0.7, -0.7), error=None):
        self.two_way, self.one_way, self.error, self.probe = two_way, one_way, error, -1

    def read(self, read):
        if read.attention_mode == CAUSAL:
            self.probe += 1
            return ReadResult(self.one_way, 100, 0)
        if self.error:
            raise self.error
        return ReadResult(tuple(self.two_way(self.probe)), 100, 0)

    def map(self, fn, items):
        return [fn(i) for i in items]


def logprobs(p_yes):
    return (math.log(p_yes), math.log(1 - p_yes))


class TwoWay(unittest.TestCase):
    """two_way_live: on when every probe reads two-way and meets its reference; otherwise off
    with a warning naming why, and GuardFailed only for a profile that reads two-way by
    default."""

    def setUp(self):
        from onepass import config
        _, self.causal = config.load_profile("serve_config.json", "")
        self.two_way = replace(self.causal, attention_mode=TWO_WAY)
        self.references = [p["reference"][0] for p in self.causal.two_way_probes]
        self.labels = probes.LabelSet(choice=[("A", 100), ("B", 101)],
                                      noul=[("Yes", 1), ("No", 2)], score=[("1", 10), ("2", 11)])

    def verdicts(self, engine_of, why):
        """Off with `why` in the warning for the causal profile; GuardFailed naming it for the
        two-way one."""
        with self.assertLogs("onepass", logging.WARNING) as logs:
            self.assertFalse(probes.two_way_live(engine_of(), self.causal, self.labels))
        self.assertIn(f"two-way reading off on this server: {why}", logs.output[0])
        with self.assertRaisesRegex(probes.GuardFailed,
                                    f"^this profile needs two-way reading, but {re.escape(why)}"):
            probes.two_way_live(engine_of(), self.two_way, self.labels)

    def test_the_references_met_is_live(self):
        engine = TwoWayReads(lambda i: logprobs(self.references[i]))
        self.assertTrue(probes.two_way_live(engine, self.two_way, self.labels))
        self.assertEqual(engine.probe, len(self.references) - 1)

    def test_stock_vllm_reads_one_way(self):
        self.verdicts(lambda: TwoWayReads(lambda i: (-0.7, -0.7)),
                      "vLLM answers two-way probes exactly like one-way ones: the onepass "
                      "engine plugin is not loaded")

    def test_a_refused_two_way_read(self):
        refused = EngineRefused("vLLM answered /v1/completions with HTTP 400: no two-way here")
        self.verdicts(lambda: TwoWayReads(None, error=refused),
                      f"vLLM refused the probe's two-way read: {refused.message}")

    def test_a_missed_reference(self):
        self.verdicts(lambda: TwoWayReads(lambda i: logprobs(0.02)),
                      f"two-way probe {self.causal.two_way_probes[0]['question']!r} read")

    def test_an_engine_that_reads_the_one_way_answer_two_way_misses_its_reference(self):
        """The mutation the tolerances must still catch: a two-way read that moved (so the
        shift check passes) but landed on the one-way answer, as a mask that stays causal
        where it matters would. The default's probes each state their one-way read."""
        one_way = [p["one_way"][0] for p in self.causal.two_way_probes]
        self.verdicts(lambda: TwoWayReads(lambda i: logprobs(one_way[i])),
                      f"two-way probe {self.causal.two_way_probes[0]['question']!r} read")

    def test_within_each_probes_tolerance_is_live(self):
        """A read as far from the reference as the probe's tolerance allows is live; the
        default's tolerances are wider than the fallback (its shipped dtypes' spread)."""
        tolerances = [p["tolerance"] for p in self.causal.two_way_probes]
        self.assertTrue(all(t > probes.REFERENCE_TOLERANCE for t in tolerances), tolerances)
        engine = TwoWayReads(lambda i: logprobs(self.references[i] - 0.98 * tolerances[i]))
        self.assertTrue(probes.two_way_live(engine, self.two_way, self.labels))

    def test_every_profiles_probes_can_catch_a_one_way_engine(self):
        """A probe whose one-way read lies within its tolerance of its two-way reference would
        pass an engine that never reads two-way (tools/models/two_way_reference.py leaves such
        probes out)."""
        doc = json.loads(Path("serve_config.json").read_text())
        for name, profile in doc["profiles"].items():
            for probe in profile.get("two_way_probes", []):
                if probe.get("one_way") is not None:
                    gap = abs(probe["reference"][0] - probe["one_way"][0])
                    self.assertGreater(gap, probe.get("tolerance", probes.REFERENCE_TOLERANCE),
                                       f"{name}: {probe['question']!r}")

    def test_some_probes_only(self):
        self.verdicts(lambda: TwoWayReads(lambda i: logprobs(self.references[i]) if i == 0
                                          else (-0.7, -0.7)),
                      f"two-way reading changed only 1 of {len(self.references)} probes")

    def test_no_probes_to_prove_it_with(self):
        self.causal = replace(self.causal, two_way_probes=())
        self.two_way = replace(self.two_way, two_way_probes=())
        self.verdicts(lambda: TwoWayReads(lambda i: logprobs(0.5)),
                      "the profile has no two-way probes to prove it with")

    def test_an_engine_failure_is_no_refusal(self):
        with self.assertRaises(EngineFailed):
            probes.two_way_live(TwoWayReads(None, error=EngineFailed("HTTP 500")), self.causal,
                                self.labels)


class FullPrecision(unittest.TestCase):
    def setUp(self):
        from onepass import config
        _, self.profile = config.load_profile("serve_config.json", FAST_PROFILE)
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
        _, self.profile = config.load_profile("serve_config.json", FAST_PROFILE)
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
