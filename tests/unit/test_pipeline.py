"""Stdlib-only tests of the pipeline's own policy: resolving a Request once (model, options,
mode, in that order). The reader's two-way budget retry is tested in tests/unit/test_reader.py.
Run: python3 -m unittest tests.unit.test_pipeline
"""
import unittest

from onepass import config
from onepass.api import Request
from onepass.backend.probes import Facts
from onepass.decision import TWO_WAY, Option, Question
from onepass.errors import InvalidRequest, ModelNotFound
from onepass.pipeline import Pipeline
from tests.support.unit_profile import LABELS, PROFILE

NOUL_Q = Question("noul", "Refund?", (Option("true", None), Option("false", None)))


def pipeline(two_way=True) -> Pipeline:
    """A Pipeline over the unit profile; resolve never calls the engine (None)."""
    settings = config.load(["--port", "0"], environ={})
    pipe = Pipeline(settings, None, None, Facts(LABELS, 100_000, two_way, ""))
    pipe.profile = pipe.reader.profile = PROFILE
    return pipe


class TestPipeline(unittest.TestCase):
    def test_resolve_checks_model_then_options_then_mode(self):
        """resolve: an unknown model is a 404 before a bad layout's 422; then name and mode."""
        pipe = pipeline(two_way=False)
        bad = Request("nope", "s", (NOUL_Q,), TWO_WAY, {"layout": {"repeat": 99}}, (), None)
        with self.assertRaises(ModelNotFound):
            pipe.resolve(bad)
        with self.assertRaises(InvalidRequest):
            pipe.resolve(Request(PROFILE.model_name, "s", (NOUL_Q,), TWO_WAY,
                                 {"layout": {"repeat": 99}}, (), None))
        d = pipe.resolve(Request(PROFILE.aliases[0], "s", (NOUL_Q,), None,
                                 {"layout": {"repeat": 2}}, (), None))
        self.assertEqual((d.model, d.attention_mode, d.layout.repeat),
                         (PROFILE.model_name, PROFILE.attention_mode, 2))


if __name__ == "__main__":
    unittest.main()
