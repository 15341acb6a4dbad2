"""vLLM's heartbeat (onepass/backend/heartbeat.py) through a real in-process shim before the fake
engine, its failures injected: a vLLM whose /health hangs, or that is gone, turns the shim's
/health 503 `unresponsive` with the reason (and the phase gauge with it), and the first answered
probe turns it back to 200; the probes carry vLLM's key, are never counted as engine errors, and
none is sent before the shim is ready. Every wait polls for the state; its deadline only fails
the test. tests/live/test_heartbeat_live.py stops a real vLLM with SIGSTOP.
Run: python3 -S -m unittest tests.unit.backend.test_heartbeat
"""
import http.client
import time
import unittest

from onepass.server import READY
from tests.support.fake_engine import FakeEngine
from tests.support.inprocess_shim import call, start_shim, stop_shim
from tests.support.prometheus_text import samples

KEY = "vllm-key-heartbeat-1"
FAST = {"ONEPASS_ENGINE_PROBE_INTERVAL_S": "0.05", "ONEPASS_ENGINE_PROBE_BOUND_S": "0.5",
        "ONEPASS_VLLM_KEY": KEY}
GUARD_S = 30  # only a guard against a hang: each wait ends as soon as the state is seen


def until(what, check):
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"never saw {what}")


def health(server):
    status, _, doc = call(server, "GET", "/health")
    return status, doc


def health_is(server, want: int) -> dict | None:
    """/health's document when it answers WANT, else None (for until)."""
    status, doc = health(server)
    return doc if status == want else None


def scrape(server) -> dict:
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    return samples(text)


def engine_errors(server) -> dict:
    return {n: v for n, v in scrape(server).items() if n.startswith("onepass_engine_errors")}


class Heartbeat(unittest.TestCase):
    def shim(self, fake_url: str):
        server = start_shim(fake_url, **FAST)  # ready (no guard), as after the warm-up
        self.addCleanup(stop_shim, server)
        beat = server.service.heartbeat
        self.addCleanup(beat.close)
        beat.start(lambda: server.service.phase == READY)
        return server

    def test_a_hung_vllm_turns_health_503_until_it_answers_again(self):
        fake = FakeEngine(key=KEY)  # every call without the key would be its 401
        self.addCleanup(fake.stop)
        server = self.shim(fake.url)
        until("a probe answered, /health 200",
              lambda: fake.calls["/health"] >= 2 and health(server)[0] == 200)
        errors = engine_errors(server)
        fake.health_open.clear()  # vLLM hangs: its /health is never answered
        doc = until("503", lambda: health_is(server, 503))
        self.assertEqual((doc["status"], doc["warming"], doc["draining"]),
                         ("unresponsive", False, False))
        self.assertIn("did not answer GET /health within 0.5 s", doc["reason"])
        got = scrape(server)
        self.assertEqual((got['onepass_phase{phase="unresponsive"}'],
                          got['onepass_phase{phase="ready"}']), (1, 0))
        fake.health_open.set()
        doc = until("200 again", lambda: health_is(server, 200))
        self.assertEqual(doc["status"], "ok")
        self.assertEqual(engine_errors(server), errors)  # probes are no engine errors

    def test_a_vllm_gone_then_back_on_its_port(self):
        fake = FakeEngine()
        port = int(fake.url.rsplit(":", 1)[1])
        server = self.shim(fake.url)
        until("200", lambda: health(server)[0] == 200 and fake.calls["/health"])
        fake.stop()
        doc = until("503", lambda: health_is(server, 503))
        self.assertEqual(doc["status"], "unresponsive")
        self.assertRegex(doc["reason"], r"^vLLM's GET /health failed \(Connection(Refused|Reset)Error")
        back = FakeEngine(port=port)
        self.addCleanup(back.stop)
        until("200 again", lambda: health(server)[0] == 200)
        self.assertGreater(back.calls["/health"], 0)

    def test_no_probe_before_ready(self):
        """Warming: the start-up checks poll vLLM themselves; the heartbeat sends nothing."""
        fake = FakeEngine()
        self.addCleanup(fake.stop)
        server = start_shim(fake.url, **FAST)
        self.addCleanup(stop_shim, server)
        server.service.phase = "warming"
        asked = []
        beat = server.service.heartbeat
        self.addCleanup(beat.close)
        beat.start(lambda: asked.append(1) or server.service.phase == READY)
        until("three intervals", lambda: len(asked) >= 3)
        self.assertEqual((fake.calls["/health"], beat.probes), (0, 0))
        server.service.phase = READY
        until("a probe once ready", lambda: fake.calls["/health"] > 0)


if __name__ == "__main__":
    unittest.main()
