"""The shim's public behaviour, standard library only (no vLLM): `shim.py` runs isolated and the
package imports only standard-library modules; through HTTP, a real shim in this process before
fake engines that are down, slow or failing (tests/support/inprocess_shim.py, fake_engine.py)
answers with the statuses, headers and error shapes a client sees. The HTTP edge's limits and
hostile input are tested in test_security.py; each module alone in tests/unit/, which mirrors
onepass/ (tests/unit/test_architecture.py holds it to that).
Run: python3 -S -m unittest test_shim
"""
import subprocess
import sys
import unittest

from tests.support.fake_engine import FakeEngine
from tests.support.inprocess_shim import call, start_shim, stop_shim
from tests.support.paths import ROOT
from tests.support.systemone_bodies import NOUL_Q, req


class TestStdlibOnly(unittest.TestCase):
    def test_shim_imports_only_the_standard_library(self):
        """shim: importing every module, in every subpackage, in an isolated interpreter with no
        site-packages loads only stdlib modules."""
        code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
                "import pkgutil, importlib, shim, onepass\n"
                "names = [m.name for m in pkgutil.walk_packages(onepass.__path__, 'onepass.')]\n"
                "for name in names: importlib.import_module(name)\n"
                "assert 'onepass.kinds.noul' in names and 'onepass.pipeline' in names, names\n"
                "ours = {'shim', 'onepass', '__main__'}\n"
                "bad = sorted({n.split('.')[0] for n in sys.modules} - set(sys.stdlib_module_names)"
                " - set(sys.builtin_module_names) - ours)\n"
                "print(bad); sys.exit(1 if bad else 0)")
        out = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd=ROOT,
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_shim_runs_isolated(self):
        """shim: `python3 -I -S shim.py --help` runs (isolated mode, from any directory)."""
        out = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "shim.py"), "--help"],
                             cwd="/", capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("--max-connections", out.stdout)


# -- failure injection: a real shim in front of fake engines that fail ----------------------
class TestFailures(unittest.TestCase):
    def test_engine_down_is_503(self):
        """server: vLLM unreachable gives 503 with retry-after-ms, never a hang."""
        server = start_shim("http://127.0.0.1:9")
        status, headers, doc = call(server, body=req({"q": NOUL_Q}))
        self.assertEqual(status, 503)
        self.assertIn("retry-after-ms", headers)
        self.assertEqual(doc["detail"]["error_type"], "engine_unavailable")
        stop_shim(server)

    def test_engine_slower_than_the_timeout_is_503(self):
        """server: a vLLM slower than the engine timeout gives 503, not the engine's late 200
        and never a hang (call's socket timeout is the guard; a vLLM 5xx giving 502:
        tests/unit/test_server.py, test_engine_errors_by_kind)."""
        fake = FakeEngine(delay_s=2)
        self.addCleanup(fake.stop)
        server = start_shim(fake.url, timeout_s=0.5)
        self.assertEqual(call(server, body=req({"q": NOUL_Q}))[0], 503)
        stop_shim(server)

    def test_http_contract_without_engine(self):
        """server: 404/405 shapes, request id and JSON type on every response, health live."""
        server = start_shim("http://127.0.0.1:9")
        for method, path, status in (("POST", "/v1/no-such-route", 404), ("GET", "/v1/systemone", 405),
                                     ("GET", "/health?live=1", 200), ("GET", "/health", 200)):
            got, headers, doc = call(server, method, path)
            self.assertEqual(got, status, path)
            self.assertEqual(headers["Content-Type"], "application/json")
            self.assertTrue(headers["x-typesafe-request-id"].startswith("req_"))
        got, _, doc = call(server, body=b'{"model": "jev-latest", "state": "x", "questions": {')
        self.assertEqual(got, 422)
        self.assertEqual(doc["detail"][0]["loc"][0], "body")
        stop_shim(server)


# -- internal checks, here until their mirrored unit files take them ------------------------
if __name__ == "__main__":
    unittest.main()
