"""Stdlib tests of the try-it page's routes (onepass/tryit/, served by onepass/server.py) on an
in-process shim before a fake engine: the files and their headers (a strict CSP, nosniff), what
/try/info tells a caller with and without the key, the page off, bad requests as 4xx, and the
page's files checked for what they must never do (inline code, outside fetches, stored keys).
The live suite drives the page in Chromium (tests/live/test_try_page_live.py).
Run: python3 -S -m unittest tests.unit.tryit.test_tryit
"""
import http.client
import json
import re
import unittest

from onepass import config, tryit
from tests.support.fake_engine import FakeEngine
from tests.support.inprocess_shim import start_shim, stop_shim
from tests.support.paths import ROOT

KEY = "k-try-secret"
SCRIPTS = tuple(f"/try/{name}" for name in tryit.MODULES)  # app.js and the modules it imports
PAGES = ("/", "/try", *SCRIPTS, "/try/style.css", "/try/info")


def get(server, path, method="GET", headers=None):
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=10)
    conn.request(method, path, headers=headers or {})
    r = conn.getresponse()
    out = r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    conn.close()
    return out


class Shims(unittest.TestCase):
    """One fake engine, and a shim per set of settings (auth off, auth on, page off)."""

    @classmethod
    def setUpClass(cls):
        cls.fake = FakeEngine()
        cls.open = start_shim(cls.fake.url)
        cls.keyed = start_shim(cls.fake.url, ONEPASS_API_KEY=KEY)
        cls.off = start_shim(cls.fake.url, ONEPASS_TRY_PAGE="0")

    @classmethod
    def tearDownClass(cls):
        for server in (cls.open, cls.keyed, cls.off):
            stop_shim(server)
        cls.fake.stop()


class TestFiles(Shims):
    def test_each_file_with_its_type_and_strict_headers(self):
        for path, ctype in (("/", "text/html"), ("/try", "text/html"),
                            *((s, "text/javascript") for s in SCRIPTS), ("/try/style.css", "text/css")):
            status, headers, data = get(self.keyed, path)  # public even with auth on
            self.assertEqual(status, 200, path)
            self.assertTrue(headers["content-type"].startswith(ctype), path)
            self.assertEqual(data, (tryit.HERE / tryit.FILES[path][0]).read_bytes())
            self.assertEqual(headers["content-security-policy"], tryit.CSP)
            self.assertEqual(headers["x-content-type-options"], "nosniff")
            status, head_headers, data = get(self.keyed, path, "HEAD")
            self.assertEqual((status, data, head_headers["content-length"]),
                             (200, b"", headers["content-length"]))

    def test_csp_allows_nothing_inline_or_from_elsewhere(self):
        rules = dict(r.strip().split(" ", 1) for r in tryit.CSP.split(";"))
        self.assertEqual(rules["default-src"], "'none'")
        for name in ("script-src", "style-src", "connect-src"):
            self.assertEqual(rules[name], "'self'", name)
        self.assertNotIn("unsafe", tryit.CSP)

    def test_the_files_fetch_nothing_from_outside_and_have_no_inline_code(self):
        page = (tryit.HERE / "page.html").read_text()
        self.assertEqual(re.findall(r'(?:src|href)="([^"]+)"', page),
                         ["data:,", "/try/style.css", "/try/app.js", "/openapi.json", "/health"])
        self.assertEqual(re.findall(r"<script[^>]*>([^<]+)</script>", page), [])  # no inline
        self.assertIn('<script type="module" src="/try/app.js"></script>', page)
        self.assertNotRegex(page, r"<style|\sstyle=|\son[a-z]+=")
        for name in ("page.html", *tryit.MODULES, "style.css"):
            text = (tryit.HERE / name).read_text()
            self.assertNotRegex(text, r"https?://|@import|url\(", name)

    def test_the_script_keeps_the_key_nowhere(self):
        js = "\n".join((tryit.HERE / name).read_text() for name in tryit.MODULES)
        self.assertNotRegex(js, r"localStorage|sessionStorage|document\.cookie|indexedDB|"
                                r"history\.|location\.(?:hash|search|href)\s*=|innerHTML|"
                                r"outerHTML|insertAdjacentHTML|document\.write|eval\(")
        # fetch only this server's own routes
        self.assertEqual(sorted(set(re.findall(r'fetch\("([^"]+)"', js))),
                         ["/try/info", "/v1/systemone"])

    def test_every_module_the_page_imports_is_served(self):
        """app.js's imports, and theirs, are this folder's modules, each served as JavaScript
        from this origin (a relative import under /try/); every module served is imported."""
        reached, todo = set(), ["app.js"]
        while todo:
            name = todo.pop()
            reached.add(name)
            text = (tryit.HERE / name).read_text()
            for spec in re.findall(r'^import\b[^;]*?\bfrom "([^"]+)";', text, re.M | re.S):
                self.assertRegex(spec, r"^\./[a-z]+\.js$", name)
                self.assertIn(f"/try/{spec[2:]}", tryit.FILES, name)
                if spec[2:] not in reached:
                    todo.append(spec[2:])
        self.assertEqual(reached, set(tryit.MODULES))

    def test_unknown_file_and_other_methods_are_4xx(self):
        self.assertEqual(get(self.open, "/try/nope.js")[0], 404)
        self.assertEqual(get(self.open, "/try/../shim.py")[0], 404)
        status, headers, _ = get(self.open, "/try", "POST")
        self.assertEqual((status, headers["allow"]), (405, "GET, HEAD"))
        self.assertEqual(get(self.open, "/try?key=x")[0], 200)  # a query changes nothing


