"""metrics.py (the text exposition format) and telemetry.py (what a finished request counts),
standard library only; the live test parses a real scrape with prometheus_client."""
import json
import subprocess
import sys
import threading
import time
import unittest

from onepass import telemetry
from onepass.metrics import FREE, OTHER, Registry, number
from tests.support.paths import ROOT
from tests.support.prometheus_text import samples


class TestRendering(unittest.TestCase):
    def test_counter_help_type_and_labels(self):
        r = Registry()
        c = r.counter("x_total", "things\ncounted \\ here", {"route": ("/a", "/b")})
        c.inc("/a")
        c.inc("/a", by=2)
        c.inc("/b")
        text = r.render()
        self.assertTrue(text.endswith("\n"))
        lines = text.splitlines()
        # HELP escapes backslash and newline, so the family stays on one line
        self.assertEqual(lines[0], "# HELP x_total things\\ncounted \\\\ here")
        self.assertEqual(lines[1], "# TYPE x_total counter")
        self.assertEqual(samples(text), {'x_total{route="/a"}': 3, 'x_total{route="/b"}': 1})

    def test_label_values_escaped_and_bounded(self):
        """A value outside the declared set is counted as `other`; declared values with quotes,
        backslashes and newlines are escaped."""
        r = Registry()
        c = r.counter("y_total", "y", {"kind": ('a"b', "c\\d", "e\nf")})
        for value in ('a"b', "c\\d", "e\nf", "client-sent-id-1", "client-sent-id-2"):
            c.inc(value)
        lines = [l for l in r.render().splitlines() if not l.startswith("#")]
        self.assertEqual(lines, ['y_total{kind="a\\"b"} 1', 'y_total{kind="c\\\\d"} 1',
                                 'y_total{kind="e\\nf"} 1', f'y_total{{kind="{OTHER}"}} 2'])

    def test_label_values_from_a_function_that_grows(self):
        """Values given by a function are asked at each count and scrape: a value added after
        the metric was made is counted as itself and is at 0 from the next scrape, in the
        order it was added; anything else is still `other`."""
        known = ["a"]
        r = Registry()
        c = r.counter("z_total", "z", {"type": lambda: tuple(known)})
        c.inc("b")
        known.append("b")
        self.assertEqual(samples(r.render()), {'z_total{type="a"}': 0,
                                               f'z_total{{type="{OTHER}"}}': 1,
                                               'z_total{type="b"}': 0})
        c.inc("b")
        known.append("c")
        lines = [l for l in r.render().splitlines() if not l.startswith("#")]
        self.assertEqual(lines, ['z_total{type="a"} 0', f'z_total{{type="{OTHER}"}} 1',
                                 'z_total{type="b"} 1', 'z_total{type="c"} 0'])

    def test_a_scrape_fills_again_only_labels_a_function_gives(self):
        """Fixed label values are filled once, when the metric is made; a scrape walks the
        start series again only for a metric whose values a function gives."""
        r = Registry()
        fixed = r.counter("f_total", "f", {"route": ("/x", "/y"), "status": (200, 404)})
        timed = r.histogram("t_seconds", "t", (1,), {"class": ("2xx",)})
        grown = r.counter("g_total", "g", {"type": lambda: ("a",)})
        walked = []
        for m in (fixed, timed, grown):
            m.fill = lambda m=m: walked.append(m.name)
        r.render()
        self.assertEqual(walked, ["g_total"])

    def test_histogram_buckets_cumulative_inf_sum_count(self):
        r = Registry()
        h = r.histogram("d_seconds", "d", (0.1, 1, 10), {"route": ("/a",)})
        for v in (0.05, 0.1, 0.5, 5, 50):  # 0.1 sits in its own bucket: le is "<="
            h.observe(v, "/a")
        got = samples(r.render())
        self.assertEqual(got, {'d_seconds_bucket{route="/a",le="0.1"}': 2,
                               'd_seconds_bucket{route="/a",le="1.0"}': 3,
                               'd_seconds_bucket{route="/a",le="10.0"}': 4,
                               'd_seconds_bucket{route="/a",le="+Inf"}': 5,
                               'd_seconds_sum{route="/a"}': 55.65,
                               'd_seconds_count{route="/a"}': 5})
        self.assertIn("# TYPE d_seconds histogram", r.render())

    def test_gauge_read_at_scrape_and_set(self):
        state = {"v": 1}
        r = Registry()
        r.gauge("g", "g", {"phase": ("up", "down")},
                read=lambda: {("up",): state["v"], ("down",): 1 - state["v"]})
        r.gauge("h", "h").set(2.5)
        self.assertEqual(samples(r.render()), {'g{phase="up"}': 1, 'g{phase="down"}': 0, "h": 2.5})
        state["v"] = 0
        self.assertEqual(samples(r.render())['g{phase="up"}'], 0)

    def test_numbers(self):
        self.assertEqual([number(v) for v in (3, 3.0, 0.25, float("inf"), float("-inf"))],
                         ["3", "3", "0.25", "+Inf", "-Inf"])
        self.assertEqual(number(float("nan")), "NaN")

    def test_refusals(self):
        r = Registry()
        c = r.counter("c_total", "c", {"a": ("x",)})
        self.assertRaises(ValueError, c.inc)  # a label missing
        self.assertRaises(ValueError, c.inc, "x", by=-1)  # counters only go up
        self.assertRaises(ValueError, r.counter, "c_total", "again")
        self.assertRaises(ValueError, r.histogram, "h", "h", (1, 0.5))

    def test_declared_series_exist_at_zero_before_any_event(self):
        """Every declared label value (or the `start` subset) is a series at 0 from the start;
        a FREE label or a read metric starts nothing; `other` only appears when used."""
        r = Registry()
        r.counter("e_total", "e", {"kind": ("a", "b")})
        r.counter("r_total", "r", {"route": ("/x", "/y"), "status": (200, 404, 500, 503)},
                  start={"status": (200, 503)})
        r.histogram("h_seconds", "h", (1,), {"route": ("/x",), "class": ("2xx", "5xx")})
        r.gauge("info", "i", {"version": FREE})
        r.counter("plain_total", "p")
        self.assertEqual(samples(r.render()), {
            'e_total{kind="a"}': 0, 'e_total{kind="b"}': 0,
            'r_total{route="/x",status="200"}': 0, 'r_total{route="/x",status="503"}': 0,
            'r_total{route="/y",status="200"}': 0, 'r_total{route="/y",status="503"}': 0,
            **{f'h_seconds_{part}{{route="/x",class="{c}"{le}}}': 0 for c in ("2xx", "5xx")
               for part, le in (("bucket", ',le="1.0"'), ("bucket", ',le="+Inf"'), ("sum", ""),
                                ("count", ""))},
            "plain_total": 0})

    def test_free_labels_keep_the_process_values(self):
        r = Registry()
        r.gauge("info", "i", {"version": FREE, "model": FREE}, read=lambda: {("1.2", "m-1"): 1})
        r.counter("c_total", "c", read=lambda: {(): 2.5})
        self.assertEqual(samples(r.render()), {'info{version="1.2",model="m-1"}': 1,
                                               "c_total": 2.5})
        self.assertIn("# TYPE c_total counter", r.render())

    def test_concurrent_increments_all_land(self):
        r = Registry()
        c = r.counter("n_total", "n")
        threads = [threading.Thread(target=lambda: [c.inc() for _ in range(2000)])
                   for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(samples(r.render())["n_total"], 16000)


def value(name: str) -> float:
    return samples(telemetry.REGISTRY.render()).get(name, 0.0)


class TestTelemetry(unittest.TestCase):
    """telemetry.finish counts from the response document; the process registry is shared, so
    every check is a difference."""

    def test_systemone_document(self):
        doc = {"model": "m", "answers": {"a": {"type": "noul", "noul": 0.5},
                                         "b": {"type": "choice"}, "c": {"type": "choice"},
                                         "d": {"type": "made-up-by-a-client"}},
               "usage": {"input_tokens": 120, "output_tokens": 7, "images": 2},
               "x_effort_used": {"state_selection": [{"question": "a"}, {"question": "b"}]}}
        names = ('onepass_questions_total{type="choice"}', 'onepass_questions_total{type="noul"}',
                 'onepass_questions_total{type="other"}', "onepass_input_tokens_total",
                 "onepass_output_tokens_total", "onepass_images_total",
                 "onepass_cut_questions_total",
                 'onepass_requests_total{route="/v1/systemone",status="200"}',
                 'onepass_request_duration_seconds_count{route="/v1/systemone",'
                 'status_class="2xx"}')
        before = [value(n) for n in names]
        telemetry.start_request()
        telemetry.count_reads(5)
        line = json.loads(telemetry.finish("POST", "/v1/systemone", "/v1/systemone", 200,
                                           time.monotonic() - 0.25, doc, "req_1"))
        after = [value(n) for n in names]
        self.assertEqual([a - b for a, b in zip(after, before)], [2, 1, 1, 120, 7, 2, 2, 1, 1])
        self.assertEqual({k: line[k] for k in ("request_id", "method", "route", "status",
                                               "questions", "reads", "input_tokens",
                                               "cut_questions")},
                         {"request_id": "req_1", "method": "POST", "route": "/v1/systemone",
                          "status": 200, "questions": 4, "reads": 5, "input_tokens": 120,
                          "cut_questions": 2})
        self.assertGreaterEqual(line["duration_ms"], 250)

    def test_decisions_document_and_errors(self):
        """A list of answers counts the same; an error document counts the request only; an
        unknown path is `other`, never a new series."""
        doc = {"answers": [{"type": "predicate"}, {"type": "score"}],
               "usage": {"input_tokens": 9, "output_tokens": 0}}
        p, s = 'onepass_questions_total{type="predicate"}', 'onepass_questions_total{type="score"}'
        before = value(p), value(s), value("onepass_input_tokens_total")
        telemetry.start_request()
        telemetry.finish("POST", "/decisions", "/decisions", 200, time.monotonic(), doc, "r")
        telemetry.finish("POST", "/decisions", "/decisions", 422, time.monotonic(),
                         {"detail": [], "usage": {"input_tokens": 50}}, "r")
        other = 'onepass_requests_total{route="other",status="404"}'
        n404 = value(other)
        line = json.loads(telemetry.finish("GET", "/secret-q-id", "/secret-q-id", 404,
                                           time.monotonic(), {"detail": {}}, "r"))
        self.assertEqual((value(p) - before[0], value(s) - before[1],
                          value("onepass_input_tokens_total") - before[2]), (1, 1, 9))
        self.assertEqual(value(other) - n404, 1)
        self.assertNotIn("secret-q-id", telemetry.REGISTRY.render())
        self.assertEqual((line["route"], line["questions"], line["reads"]), ("other", 0, 0))

    def test_latency_by_route_and_status_class(self):
        """The histogram splits each route by 2xx, 4xx and 5xx; anything else is `other`."""
        def count(route, cls):
            return value(f'onepass_request_duration_seconds_count{{route="{route}",'
                         f'status_class="{cls}"}}')
        cases = [("/v1/decisions", 200, "2xx"), ("/v1/decisions", 503, "5xx"),
                 ("/v1/decisions", 502, "5xx"), ("/v1/models", 401, "4xx"), ("/nope", 404, "4xx"),
                 ("/v1/systemone", 0, "other")]
        before = {(telemetry.route_of(p), c): count(telemetry.route_of(p), c) for p, _, c in cases}
        for path, status, _ in cases:
            telemetry.finish("POST", path, path, status, time.monotonic(), {}, "r")
        got = {k: count(*k) - v for k, v in before.items()}
        self.assertEqual(got, {("/v1/decisions", "2xx"): 1, ("/v1/decisions", "5xx"): 2,
                               ("/v1/models", "4xx"): 1, ("other", "4xx"): 1,
                               ("/v1/systemone", "other"): 1})

    def test_engine_tokens_by_outcome(self):
        """Tokens vLLM computed, split by what became of the request: only 2xx reached anyone."""
        def tokens(outcome):
            return value(f'onepass_engine_tokens_total{{outcome="{outcome}"}}')
        cases = [(200, 10, "answered"), (499, 20, "abandoned"), (504, 30, "deadline"),
                 (502, 40, "failed"), (422, 0, "failed")]
        before = {o: tokens(o) for o in telemetry.TOKEN_OUTCOMES}
        for status, n, _ in cases:
            telemetry.finish("POST", "/v1/decisions", "/v1/decisions", status, time.monotonic(),
                             {}, "r", n)
        self.assertEqual({o: tokens(o) - before[o] for o in telemetry.TOKEN_OUTCOMES},
                         {"answered": 10, "abandoned": 20, "deadline": 30, "failed": 40})

    def test_reads_tally_is_per_thread(self):
        """Reads on another thread (another request) do not enter this request's tally."""
        telemetry.start_request()
        telemetry.count_reads(3)
        other = threading.Thread(target=lambda: (telemetry.start_request(),
                                                 telemetry.count_reads(100)))
        other.start()
        other.join()
        line = json.loads(telemetry.finish("POST", "/v1/systemone", "/v1/systemone", 503,
                                           time.monotonic(), {}, "r"))
        self.assertEqual(line["reads"], 3)


class TestFromTheStart(unittest.TestCase):
    """A fresh process's scrape, before any request: every known label value is there at 0
    (alerts on rate() see the first event), and nothing unbounded is."""

    @classmethod
    def setUpClass(cls):
        code = "from onepass import telemetry; print(telemetry.REGISTRY.render(), end='')"
        out = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        cls.text, cls.got = out.stdout, samples(out.stdout)

    def test_every_known_value_is_zero(self):
        want = [f'onepass_engine_errors_total{{kind="{k}"}}' for k in telemetry.ENGINE_ERRORS]
        want += [f'onepass_overloaded_total{{reason="{r}"}}' for r in telemetry.OVERLOAD_REASONS]
        want += [f'onepass_image_fetches_total{{outcome="{o}"}}' for o in telemetry.FETCH_OUTCOMES]
        want += [f'onepass_questions_total{{type="{t}"}}'  # every registered kind's types
                 for t in ("noul", "choice", "score", "box", "number", "predicate")]
        for route in (*telemetry.ROUTES, "other"):
            want += [f'onepass_requests_total{{route="{route}",status="{s}"}}'
                     for s in (200, 400, 401, 403, 404, 405, 413, 422, 500, 502, 503, 529)]
            want += [f'onepass_request_duration_seconds_count{{route="{route}",'
                     f'status_class="{c}"}}' for c in ("2xx", "4xx", "5xx")]
        want += ["onepass_input_tokens_total", "onepass_engine_reads_total",
                 "onepass_cut_questions_total", "onepass_images_total"]
        self.assertEqual({n: self.got.get(n) for n in want}, dict.fromkeys(want, 0))

    def test_bounded(self):
        """One series per declared value: a few hundred, not one per status of every route."""
        self.assertLess(len(self.got), 800)
        # `other` (a value outside a label's set) only appears once something is counted as it
        self.assertEqual([n for n in self.got if '"other"' in n.replace('route="other"', "")], [])

    def test_process_series(self):
        for name in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                     "process_open_fds", "process_max_fds", "process_start_time_seconds"):
            self.assertGreater(self.got[name], 0, name)
        self.assertIn("# TYPE process_cpu_seconds_total counter", self.text)


if __name__ == "__main__":
    unittest.main()
