"""Stdlib-only tests of resolving a Request once (onepass/resolve.py): the model, then the
options, then the mode, in that order; two-way reading only with the engine plugin; a request's
layout and calibration overrides on the shipped profile and the 422 at their key for a bad one,
its message cut. Option sets against the plugin are tested in
tests/unit/prompt/test_option_sets.py.
Run: python3 -S -m unittest tests.unit.steps.test_resolve
"""
import unittest

from onepass.steps import resolve
from onepass.api import Request
from onepass.backend.probes import Facts
from onepass.decision_model import TWO_WAY, Option, Question
from onepass.errors import BadRequest, InvalidRequest, ModelNotFound
from tests.support.unit_profile import EMBEDDED, LABELS, PROFILE

NOUL_Q = Question("noul", "Refund?", (Option("true", None), Option("false", None)))


def facts(two_way=True) -> Facts:
    return Facts(LABELS, 100_000, two_way, "")


class TestResolve(unittest.TestCase):
    def test_model_then_options_then_mode(self):
        """An unknown model is a 404 before a bad layout's 422, and that before the mode's 400;
        then the name, the mode and the layout asked for."""
        no_plugin = facts(two_way=False)
        bad = Request("nope", "s", (NOUL_Q,), TWO_WAY, {"layout": {"repeat": 99}}, (), None)
        with self.assertRaises(ModelNotFound):
            resolve.decision(bad, PROFILE, no_plugin)
        with self.assertRaises(InvalidRequest):
            resolve.decision(Request(PROFILE.model_name, "s", (NOUL_Q,), TWO_WAY,
                                     {"layout": {"repeat": 99}}, (), None), PROFILE, no_plugin)
        with self.assertRaises(BadRequest):
            resolve.decision(Request(PROFILE.model_name, "s", (NOUL_Q,), TWO_WAY, {}, (), None),
                             PROFILE, no_plugin)
        d = resolve.decision(Request(PROFILE.aliases[0], "s", (NOUL_Q,), None,
                                     {"layout": {"repeat": 2}}, (), None), PROFILE, facts())
        self.assertEqual((d.model, d.attention_mode, d.layout.repeat),
                         (PROFILE.model_name, PROFILE.attention_mode, 2))

    def test_two_way_needs_the_plugin(self):
        """mode: the shipped profile reads causal unless asked; two-way without the engine
        plugin is a 400 naming it, never read one-way; with the plugin it is granted."""
        self.assertEqual(resolve.mode(None, EMBEDDED, facts(two_way=False)), "causal")
        with self.assertRaises(BadRequest) as ctx:
            resolve.mode(TWO_WAY, EMBEDDED, facts(two_way=False))
        self.assertIn("engine plugin", ctx.exception.message)
        self.assertEqual(resolve.mode(TWO_WAY, EMBEDDED, facts()), TWO_WAY)

    def test_overrides_and_their_limits(self):
        """options: kwargs.layout / kwargs.calibration override the shipped profile for one
        request (temperature per kind merged, `fitted` the profile's); bad keys, types or ranges
        are a 422 at their key."""
        self.assertEqual(resolve.options({}, EMBEDDED, facts()), (None, None))
        layout, cal = resolve.options({"layout": {"repeat": 2},
                                       "calibration": {"temperature": {"choice": 3.0},
                                                       "noul_floor": 0.9}}, EMBEDDED, facts())
        self.assertEqual(layout.repeat, 2)
        self.assertEqual(cal.temperature, {**EMBEDDED.calibration.temperature, "choice": 3.0})
        self.assertEqual((cal.noul_floor, cal.fitted), (0.9, EMBEDDED.calibration.fitted))
        for key, bad in (("layout", {"repeat": 9}), ("layout", {"nope": 1}),
                         ("layout", {"shrink": "x"}), ("calibration", {"temperature": {"x": 1}}),
                         ("calibration", {"temperature": {"noul": 0}}),
                         ("calibration", {"temperature": 3}), ("calibration", {"fitted": None}),
                         ("calibration", {"fitted": {}}), ("calibration", {"noul_floor": 0.5}),
                         ("calibration", {"reread_below": True}),
                         ("calibration", {"label_prior": {"score": {"2": [0.0, 0.0]}}}),
                         ("calibration", {"label_prior": {"choice": {"2": [0.0, 1e9]}}}),
                         ("calibration", {"label_prior": {"choice": {"3": [0.0, 1.0]}}}),
                         ("calibration", {"label_prior": {"choice": [0.0, 1.0]}})):
            with self.subTest(key=key, bad=bad):
                with self.assertRaises(InvalidRequest) as ctx:
                    resolve.options({key: bad}, EMBEDDED, facts())
                self.assertEqual(ctx.exception.problems[0].loc, ("kwargs", key))

    def test_a_refused_override_message_is_cut(self):
        with self.assertRaises(InvalidRequest) as ctx:
            resolve.options({"layout": {"x" * 2000: 1}}, PROFILE, facts())
        self.assertLessEqual(len(ctx.exception.problems[0].msg), resolve.MAX_SAID + 4)


if __name__ == "__main__":
    unittest.main()
