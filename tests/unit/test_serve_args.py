"""`bash serve.sh` and its arguments: `--help` prints the usage (the comment at the top of
serve.sh) and an argument it does not know is exit 2 naming the ones it knows, each before
anything is set up: the venv, cache and log folders it names are never made. Standard library
only.
Run: python3 -S -m unittest tests.unit.test_serve_args
"""
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KNOWN = ("--setup-only", "--verify-only", "--dry-run", "--help")


def serve(*args, tmp: Path):
    """serve.sh with ARGS, its venv, cache and logs pointed into TMP (none of them made yet)."""
    env = {**os.environ, "ONEPASS_VENV": str(tmp / "venv"), "ONEPASS_CACHE": str(tmp / "cache"),
           "ONEPASS_LOG_DIR": str(tmp / "logs"), "ONEPASS_DEVICE": "cpu"}
    return subprocess.run(["bash", str(ROOT / "serve.sh"), *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120, stdin=subprocess.DEVNULL)


class Arguments(unittest.TestCase):
    def test_help_prints_the_usage_and_does_nothing_else(self):
        with tempfile.TemporaryDirectory() as tmp:
            for flag in ("--help", "-h"):
                out = serve(flag, tmp=Path(tmp))
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertTrue(out.stdout.startswith("serve.sh: set up"), out.stdout[:200])
                for known in KNOWN + ("ONEPASS_PORT", "Exit codes"):
                    self.assertIn(known, out.stdout)
                self.assertNotIn("#", out.stdout.splitlines()[0])
            self.assertEqual(os.listdir(tmp), [])  # nothing made

    def test_an_unknown_argument_is_exit_2_naming_the_known_ones(self):
        with tempfile.TemporaryDirectory() as tmp:
            for args in (("--bogus",), ("--port", "9000"), ("--dry-run", "--setup-only"),
                         ("serve",)):
                out = serve(*args, tmp=Path(tmp))
                self.assertEqual(out.returncode, 2, (args, out.stdout, out.stderr))
                self.assertIn(" ".join(args), out.stderr)
                for known in KNOWN:
                    self.assertIn(known, out.stderr)
                self.assertIn("ONEPASS_PORT=9000 bash serve.sh", out.stderr)
                self.assertEqual(out.stdout, "")
            self.assertEqual(os.listdir(tmp), [])


if __name__ == "__main__":
    unittest.main()
