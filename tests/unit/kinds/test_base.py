"""Stdlib-only tests of what every kind inherits (onepass/kinds/base.py): the three protocols'
defaults (Reading: no labels of its own, no shape, not read as a set, calibrate nothing;
Generating: plan one read of itself, combine that read's answer, no probe; Serving: no cap, no
refusal, nothing said, no settings, no profile check), the required hooks unimplemented, a
kind's own labels and calibration settings (OwnLabels, Tuning), the shapes a Job's fields are
stated in (the real classes have them), and the shared helpers (the generation refusal, best,
finite, option listings). The API adapters' defaults: tests/unit/kinds/test_adapters.py.
Run: python3 -S -m unittest tests.unit.kinds.test_base
"""
import dataclasses
import unittest

from onepass import config
from onepass.decision_model import Answer, Option, Question
from onepass.images.formats import Image
from onepass.kinds import base
from onepass.kinds.adapters import SystemOne
from onepass.profile import Layout, Profile
from onepass.prompt.layout import LabelSet


class BareOnSystemOne(SystemOne):
    type = "bare"


class Bare(base.Kind):
    """A kind that overrides nothing."""
    name, systemone = "bare", BareOnSystemOne()


Q = Question("bare", "Which?", (Option("x", None), Option("y", "why")))


class TestDefaults(unittest.TestCase):
    def test_plan_reads_the_question_once(self):
        """plan: one label read of the question itself, no generation."""
        self.assertEqual(Bare().plan(Q, None), base.Plan(reads=(Q,), generation=None))

    def test_combine_is_its_one_reads_answer(self):
        """combine: the first read's answer, whatever the generation."""
        first, other = (Answer("bare", (0.3, 0.7), 0.4, 1),
                        Answer("bare", (0.9, 0.1), 0.8, 0))
        self.assertIs(Bare().combine(Q, [first, other], ("text", [], False, 3), None), first)

    def test_limit_caps_nothing_and_refuses_nothing(self):
        """limit: no per-request cap beyond max_questions, no option cap, no refusal; nothing
        said of it in /openapi.json."""
        self.assertEqual(Bare().limit(None, None), base.Limit(most=None, refusal=None,
                                                              options=None))
        self.assertEqual(Bare().limits_text(None), "")

    def test_the_remaining_defaults(self):
        """calibrate returns its input; no /v1/decisions adapter, no labels, shape, settings or
        calibration of its own, no profile check, no probe; the required hooks raise."""
        probs = [0.2, 0.8]
        kind = Bare()
        self.assertIs(kind.calibrate(probs, None), probs)
        self.assertIsNone(kind.decisions)
        self.assertIsNone(kind.check_profile(None))
        self.assertIsNone(kind.probe(None))
        self.assertEqual((kind.reads, kind.rereads, kind.thinks), (True, True, "unsure"))
        self.assertEqual((kind.own_labels, kind.options_are, kind.as_set), (None, None, False))
        self.assertEqual((kind.settings, kind.calibration), ({}, {}))
        for hook, args in (("listings", (Q, None, None)), ("answer", (probs, Q))):
            with self.assertRaises(NotImplementedError, msg=hook):
                getattr(kind, hook)(*args)

    def test_parallel_lines_follow_as_set_and_the_layout(self):
        """parallel_lines: every option's line for a kind read as a set when the layout asks
        for option_sets; none otherwise."""
        class Sets(Bare):
            as_set = True
        sets, listed = Layout(option_sets=True), Layout()
        self.assertEqual((Sets().parallel_lines(Q, sets), Sets().parallel_lines(Q, listed)),
                         (2, 0))
        self.assertEqual(Bare().parallel_lines(Q, sets), 0)

    def test_each_protocol_is_a_part_of_kind(self):
        """Kind is Reading, Generating and Serving at once; each protocol has its hooks."""
        self.assertEqual(base.Kind.__mro__[1:4], (base.Reading, base.Generating, base.Serving))
        for protocol, hook in ((base.Reading, "listings"), (base.Generating, "plan"),
                               (base.Serving, "limit")):
            self.assertIn(hook, vars(protocol), protocol)


