"""Stdlib-only tests of what onepass counts (onepass/telemetry.py), beyond the finished request's
counts and access log line (tests/unit/test_metrics.py): the routes a path is counted under, the
statuses whose series exist from the start, the gauges read from the running service at scrape
time (draining over its phase), a document's odd usage counted as nothing, abandoned requests,
and the engine's and the image fetcher's counts. The process registry is shared, so each count
is checked as a difference.
Run: python3 -S -m unittest tests.unit.test_telemetry
"""
import json
import time
import unittest
from types import SimpleNamespace

from onepass import __version__, errors, kinds, telemetry, tryit
from onepass.kinds.adapters import SystemOne
from onepass.kinds.base import Kind
from tests.support.prometheus_text import samples


def value(name: str) -> float:
    return samples(telemetry.REGISTRY.render()).get(name, 0.0)


def service(phase="ready", closed=False, stalled=None):
    """What the gauges read of a running Service (`stalled`: its heartbeat's reason)."""
    return SimpleNamespace(phase=phase, slots=SimpleNamespace(busy=3, closed=closed),
                           heartbeat=SimpleNamespace(reason=stalled),
                           door=SimpleNamespace(queue=["a waiter"] * 2),
                           pace=SimpleNamespace(expected_s=lambda: 0.123456),
                           settings=SimpleNamespace(profile="p", vllm_dtype="bf16",
                                                    vllm_device="cpu"),
                           profile=SimpleNamespace(model_name="m"))


class TestLabels(unittest.TestCase):
    def test_a_path_is_its_route_the_page_or_other(self):
        """route_of: a route as itself, every try-it page path as /try, anything else other."""
        self.assertEqual(telemetry.route_of("/v1/decisions"), "/v1/decisions")
        self.assertEqual({telemetry.route_of(p) for p in tryit.PATHS}, {"/try"})
        self.assertEqual(telemetry.route_of("/v1/decisions/"), "other")

    def test_every_status_the_catalogue_answers_starts_at_zero(self):
        """_answered_statuses: 200 and the status of every error class, however deep (431 is
        a MalformedHttp's subclass's)."""
        def walk(cls):
            return {cls.status}.union(*(walk(sub) for sub in cls.__subclasses__()))
        got = telemetry._answered_statuses()
        self.assertEqual(set(got), {200} | walk(errors.OnepassError))
        self.assertIn(431, got)
        self.assertEqual(list(got), sorted(got))


    def test_answer_types_are_the_registered_kinds(self):
        """QUESTIONS: the registry's types, each from the start (never a fixed list); a kind
        registered after this module was imported is counted as itself, at 0 from the next
        scrape; a type no kind has is `other`."""
        types = [k.split('"')[1] for k in samples(telemetry.REGISTRY.render())
                 if k.startswith("onepass_questions_total{")]
        self.assertEqual([t for t in types if t != "other"],
                         ["noul", "choice", "score", "box", "number", "predicate"])

        class ToyOnSystemOne(SystemOne):
            type = "toy"

        class Toy(Kind):
            name, systemone = "toy", ToyOnSystemOne()
        kinds.register(Toy())
        self.addCleanup(kinds.KINDS.pop, "toy")
        self.addCleanup(telemetry.QUESTIONS.series.pop, ("toy",), None)  # later scrapes as before
        scraped = samples(telemetry.REGISTRY.render())
        self.assertEqual(scraped['onepass_questions_total{type="toy"}'], 0)
        before = value('onepass_questions_total{type="other"}')
        telemetry.finish("POST", "/v1/systemone", "/v1/systemone", 200, time.monotonic(),
                         {"answers": {"a": {"type": "toy"}, "b": {"type": "toy?"}},
                          "usage": {}}, "r")
        self.assertEqual(value('onepass_questions_total{type="toy"}'), 1)
        self.assertEqual(value('onepass_questions_total{type="other"}'), before + 1)


class TestGauges(unittest.TestCase):
    def setUp(self):
        self.addCleanup(telemetry.watch, telemetry._service)

    def test_read_from_the_watched_service(self):
        """watch: in flight, queued at the door, the expected answer time (4 places), the
        build and the phase."""
        telemetry.watch(service())
        got = samples(telemetry.REGISTRY.render())
        self.assertEqual(got["onepass_in_flight_requests"], 3)
        self.assertEqual(got["onepass_queued_requests"], 2)
        self.assertEqual(got["onepass_expected_answer_seconds"], 0.1235)
        self.assertEqual(got[f'onepass_build_info{{version="{__version__}",model="m",'
                             'profile="p",dtype="bf16",device="cpu"}'], 1)
        self.assertEqual([p for p in telemetry.PHASES if got[f'onepass_phase{{phase="{p}"}}']],
                         ["ready"])

    def test_draining_is_the_phase_once_the_slots_close(self):
        telemetry.watch(service(phase="ready", closed=True))
        self.assertEqual(value('onepass_phase{phase="draining"}'), 1)
        self.assertEqual(value('onepass_phase{phase="ready"}'), 0)

    def test_unresponsive_is_the_phase_while_ready_and_vllm_misses_its_heartbeat(self):
        telemetry.watch(service(phase="ready", stalled="vLLM did not answer"))
        self.assertEqual((value('onepass_phase{phase="unresponsive"}'),
                          value('onepass_phase{phase="ready"}')), (1, 0))
        telemetry.watch(service(phase="ready", closed=True, stalled="vLLM did not answer"))
        self.assertEqual(value('onepass_phase{phase="draining"}'), 1)  # draining wins

    def test_no_service_no_samples(self):
        telemetry.watch(None)
        got = samples(telemetry.REGISTRY.render())
        self.assertNotIn("onepass_in_flight_requests", got)
        self.assertFalse([n for n in got if n.startswith("onepass_phase")])


class TestFinished(unittest.TestCase):
    def finish(self, status, doc, tokens=0) -> dict:
        return json.loads(telemetry.finish("POST", "/v1/systemone", "/v1/systemone", status,
                                           time.monotonic(), doc, "r", tokens))

    def test_odd_usage_counts_as_nothing(self):
        """finish: token counts that are not positive integers (a bool, negative, a float)
        count 0; answers without a usage object, or neither a map nor a list, none."""
        for odd in (True, -5, 2.5, "9"):
            self.assertEqual(self.finish(200, {"answers": {}, "usage": {"input_tokens": odd}})[
                "input_tokens"], 0, odd)
        self.assertEqual(self.finish(200, {"answers": {"a": {"type": "noul"}}})["questions"], 0)
        self.assertEqual(self.finish(200, {"answers": "a", "usage": {}})["questions"], 0)

    def test_an_abandoned_request_and_its_tokens(self):
        """finish: a 499 counts an abandoned request and the tokens vLLM spent on it."""
        names = ("onepass_abandoned_requests_total", "onepass_abandoned_engine_tokens_total")
        before = [value(n) for n in names]
        self.finish(499, {}, tokens=40)
        self.finish(504, {}, tokens=7)  # past its deadline: not abandoned
        self.assertEqual([value(n) - b for n, b in zip(names, before)], [1, 40])

    def test_engine_errors_and_fetches_by_kind(self):
        """engine_error / image_fetch: one more in the kind's or the outcome's series."""
        names = ('onepass_engine_errors_total{kind="timeout"}',
                 'onepass_image_fetches_total{outcome="refused"}')
        before = [value(n) for n in names]
        telemetry.engine_error("timeout")
        telemetry.image_fetch("refused")
        telemetry.image_fetch("refused")
        self.assertEqual([value(n) - b for n, b in zip(names, before)], [1, 2])


if __name__ == "__main__":
    unittest.main()
