"""Stdlib tests of bench/gpu/gpu_check.sh, the first thing to run on a GPU machine (no GPU here):
its plan names the ten steps in order, each a script of this checkout with flags that script
takes, and the plan runs nothing.
Run: python3 -S -m unittest tests.unit.test_gpu_check
"""
import os
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.support.paths import ROOT

STEPS = ["install", "dry-run", "plugin", "kernels", "stack", "stack-checks", "determinism",
         "speed", "hostile", "listing-stack"]
SCRIPT = ROOT / "bench" / "gpu" / "gpu_check.sh"


class TestPlan(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        env = {k: v for k, v in os.environ.items() if not k.startswith("ONEPASS_")}
        cls.out = subprocess.run(["bash", str(SCRIPT), "--plan"], capture_output=True, text=True,
                                 env={**env, "OUT": cls.tmp.name}, timeout=60)
        cls.lines = dict(line.split(": ", 1) for line in cls.out.stdout.splitlines())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_steps_in_order_and_nothing_run(self):
        self.assertEqual(self.out.returncode, 0, self.out.stderr)
        self.assertEqual(list(self.lines), STEPS)
        self.assertEqual(os.listdir(self.tmp.name), [])  # no log, no venv, no stack

    def test_each_named_script_exists_and_takes_its_flags(self):
        for step, command in self.lines.items():
            for script in re.findall(r"\S+\.(?:py|sh)\b", command):
                path = Path(script)
                with self.subTest(step=step, script=script):
                    self.assertTrue(path.is_file(), script)
                    source = path.read_text()
                    for flag in re.findall(r"(?<=\s)--[a-z-]+", command.split(script, 1)[1]):
                        self.assertIn(f'"{flag}"' if path.suffix == ".py" else flag, source)
        self.assertIn("tests/kernels", self.lines["kernels"])

    def test_the_functions_behind_the_steps_name_real_scripts(self):
        source = SCRIPT.read_text()
        for script in ("serve.sh", "bench/gpu/gpu_checks.py", "bench/measure/latency.py",
                       "bench/measure/throughput.py", "bench/measure/hostile_clients.py"):
            with self.subTest(script=script):
                self.assertIn(f'"$ROOT/{script}"', source)
                self.assertTrue((ROOT / script).is_file())
        # the GPU stack is started on the GPU, and stopped by its process group
        self.assertIn("ONEPASS_DEVICE=gpu ONEPASS_PORT", source)
        self.assertIn('kill -TERM -- "-$STACK_PID"', source)

    def test_a_profile_without_option_sets_starts_on_the_gpu_too(self):
        """The listing stack's profile reads no option sets, so serve.sh starts its vLLM on
        CUDA's default V2 runner (no VLLM_USE_V2_MODEL_RUNNER=0), where the plugin refuses set
        reads: the class of start-up defect the first GPU run must catch."""
        import json
        profile = re.search(r"listing_stack (\S+)", self.lines["listing-stack"]).group(1)
        doc = json.loads((ROOT / "serve_config.json").read_text())
        self.assertIs(doc["profiles"][profile]["layout"].get("option_sets", False), False)


if __name__ == "__main__":
    unittest.main()
