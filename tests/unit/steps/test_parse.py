"""Stdlib-only tests of the parse step (onepass/steps/parse.py): the raw body is decoded under
the server's body limits (a gzip body too) and checked by the route's adapter into a Request;
a body that is not JSON, or that the adapter refuses, is the 4xx error it raises.
Run: python3 -S -m unittest tests.unit.steps.test_parse
"""
import gzip
import json
import unittest
from dataclasses import replace

from onepass.api import Limits, systemone
from onepass.body import limits as body_limits
from onepass.errors import InvalidRequest, OnepassError
from onepass.steps.parse import parse
from onepass.steps.record import Record
from tests.support.records import SETTINGS, serving

BODY = {"model": "jev-latest", "state": "The customer was charged twice.",
        "questions": {"refund": {"type": "noul", "instructions": "Refund?"}}}
SERVING = replace(serving(), limits=Limits(max_options=8, max_questions=400),
                  body_limits=body_limits.limits(SETTINGS))


def record(raw: bytes, headers=None) -> Record:
    return Record(SERVING, systemone, raw, headers or {})


class TestParse(unittest.TestCase):
    def test_a_body_becomes_the_adapters_request(self):
        r = parse(record(json.dumps(BODY).encode()))
        self.assertEqual((r.request.state, [q.kind for q in r.request.questions]),
                         (BODY["state"], ["noul"]))
        self.assertEqual(r.raw, json.dumps(BODY).encode())  # the given fields stay

    def test_a_gzip_body_is_decoded_first(self):
        raw = gzip.compress(json.dumps(BODY).encode())
        r = parse(record(raw, {"Content-Encoding": "gzip"}))
        self.assertEqual(r.request.state, BODY["state"])

    def test_what_cannot_be_parsed_is_a_4xx(self):
        for raw in (b"{not json", json.dumps({**BODY, "questions": {}}).encode()):
            with self.subTest(raw=raw[:20]), self.assertRaises(OnepassError) as ctx:
                parse(record(raw))
            self.assertTrue(400 <= ctx.exception.status < 500, ctx.exception.status)
        with self.assertRaises(InvalidRequest):
            parse(record(json.dumps({**BODY, "questions": {"x": {"type": "nope"}}}).encode()))


if __name__ == "__main__":
    unittest.main()
