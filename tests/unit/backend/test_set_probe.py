"""Stdlib-only tests of the start-up proof that vLLM reads option sets
(onepass/backend/set_probe.py), against a stand-in engine: the probe laid out with option_sets
whatever the profile's listing techniques, its options cut to the choice labels there are; and
the verdict: live only when the set reads move the labels and agree in both orders, otherwise
off, which stops a profile that needs option sets with the reason (the order matters, or the
plugin is not loaded, or vLLM refuses set reads) and only warns for one that does not. The reversed read is tested in
tests/unit/prompt/test_option_sets.py.
Run: python3 -S -m unittest tests.unit.backend.test_set_probe
"""
import logging
import unittest
from unittest import mock
from dataclasses import replace
from types import SimpleNamespace

from onepass.backend import set_probe
from onepass.errors import EngineFailed, EngineRefused, OverBudget, Problem
from onepass.prompt.layout import LabelSet
from tests.support.unit_profile import LABELS, PROFILE

SETS = replace(PROFILE, layout=replace(PROFILE.layout, option_sets=True))
PLAIN = (-1.0, -2.0, -3.0, -4.0)


class Engine:
    """Answers the probe's two set reads (canonical, reversed) and its unflagged read."""

    def __init__(self, canonical, backwards, plain=PLAIN):
        self.answers, self.plain, self.reads = [canonical, backwards], plain, []

    def read(self, r):
        self.reads.append(r)
        return SimpleNamespace(label_logprobs=self.answers[len(self.reads) - 1])

    def map(self, fn, reads):
        return [fn(r) for r in reads]

    def read_unset(self, read):
        return self.plain


class Refusing(Engine):
    """vLLM answering every set read with `error`, as the engine client raises it."""

    def __init__(self, error):
        super().__init__(PLAIN, PLAIN)
        self.error = error

    def read(self, r):
        raise self.error


class TestProbeRead(unittest.TestCase):
    def test_the_probe_is_one_set_read_whatever_the_profile_lists(self):
        """probe_read: option sets on, one order, no repeat, even on a profile without sets
        that repeats and rotates; all four options, each a span."""
        listing = replace(PROFILE, layout=replace(PROFILE.layout, repeat=2, orders=3))
        read = set_probe.probe_read(listing, LABELS)
        self.assertEqual(len(read.spans), 4)
        self.assertEqual(read.label_token_ids, tuple(i for _, i in LABELS.choice[:4]))
        self.assertEqual(read.prompt.count(set_probe.STATE), 1)

    def test_as_many_options_as_there_are_choice_labels(self):
        """probe_read: with three choice labels the probe has three options."""
        three = LabelSet(noul=LABELS.noul, choice=LABELS.choice[:3], score=LABELS.score)
        self.assertEqual(len(set_probe.probe_read(SETS, three).spans), 3)


class TestVerdict(unittest.TestCase):
    def test_moved_and_the_same_in_both_orders_is_live(self):
        """sets_live: the canonical and reversed set reads agree to the bit and differ from
        the plain read: live, no problem; the reversed read is the one sent second."""
        moved = (-0.5, -2.5, -3.0, -4.0)
        engine = Engine(moved, moved)
        self.assertEqual(set_probe.sets_live(engine, SETS, LABELS), (True, ""))
        first, second = engine.reads
        self.assertEqual(second, set_probe.reversed_spans(first))

    def test_an_order_dependent_read_stops_a_profile_that_needs_sets(self):
        """sets_live: set reads that move but differ by order: off, and a profile reading
        choices as sets gets the reason (its attention cannot be read as a set)."""
        live, problem = set_probe.sets_live(Engine((-0.5, -2.5, -3, -4), (-0.6, -2.5, -3, -4)),
                                            SETS, LABELS)
        self.assertFalse(live)
        self.assertIn("layout option_sets", problem)
        self.assertIn("depends on the options' order", problem)

    def test_unmoved_labels_mean_no_plugin(self):
        """sets_live: set reads within MIN_SHIFT of the plain read: the plugin is not loaded;
        a profile that needs sets is stopped, another only warned (no problem)."""
        near = tuple(p + set_probe.MIN_SHIFT / 2 for p in PLAIN)
        live, problem = set_probe.sets_live(Engine(near, near), SETS, LABELS)
        self.assertFalse(live)
        self.assertIn("plugin is not loaded", problem)
        with self.assertLogs("onepass", logging.WARNING) as logs:
            self.assertEqual(set_probe.sets_live(Engine(near, near), PROFILE, LABELS),
                             (False, ""))
        self.assertIn("option sets (layout option_sets) off on this server: vLLM answers a set "
                      "read exactly like a plain one", logs.output[0])

    def test_a_refused_set_read_turns_sets_off_unless_the_profile_needs_them(self):
        """sets_live: vLLM refuses the probe's set read (the plugin on vLLM's V2 model runner,
        or a probe over the one-step budget): off with a warning naming the refusal; a problem
        only for a profile that reads choices as sets. An engine failure (5xx) is no refusal:
        it reaches the guard as it is."""
        refusal = ("vLLM answered /v1/completions with HTTP 400: set reads run in vLLM's V1 "
                   "model runner only; start vLLM with VLLM_USE_V2_MODEL_RUNNER=0")
        for error in (EngineRefused(refusal),
                      OverBudget([Problem(("state",), "over", "too_long")], 16)):
            with self.assertLogs("onepass", logging.WARNING) as logs:
                self.assertEqual(set_probe.sets_live(Refusing(error), PROFILE, LABELS),
                                 (False, ""))
            self.assertIn("option sets (layout option_sets) off on this server: vLLM refused "
                          "the probe's set read: ", logs.output[0])
            live, problem = set_probe.sets_live(Refusing(error), SETS, LABELS)
            self.assertFalse(live)
            self.assertTrue(problem.startswith("this profile needs option sets (layout "
                                               "option_sets), but vLLM refused"), problem)
            self.assertIn(error.message, problem)
        with self.assertRaises(EngineFailed):
            set_probe.sets_live(Refusing(EngineFailed("HTTP 500: boom")), PROFILE, LABELS)

    def test_no_kind_that_reads_sets_means_off_without_a_read(self):
        """sets_live: with no registered kind reading its options as a set, nothing is read:
        off, a problem only for a profile that needs option sets."""
        engine = Engine(PLAIN, PLAIN)
        with mock.patch.object(set_probe.kinds, "set_readers", return_value=()):
            live, problem = set_probe.sets_live(engine, SETS, LABELS)
            with self.assertLogs("onepass", logging.WARNING):
                self.assertEqual(set_probe.sets_live(engine, PROFILE, LABELS), (False, ""))
        self.assertFalse(live)
        self.assertIn("no registered question kind reads its options as a set", problem)
        self.assertEqual(engine.reads, [])


if __name__ == "__main__":
    unittest.main()