class TestOwnSettings(unittest.TestCase):
    def test_own_labels_allow_and_say_how_many(self):
        """OwnLabels: allow counts within its bounds; needed says them as messages do."""
        exactly, at_least, between = (base.OwnLabels(2, 2), base.OwnLabels(10),
                                      base.OwnLabels(2, 4))
        self.assertEqual([exactly.allow("ab"), exactly.allow("abc"), at_least.allow("a" * 9),
                          at_least.allow("a" * 400), between.allow("abcde")],
                         [True, False, False, True, False])
        self.assertEqual([o.needed for o in (exactly, at_least, between)], ["2", "10+",
                                                                           "2 to 4"])

    def test_finite_is_a_json_number(self):
        """finite: ints of any size and floats, never a boolean, NaN or an infinity."""
        self.assertEqual([base.finite(v) for v in (1, 10**400, 0.5, True, float("nan"),
                                                   float("inf"), "1")],
                         [True, True, True, False, False, False, False])


class TestJob(unittest.TestCase):
    def test_the_real_classes_have_the_fields_a_job_states(self):
        """Job's field shapes (Picture, Profile, Settings, Labels) name what the real classes
        give: images.formats.Image, profile.Profile, config.Settings (each kind's settings
        among them) and prompt.layout.LabelSet (each kind's labels)."""
        def members(shape):
            return {n for n in shape.__annotations__}
        image_fields = {f.name for f in dataclasses.fields(Image)}
        self.assertLessEqual(members(base.Picture), image_fields)
        self.assertLessEqual(members(base.Profile), {f.name for f in dataclasses.fields(Profile)})
        settings = config.load(["--port", "0"], environ={})
        self.assertLessEqual(members(base.Settings), {f.name for f in dataclasses.fields(settings)})
        self.assertEqual((settings.box_max_tokens, settings.number_max_tokens), (48, 24))
        self.assertEqual(LabelSet(mood=(("X", 1),)).mood, (("X", 1),))
        job = base.Job((), settings.model, settings, LabelSet())
        self.assertEqual([f.name for f in dataclasses.fields(job)],
                         ["images", "profile", "settings", "labels"])


class TestHelpers(unittest.TestCase):
    def test_generation_refusal_quotes_the_start_up_check(self):
        """generation_refusal: None when structured outputs passed; else the reason, quoted."""
        self.assertIsNone(base.generation_refusal("year", ""))
        said = base.generation_refusal("year", "xgrammar missing")
        self.assertTrue(said.startswith("year questions need vLLM's structured outputs"))
        self.assertIn("at start-up: xgrammar missing;", said)

    def test_best_is_the_first_highest(self):
        """best: the index of the largest probability, the first one on a tie."""
        self.assertEqual(base.best([0.1, 0.5, 0.4]), 1)
        self.assertEqual(base.best([0.4, 0.2, 0.4]), 0)

    def test_logistic_at_both_ends(self):
        """logistic: 1/2 at 0, symmetric, and no overflow however far z goes either way."""
        self.assertEqual(base.logistic(0.0), 0.5)
        self.assertAlmostEqual(base.logistic(2.0) + base.logistic(-2.0), 1.0, places=15)
        self.assertEqual(base.logistic(1000.0), 1.0)
        self.assertEqual(base.logistic(-1000.0), 0.0)

    def test_listed_lines_without_instructions(self):
        """listed_lines: no question line without instructions; each listing under its heading."""
        q = Question("bare", None, Q.options)
        lines = base.listed_lines(q, [((("P", 1), ("Q", 2)), (1, 0))], "Pick:", "P or Q",
                                  lambda o: o.text or o.key)
        self.assertEqual(lines, ["Pick:", "P. why", "Q. x", "Reply with P or Q only."])


if __name__ == "__main__":
    unittest.main()