class TestInfo(Shims):
    def info(self, server, headers=None):
        status, headers, data = get(server, "/try/info", headers=headers)
        self.assertEqual((status, headers["content-type"]), (200, "application/json"))
        self.assertEqual(headers["x-content-type-options"], "nosniff")
        return json.loads(data)

    def test_auth_off_everything(self):
        doc = self.info(self.open)
        self.assertEqual((doc["phase"], doc["auth"], doc["authorized"]), ("ready", False, True))
        self.assertEqual(set(doc["kinds"]), {"noul", "choice", "score", "box", "number"})
        self.assertIsNone(doc["kinds"]["noul"])  # served
        self.assertIsInstance(doc["kinds"]["box"], str)  # refused on a text profile: why
        self.assertEqual((doc["vision"], doc["attention_modes"]), (False, ["causal"]))
        self.assertEqual(doc["limits"]["max_questions"], 400)
        self.assertEqual(doc["examples"], tryit.examples())

    def test_auth_on_details_only_with_the_key(self):
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            doc = self.info(self.keyed, headers)
            self.assertEqual(set(doc), {"phase", "auth", "authorized", "examples"})
            self.assertEqual((doc["auth"], doc["authorized"]), (True, False))
        doc = self.info(self.keyed, {"Authorization": f"Bearer {KEY}"})
        self.assertTrue(doc["authorized"])
        self.assertIn("kinds", doc)
        self.assertNotIn(KEY, json.dumps(doc))

    def test_warming_has_no_kinds_yet(self):
        server = start_shim(self.fake.url)
        self.addCleanup(stop_shim, server)
        server.service.phase = "warming"
        doc = self.info(server)
        self.assertEqual((doc["phase"], doc["kinds"]), ("warming", None))


class TestOff(Shims):
    def test_every_page_route_is_404_and_the_rest_unchanged(self):
        for path in PAGES:
            status, _, data = get(self.off, path)
            self.assertEqual(status, 404, path)
            self.assertIn("try-it page is off", json.loads(data)["detail"]["message"])
        self.assertEqual(get(self.off, "/health")[0], 200)

    def test_the_setting(self):
        for raw, want in (("on", "on"), ("1", "on"), ("OFF", "off"), ("0", "off"),
                          ("false", "off")):
            self.assertEqual(config.load(["--try-page", raw]).try_page, want, raw)
        self.assertEqual(config.load([], environ={"ONEPASS_TRY_PAGE": "0"}).try_page, "off")
        with self.assertRaises(config.ConfigError):
            config.load(["--try-page", "maybe"])


class TestExample(unittest.TestCase):
    def test_the_text_example_is_the_readme_example(self):
        """One click loads the README's curl example, byte for byte the same body."""
        readme = (ROOT / "README.md").read_text()
        body = re.search(r"## An example\n\n```bash\ncurl [^\n]*-d '(.*?)'\n```", readme,
                         re.S).group(1)
        self.assertEqual(tryit.examples()["text"], json.loads(body))


if __name__ == "__main__":
    unittest.main()
