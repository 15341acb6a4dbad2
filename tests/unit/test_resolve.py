"""Stdlib-only tests of resolving a Request once (onepass/resolve.py): the model, then the
options, then the mode, in that order. Option sets against the plugin are tested in
tests/unit/prompt/test_option_sets.py.
Run: python3 -S -m unittest tests.unit.test_resolve
"""
import unittest

from onepass import resolve
from onepass.api import Request
from onepass.backend.probes import Facts
from onepass.decision import TWO_WAY, Option, Question
from onepass.errors import BadRequest, InvalidRequest, ModelNotFound
from tests.support.unit_profile import LABELS, PROFILE

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

    def test_calibration_overrides_and_their_limits(self):
        """A request's temperature joins the profile's per kind; `fitted` is the profile's."""
        got = resolve.options({"calibration": {"temperature": {"noul": 2.0}}}, PROFILE,
                              facts())[1]
        self.assertEqual(got.temperature["noul"], 2.0)
        for bad in ({"fitted": {}}, {"temperature": 3}):
            with self.subTest(bad=bad), self.assertRaises(InvalidRequest):
                resolve.options({"calibration": bad}, PROFILE, facts())

    def test_a_refused_override_message_is_cut(self):
        with self.assertRaises(InvalidRequest) as ctx:
            resolve.options({"layout": {"x" * 2000: 1}}, PROFILE, facts())
        self.assertLessEqual(len(ctx.exception.problems[0].msg), resolve.MAX_SAID + 4)


if __name__ == "__main__":
    unittest.main()
