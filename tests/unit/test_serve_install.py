"""serve.sh's setup with ONEPASS_INSTALL=0 (the image's): a venv set up for another device or
lock is exit 10 naming what it was set up for, before anything is installed or created."""
import hashlib
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stamp(device: str) -> str:
    """What serve.sh writes to the venv's .onepass-deps once set up for DEVICE."""
    text = b"".join((ROOT / "deps" / f).read_bytes()
                    for f in (f"{device}.txt", "test.txt", "clients.txt"))
    return hashlib.sha256(text).hexdigest()


def fake_venv(d: str, device: str) -> Path:
    """A venv as serve.sh leaves it for DEVICE: its stamp, and a python (a link to this one)."""
    venv = Path(d)
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / ".onepass-deps").write_text(stamp(device) + "\n")
    return venv


def setup_only(venv: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "serve.sh"), "--setup-only"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "ONEPASS_VENV": str(venv),
                                                      "ONEPASS_INSTALL": "0", **env})


class NoInstallAtStart(unittest.TestCase):
    def test_a_cpu_venv_asked_for_gpu_stops_and_says_so(self):
        with tempfile.TemporaryDirectory() as d:
            venv = fake_venv(d, "cpu")
            out = setup_only(venv, ONEPASS_DEVICE="gpu")
            self.assertEqual(out.returncode, 10, out.stdout + out.stderr)
            self.assertIn("is set up for cpu (deps/cpu.txt), this start asks for gpu", out.stderr)
            self.assertEqual(sorted(p.name for p in venv.iterdir()), [".onepass-deps", "bin"])

    def test_an_empty_venv_is_not_set_up(self):
        with tempfile.TemporaryDirectory() as d:
            out = setup_only(Path(d) / "venv", ONEPASS_DEVICE="cpu")
            self.assertEqual(out.returncode, 10)
            self.assertIn("is not set up by serve.sh", out.stderr)
            self.assertFalse((Path(d) / "venv").exists())

    def test_a_venv_set_up_for_the_device_starts_without_installing(self):
        """The stamp above is serve.sh's: a venv stamped for cpu (its python a link to this
        one) passes on cpu, and setup finishes with nothing installed (a model of one's own,
        so nothing is built either)."""
        with tempfile.TemporaryDirectory() as d:
            venv = fake_venv(d, "cpu")
            out = setup_only(venv, ONEPASS_DEVICE="cpu", ONEPASS_MODEL="/models/mine")
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertIn("setup: done", out.stdout)
            self.assertNotIn("pip install", out.stdout)
            self.assertEqual(sorted(p.name for p in venv.iterdir()), [".onepass-deps", "bin"])

    def test_install_must_be_0_or_1(self):
        out = setup_only(Path("/nonexistent"), ONEPASS_INSTALL="no")
        self.assertEqual(out.returncode, 10)
        self.assertIn("ONEPASS_INSTALL must be 0 or 1", out.stderr)


if __name__ == "__main__":
    unittest.main()
