"""Start-up for every shipped profile on every device, against vLLM configured as
`serve.sh --dry-run` says the start would configure it: the engine plugin loaded or not
(VLLM_PLUGINS), the V1 or V2 model runner (VLLM_USE_V2_MODEL_RUNNER; unset, CUDA runs V2 and
the CPU build V1, having no Triton backend), /tokenizer_info served or not, vLLM's key
(VLLM_API_KEY, which the shim line's ONEPASS_VLLM_KEY must match). The stand-in engine
answers as that configuration would (tests/support/fake_engine.py's Setup: the plugin's own
admission rules refuse what they refuse). Each shipped configuration gets ready; a profile
that needs what its configuration lacks (option sets on V2 or without the plugin, two-way
reading without the plugin) stops, naming it. The stand-in answers reads, not generations, so
box and number questions are refused here (that check is never fatal); the live suite starts
them on the real engine. Standard library only.
Run: python3 -S -m unittest tests.unit.test_startup_matrix
"""
import logging
import os
import tempfile
import threading
import unittest
from pathlib import Path

from onepass import config
from onepass.server import FAILED, READY, Service
from tests.support.dry_run import dry_run, parse
from tests.support.fake_engine import FakeEngine, Setup
from tests.support.paths import FAST_PROFILE, ROOT


def setup_of(device: str, vllm) -> Setup:
    """The engine configuration a dry run's vLLM line gives."""
    runner = vllm.env.get("VLLM_USE_V2_MODEL_RUNNER")
    budget = vllm.flag("--max-num-batched-tokens")
    return Setup(plugin="onepass_two_way" in vllm.env.get("VLLM_PLUGINS", "").split(","),
                 v2_runner=runner == "1" if runner else device == "gpu",
                 budget=int(budget) if budget else Setup._field_defaults["budget"])


def start(device: str, lines) -> Service:
    """A shim as the dry run's shim line starts it (its settings and flags, the port free and
    vLLM the stand-in configured as the vLLM line), warmed up."""
    vllm, shim = lines["vllm"], lines["shim"]
    argv = shim.argv[next(i for i, a in enumerate(shim.argv) if a.endswith("shim.py")) + 1:]
    argv[argv.index("--port") + 1], argv[argv.index("--vllm") + 1] = "0", "{url}"
    profile = shim.env.get("ONEPASS_PROFILE", "")
    fake = FakeEngine(profile=profile, setup=setup_of(device, vllm),
                      tokenizer_info=vllm.has("--enable-tokenizer-info-endpoint"),
                      key=vllm.env.get("VLLM_API_KEY"))  # the shim's line must carry it too
    try:
        settings = config.load([a.replace("{url}", fake.url) for a in argv], environ=shim.env)
        service = Service(settings, ROOT)
        warm = threading.Thread(target=service.warm_up, kwargs={"poll_s": 0.01}, daemon=True)
        warm.start()
        warm.join(timeout=60)  # an engine that never answers leaves it waiting: a failure here
        service.engine.close()
    finally:
        fake.stop()
    return service


class Matrix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.tmp = Path(os.path.realpath(cls.dir.name))
        cls.runs = {}

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def configurations(self, name: str, **env) -> dict:
        """The dry run's blocks with these settings (read once a class for each)."""
        if name not in self.runs:
            (self.tmp / name).mkdir()
            out, _ = dry_run(self.tmp / name, **env)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.runs[name] = out.stdout
        return parse(self.runs[name])

    def test_every_shipped_profile_gets_ready_on_every_device(self):
        blocks = self.configurations("shipped")
        profiles = {p for p, _ in blocks}
        self.assertEqual({d for _, d in blocks}, {"cpu", "gpu"})
        self.assertGreaterEqual(len(profiles), 9)
        for (profile, device), lines in sorted(blocks.items()):
            with self.subTest(profile=profile, device=device), \
                    self.assertLogs("onepass", logging.INFO) as logs:
                service = start(device, lines)
                self.assertEqual(service.phase, READY, service.reason)
                if setup_of(device, lines["vllm"]).v2_runner:  # the log says what is off, why
                    said = "\n".join(logs.output)
                    self.assertIn("option sets (layout option_sets) off on this server: vLLM "
                                  "refused the probe's set read: ", said)
                    self.assertIn("set reads run in vLLM's V1 model runner only", said)

    def test_a_profile_that_needs_sets_does_not_start_on_v2(self):
        """The fast profile (choices read as sets) on the GPU line without
        VLLM_USE_V2_MODEL_RUNNER=0: CUDA's V2 runner, whose set reads the plugin refuses."""
        blocks = self.configurations("shipped")  # parsed afresh: its lines are changed here
        lines = blocks[(FAST_PROFILE, "gpu")]
        self.assertEqual(lines["vllm"].env.pop("VLLM_USE_V2_MODEL_RUNNER"), "0")
        with self.assertLogs("onepass", logging.ERROR):
            service = start("gpu", lines)
        self.assertEqual(service.phase, FAILED)
        self.assertIn("this profile needs option sets (layout option_sets), but vLLM refused "
                      "the probe's set read: ", service.reason)
        self.assertIn("V1 model runner only", service.reason)

    def test_without_the_plugin_only_what_needs_it_stops(self):
        """VLLM_PATCHES=1 (stock vLLM, no plugin): a profile reading choices as sets or reading
        two-way by default stops, naming the plugin; every other profile gets ready."""
        blocks = self.configurations("patches", VLLM_PATCHES="1")
        for (profile, device), lines in sorted(blocks.items()):
            prof = config.load_profile(str(ROOT / "serve_config.json"), profile)[1]
            needs = prof.layout.option_sets or prof.attention_mode != "causal"
            with self.subTest(profile=profile, device=device), \
                    self.assertLogs("onepass", logging.INFO):
                self.assertFalse(setup_of(device, lines["vllm"]).plugin)
                service = start(device, lines)
                self.assertEqual(service.phase, FAILED if needs else READY, service.reason)
                if needs:
                    self.assertIn("the onepass engine plugin is not loaded", service.reason)


if __name__ == "__main__":
    unittest.main()
