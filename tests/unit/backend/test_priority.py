"""vLLM's queue ordered by what each request has cost (issue 67, recipe 6): with vLLM started
`--scheduling-policy priority` (serve.sh), each generation call carries as its priority the
bytes its request has sent to vLLM with it (fair queuing's finish tag), so vLLM takes a
one-read request's read before the later reads of a request that has sent hundreds, and before
another request's first read when that one is larger. The bodies are caught before they leave
(Engine._exchange replaced); what a real vLLM does with them is measured by
bench/measure/hostile_clients.py --recipes expensive (docs/measured.md).
Run: python3 -m unittest tests.unit.backend.test_priority
"""
import json
import unittest

from onepass import config, inflight
from onepass.backend import wire
from onepass.backend.engine import Engine


class Caught(Engine):
    """Every body as vLLM would get it, answered with an empty 200."""

    def __init__(self, scheduling: str):
        super().__init__("http://127.0.0.1:9", "m", timeout_s=1, num_connections=2,
                         scheduling=scheduling)
        self.sent = []

    def _exchange(self, method, path, payload, headers):
        self.sent.append((path, json.loads(b"".join(payload))))
        return 200, {}


def body(chars: int) -> dict:
    return {"model": "m", "prompt": "x" * chars, "max_tokens": 1}


class TestPriority(unittest.TestCase):
    def test_each_generation_carries_the_bytes_its_request_sent_with_it(self):
        engine = Caught("priority")
        with inflight.request("a"):
            engine.call("POST", "/v1/completions", body(1000))
            engine.call("POST", "/v1/chat/completions", body(10))
            engine.call("POST", "/v1/completions", body(1))
        first = len(json.dumps(body(1000)))
        second = len(json.dumps(body(10)))
        third = len(json.dumps(body(1)))
        self.assertEqual([doc["priority"] for _, doc in engine.sent],
                         [first, first + second, first + second + third])
        for (_, doc), sent in zip(engine.sent, (body(1000), body(10), body(1))):
            self.assertEqual({k: v for k, v in doc.items() if k != "priority"}, sent)

    def test_a_small_new_request_goes_first(self):
        engine = Caught("priority")
        with inflight.request("heavy"):
            for _ in range(5):
                engine.call("POST", "/v1/completions", body(500))
        with inflight.request("light"):
            engine.call("POST", "/v1/completions", body(5))
        priorities = [doc["priority"] for _, doc in engine.sent]
        self.assertLess(priorities[-1], min(priorities[:5]))  # before even the heavy one's first
        self.assertEqual(sorted(priorities[:5]), priorities[:5])  # its own calls stay in order
        self.assertGreater(priorities[4], 4 * 500)

    def test_none_where_vllm_does_not_schedule_by_it(self):
        for scheduling, path, in_request in (("fcfs", "/v1/completions", True),
                                             ("priority", "/tokenize", True),
                                             ("priority", "/v1/completions", False)):
            engine = Caught(scheduling)
            if in_request:
                with inflight.request("r"):
                    engine.call("POST", path, body(3))
            else:
                engine.call("POST", path, body(3))  # start-up's probes belong to no request
            self.assertNotIn("priority", engine.sent[0][1], (scheduling, path, in_request))

    def test_written_into_the_pieces_of_any_body(self):
        class Img:
            data_url_bytes = b"data:image/png;base64,AAAA"
        for doc in ({}, {"a": 1}, {"messages": [{"image_url": {"url": Img()}}], "b": "}"}):
            pieces = wire.prioritised(wire.pieces(doc), 42)
            got = json.loads(b"".join(pieces))
            self.assertEqual(got.pop("priority"), 42)
            self.assertEqual(json.dumps(got, default=lambda v: v.data_url_bytes.decode()),
                             json.dumps(doc, default=lambda v: v.data_url_bytes.decode()))

    def test_the_setting(self):
        self.assertEqual(config.SETTINGS["vllm_scheduling"][1], "fcfs")  # a bare shim: no field
        for bad in ("lifo", "Priority", ""):
            with self.assertRaises((config.ConfigError, SystemExit)):
                config.load(["--vllm-scheduling", bad])


if __name__ == "__main__":
    unittest.main()
