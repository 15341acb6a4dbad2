"""Stdlib tests of the hostile-client recipes' parts (bench/lib/hostile_recipes.py): the verdict
counts every well-behaved request, and the recipe requests are what the issue describes
(checked by parsing them back, as the shim would read them).
Run: python3 -S -m unittest tests.unit.bench.test_hostile_recipes
"""
import gzip
import json
import re
import sys
import unittest

from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "bench" / "lib"))
import hostile_recipes as hr  # noqa: E402


def split_request(raw: bytes) -> tuple[dict, bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    fields = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:])
    return fields, body


def dechunk(body: bytes) -> tuple[bytes, list]:
    """(the data, each chunk line) of a chunked body, as RFC 9112 frames it."""
    data, lines = b"", []
    while True:
        line, _, body = body.partition(b"\r\n")
        lines.append(line)
        size = int(line.split(b";")[0], 16)
        if size == 0:
            return data, lines
        data, body = data + body[:size], body[size + 2:]


class TestVerdict(unittest.TestCase):
    def test_met_only_when_every_request_is_a_200_within_twice_quiet(self):
        quiet = 0.5
        self.assertTrue(hr.verdict([(200, 0.4), (200, 1.0)], quiet)["met"])
        self.assertFalse(hr.verdict([(200, 0.4), (200, 1.01)], quiet)["met"])  # one slow
        self.assertFalse(hr.verdict([(200, 0.4), (529, 0.01)], quiet)["met"])  # one refused
        self.assertFalse(hr.verdict([], quiet)["met"])  # nothing measured is not a pass

    def test_figures(self):
        got = hr.verdict([(200, 0.3), (200, 0.5), (529, 0.1), (200, 0.9)], 0.2)
        self.assertEqual((got["requests"], got["statuses"]), (4, {200: 3, 529: 1}))
        self.assertEqual(got["missed"], 3)  # the 529, and the 200s past 0.4 s
        self.assertAlmostEqual(got["p50_s"], 0.4)
        self.assertAlmostEqual(got["ratio"], 2.0)
        self.assertEqual(got["max_s"], 0.9)


class TestSelect(unittest.TestCase):
    def test_default_is_what_the_stack_can_run(self):
        self.assertNotIn("trickle_body", hr.select("", vision=False, real_vllm=True))
        self.assertNotIn("stray", hr.select("", vision=True, real_vllm=False))
        self.assertEqual(hr.select("", True, True), list(hr.RECIPES))

    def test_asked_in_table_order_and_refused_when_unrunnable(self):
        self.assertEqual(hr.select("extensions, heads", False, False), ["heads", "extensions"])
        for asked in ("stray", "trickle_link", "nope"):
            with self.assertRaises(ValueError):
                hr.select(asked, vision=False, real_vllm=False)

    def test_vision_profiles(self):
        config = json.loads((ROOT / "serve_config.json").read_text())
        self.assertTrue(hr.is_vision(config, "idefics3-tiny"))
        self.assertFalse(hr.is_vision(config, "smollm2-135m-fast"))


class TestRequests(unittest.TestCase):
    def test_multipart_bomb(self):
        fields, body = split_request(hr.multipart_bomb({}))
        self.assertEqual((fields["Content-Encoding"], fields["Content-Type"]),
                         ("gzip", "multipart/form-data; boundary=B"))
        self.assertEqual(int(fields["Content-Length"]), len(body))
        self.assertLess(len(body), 20_000)
        self.assertEqual(gzip.decompress(body), b"--B\r\n" + b"a:b\r\n" * 2_500_000)

    def test_long_state(self):
        doc = json.loads(hr.long_state())
        parts = doc["state"].split("\n\n")
        self.assertEqual((len(parts), len(set(parts))), (19_990, 19_990))
        self.assertTrue(360_000 < len(doc["state"]) < 380_000)
        self.assertEqual({q["type"] for q in doc["questions"].values()}, {"noul"})
        self.assertEqual(len({q["instructions"] for q in doc["questions"].values()}), 400)

    def test_expensive(self):
        doc = json.loads(hr.expensive())
        self.assertEqual(len(doc["questions"]), 32)
        self.assertEqual(doc["kwargs"]["layout"], {"question_first": True, "repeat": 4,
                                                   "orders": 8, "orders_as_reads": True})

    def test_cheap_carries_the_deadline(self):
        fields, body = split_request(hr.cheap({}, 20_000))
        self.assertEqual(fields["x-envoy-expected-rq-timeout-ms"], "20000")
        self.assertEqual(len(json.loads(body)["questions"]), 1)

    def test_extensions_pass_the_wire_limit_by_themselves(self):
        fields, body = split_request(hr.extensions({}))
        self.assertEqual(fields["Transfer-Encoding"], "chunked")
        self.assertNotIn("Content-Length", fields)
        data, lines = dechunk(body)
        self.assertEqual(json.loads(data)["questions"], json.loads(hr.decision_json())[
            "questions"])
        self.assertTrue(all(len(x) == 8192 for x in lines[:-1]))  # at the line limit
        self.assertTrue(all(re.fullmatch(rb"[0-9a-f]+;e=x+", x) for x in lines[:-1]))
        self.assertLess(len(data), 12 << 20)
        self.assertGreater(len(body), 12 << 20)

    def test_trickle_pieces_make_one_body(self):
        data = hr.decision_json()
        pieces = hr.trickle_pieces(data, 30)
        self.assertEqual(len(pieces), 30)
        self.assertEqual(dechunk(b"".join(pieces))[0], data)

    def test_heads_only(self):
        from tests.support.hostile_clients import head_only
        fields, body = split_request(head_only(True))
        self.assertEqual((fields.get("Transfer-Encoding"), "Content-Length" in fields, body),
                         ("chunked", False, b""))
        fields, body = split_request(head_only(False))
        self.assertEqual((fields["Content-Length"], body), ("8388608", b""))


if __name__ == "__main__":
    unittest.main()
