"""Stdlib-only tests of bench/measure/runbook_smoke.py and bench/data/runbook_items.py against a
stub server: each harness's answer checks accept what the harness accepts and refuse what it
refuses, JevBench's retry rule, the Decision Index's capacity rule, the exit codes, the items' own
shape.
Run: python3 -S -m unittest tests.unit.bench.test_runbook_smoke
"""
import contextlib
import io
import json
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "bench" / "data"), str(ROOT / "bench" / "measure")]
import runbook_items as items  # noqa: E402
import runbook_smoke as smoke  # noqa: E402

CHOICE = {"type": "choice", "criteria": {"a": None, "b": None}}
SCORE = {"type": "score", "criteria": ["low", "high"]}


def answer_all(questions: dict) -> dict:
    """A well-formed onepass-like answer to every question."""
    out = {}
    for qid, q in questions.items():
        if q["type"] == "noul":
            out[qid] = {"type": "noul", "noul": 0.25}
        elif q["type"] == "box":
            out[qid] = {"type": "box", "box": {"left": 0.1, "top": 0.2, "right": 0.5,
                                               "bottom": 0.9}, "confidence": 0.4, "found": True}
        else:
            keys = list(q["criteria"]) if q["type"] == "choice" else \
                [str(i) for i in range(len(q["criteria"]))]
            probs = {k: 1 / len(keys) for k in keys}
            out[qid] = {"type": q["type"], "probabilities": probs, "choice": keys[0]}
    return out


class Stub(BaseHTTPRequestHandler):
    """Answers like onepass, except what the test sets in `script` (a list of (status, body))."""
    script, seen = [], []

    def do_POST(self):
        doc = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Stub.seen.append((dict(self.headers), doc))
        if Stub.script:
            status, body = Stub.script.pop(0)
        elif len(doc["questions"].get("wide", {}).get("criteria", {})) > 255:
            status, body = 422, {"detail": [{"loc": ["body"], "type": "too_long",
                                             "msg": "at most 255 options per choice"}]}
        else:
            status, body = 200, {"model": "m", "answers": answer_all(doc["questions"]),
                                 "usage": {"input_tokens": 1, "output_tokens": 0}}
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


class ParseTest(unittest.TestCase):
    def test_jevbench_reading(self):
        """jevbench_read: levels by index or by every level text, renormalised; a missing
        option, a non-finite or negative value refused."""
        self.assertEqual(smoke.jevbench_read({"probabilities": {"low": 1, "high": 3}}, SCORE),
                         {"low": 0.25, "high": 0.75})
        self.assertEqual(smoke.jevbench_read({"noul": 1}, {"type": "noul"}),
                         {"false": 0, "true": 1})
        for bad, q in (({"probabilities": {"a": 1}}, CHOICE),
                       ({"probabilities": {"a": float("nan"), "b": 1}}, CHOICE),
                       ({"probabilities": {"a": -0.1, "b": 1}}, CHOICE),
                       ({"noul": "0.5"}, {"type": "noul"}), ({"noul": 1.1}, {"type": "noul"})):
            with self.assertRaises(smoke.Failed):
                smoke.jevbench_read(bad, q)

    def test_decision_index_validation(self):
        """di_validate: the kit's rules, including |sum - 1| <= 0.01 and exact keys."""
        qs = {"c": CHOICE, "n": {"type": "noul"}}
        good = {"answers": {"c": {"type": "choice", "choice": "b",
                                  "probabilities": {"a": 0.496, "b": 0.5}},
                            "n": {"type": "noul", "noul": 0.0}}}
        smoke.di_validate(qs, good)
        for change in ({"c": {"type": "choice", "choice": "b", "probabilities":
                              {"a": 0.48, "b": 0.5}}},
                       {"c": {"type": "choice", "choice": "z", "probabilities":
                              {"a": 0.5, "b": 0.5}}},
                       {"c": {"type": "choice", "choice": "a", "probabilities":
                              {"a": 0.5, "b": 0.5, "x": 0}}},
                       {"n": {"type": "score", "noul": 0.5}}, {"n": {"type": "noul", "noul": 2}}):
            with self.assertRaises(smoke.Failed):
                smoke.di_validate(qs, {"answers": dict(good["answers"], **change)})
        with self.assertRaises(smoke.Failed):
            smoke.di_validate(qs, {"answers": {"c": good["answers"]["c"]}})

    def test_box_reading(self):
        """box_read: a box inside the image, a confidence in [0, 1] or null, the key present."""
        a = answer_all({"w": {"type": "box"}})["w"]
        self.assertEqual(smoke.box_read(a), ((0.1, 0.2, 0.5, 0.9), 0.4))
        self.assertEqual(smoke.box_read(dict(a, confidence=None))[1], None)
        for bad in (dict(a, box=dict(a["box"], right=0.1)), dict(a, confidence=1.5),
                    {k: v for k, v in a.items() if k != "confidence"}, dict(a, type="noul")):
            with self.assertRaises(smoke.Failed):
                smoke.box_read(bad)

    def test_items(self):
        """The items keep the harness shapes: JevBench's 4 nouls / 2 choices / 1 score with
        string texts and no noul criteria, one unchanged state; the kit's warm-ups as recorded;
        the PNGs decode to their stated size."""
        reqs = items.jevbench_requests()
        self.assertEqual({s for _, s, _ in reqs}, {items.STATE})
        types = sorted(q["type"] for q in reqs[0][2].values())
        self.assertEqual(types, ["choice"] * 2 + ["noul"] * 4 + ["score"])
        self.assertTrue(all("criteria" not in q for q in reqs[0][2].values() if q["type"] == "noul"))
        self.assertEqual(items.di_warmup()[0][1:], ("The color is red.", items.WARMUP))
        self.assertTrue(all(q["type"] in ("choice", "noul") for _, _, qs in items.di_rows()
                            for q in qs.values()))
        png = items.png_with_box(7, 5, (1, 1, 3, 3))
        self.assertEqual(png[16:24], bytes([0, 0, 0, 7, 0, 0, 0, 5]))


class StubServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.url = f"http://127.0.0.1:{cls.server.server_address[1]}"

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        Stub.script, Stub.seen = [], []

    def run_smoke(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                mock.patch.object(smoke.time, "sleep"):
            code = smoke.main([*argv, "--url", self.url])
        return code, out.getvalue(), err.getvalue()

    def test_every_smoke_passes_a_well_formed_server(self):
        """Each harness's smoke exits 0; the harness headers go out, no Authorization."""
        for name, n in (("jevbench", 4), ("decision-index", 6), ("imagejevbench-box", 3)):
            Stub.seen = []
            code, out, err = self.run_smoke(name)
            self.assertEqual(code, 0, out + err)
            self.assertEqual(len(Stub.seen), n)
            headers = Stub.seen[0][0]
            self.assertEqual(headers["User-Agent"], "python-httpx/0.28.1")
            self.assertNotIn("Authorization", headers)
            if name == "decision-index":
                self.assertIn("capacity 256 options: unsupported (HTTP 422", out)

    def test_jevbench_retries_529_and_the_kit_does_not(self):
        """A 529 then answers: JevBench retries it (8 attempts); the Decision Index kit records
        an error on the first, and the smoke exits 1 naming the status."""
        busy = (529, {"detail": {"error_type": "overloaded_error", "message": "busy"}})
        Stub.script = [busy, busy]
        self.assertEqual(self.run_smoke("jevbench")[0], 0)
        self.assertEqual(len(Stub.seen), 6)
        Stub.script = [busy]
        code, _, err = self.run_smoke("decision-index")
        self.assertEqual(code, 1)
        self.assertIn("HTTP 529", err)

    def test_a_bad_answer_fails_with_what_is_wrong(self):
        """A choice missing an option fails JevBench's parse; a 256-option row answered 200
        fails the kit's capacity rule; an API key is sent when its variable is set."""
        Stub.script = [(200, {"answers": {"owner": {"type": "choice",
                                                    "probabilities": {"billing": 1}}}})]
        code, _, err = self.run_smoke("jevbench")
        self.assertEqual(code, 1)
        self.assertIn("no answer for question", err)
        Stub.script = [(200, {"answers": answer_all(items.WARMUP)})] * 2 + [
            (200, {"answers": answer_all(qs)}) for _, _, qs in items.di_rows()]
        with mock.patch.dict("os.environ", {"DECISION_INDEX_API_KEY": "k"}):
            code, _, err = self.run_smoke("decision-index")
        self.assertEqual(code, 1)
        self.assertIn("without a capacity marker", err)
        self.assertEqual(Stub.seen[-1][0]["Authorization"], "Bearer k")

    def test_nothing_listening_is_exit_2(self):
        """No server at the URL: exit 2, not a parse failure."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
        port = server.server_address[1]
        server.server_close()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(smoke.main(["decision-index", "--url", f"http://127.0.0.1:{port}"]), 2)


if __name__ == "__main__":
    unittest.main()
