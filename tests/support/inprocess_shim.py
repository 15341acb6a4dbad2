"""A real shim in this process before a stand-in engine (tests/support/fake_engine.py), marked
ready without the start-up guard: for the stdlib tests of routes, limits and failure injection,
never for what an answer says."""
import http.client
import json
import threading
import unittest

from onepass import config
from tests.support.fake_engine import FakeEngine
from tests.support.paths import ROOT
from tests.support.unit_profile import LABELS


def start_shim(vllm_url, timeout_s=5.0, **env):
    """A real shim on a free port, marked ready without the guard: for failure injection only."""
    from onepass.backend.probes import Facts
    from onepass.edge.connections import Server
    from onepass.server import READY, Service
    settings = config.load(["--port", "0", "--vllm", vllm_url, "--engine-timeout-s",
                            str(timeout_s)], environ=env)
    service = Service(settings, ROOT)
    service.start(Facts(LABELS, settings.model.max_model_len, False, ""))  # skip the guard:
    service.phase = READY  # these engines only fail
    server = Server(service)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stop_shim(server):
    server.shutdown()
    server.server_close()
    server.service.engine.close()


class AgainstFakeEngine(unittest.TestCase):
    """A class's tests share one shim (ready, no guard) before a fake engine that answers."""
    settings: dict = {}  # the shim's ONEPASS_* environment

    @classmethod
    def setUpClass(cls):
        cls.fake = FakeEngine()
        cls.server = start_shim(cls.fake.url, **cls.settings)

    @classmethod
    def tearDownClass(cls):
        stop_shim(cls.server)
        cls.fake.stop()


def call(server, method="POST", path="/v1/systemone", body=None, headers=None):
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=10)
    payload = json.dumps(body).encode() if isinstance(body, dict) else body
    conn.request(method, path, body=payload, headers=headers or {})
    r = conn.getresponse()
    out = r.status, dict(r.getheaders()), json.loads(r.read())
    conn.close()
    return out
