"""`bash serve.sh --dry-run`: the vLLM and shim command lines the start would run, per profile
and device, built by the start's own functions (vllm_command, shim_command) and installing,
fetching or starting nothing. The GPU lines are held to the engine settings the project adopted
from its seed cards (the H2O-Lightning-4B card's serve.sh, Lichen's vLLM command), and where it
differs from a card, to the document that says why (SEED_DIFFERENCES). The CPU lines are held to
their own key flags. Standard library only: the lines are read back with shlex.split."""
import json
import os
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

from tests.support.dry_run import Line, dry_run, parse

ROOT = Path(__file__).resolve().parents[2]
CONFIG = json.loads((ROOT / "serve_config.json").read_text(encoding="utf-8"))
PROFILES = list(CONFIG["profiles"])
DEFAULT = CONFIG["default_profile"]
STRUCTURED = {"backend": "xgrammar", "disable_any_whitespace": True}
FP32_HEAD = {"head_dtype": "float32"}
NO_FETCH_DOMAIN = "vllm-never-fetches.invalid"  # tools/serve/serve_profile.py
IMAGE_REPEAT = 4  # onepass.config.MAX_REPEAT: every copy of the state shows every image

# Where the project does not do what a seed card recommends: (the card's setting, the document
# that gives the reason, a phrase of that reason which must stay in it).
SEED_DIFFERENCES = {
    "structured outputs backend": (
        'H2O card: --structured-outputs-config {"backend":"guidance",...}',
        "docs/runbooks/gpu-install.md", "not the H2O card's `guidance`"),
    "two-way batch budget": (
        "H2O card: --max-num-batched-tokens equal to --max-model-len",
        "docs/runbooks/gpu-install.md", "vLLM's default `--max-num-batched-tokens`"),
}


class DryRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.tmp = Path(os.path.realpath(cls.dir.name))
        cls.out, _ = dry_run(cls.tmp)  # its subprocess timeout is the guard against a hang
        cls.blocks = parse(cls.out.stdout) if cls.out.returncode == 0 else {}

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def setUp(self):
        self.assertEqual(self.out.returncode, 0, self.out.stdout + self.out.stderr)

    def lines(self, device: str) -> list[tuple[str, Line, Line]]:
        return [(p, self.blocks[p, device]["vllm"], self.blocks[p, device]["shim"])
                for p in PROFILES]

    def test_every_profile_on_both_devices_and_nothing_touched(self):
        self.assertEqual(set(self.blocks), {(p, d) for p in PROFILES for d in ("cpu", "gpu")})
        # no venv, model, cache or log folder made; no GPU asked for
        self.assertEqual(sorted(p.name for p in self.tmp.iterdir()), ["bin"])

    def test_gpu_lines_hold_the_adopted_seed_settings(self):
        for profile, vllm, shim in self.lines("gpu"):
            with self.subTest(profile=profile):
                self.gpu_line(CONFIG["profiles"][profile], vllm, shim)

    def gpu_line(self, p: dict, vllm: Line, shim: Line):
        # H2O card: the Triton backend (the two-way plugin refuses FlashAttention at start)
        self.assertEqual(vllm.flag("--attention-backend"), "TRITON_ATTN")
        # bf16 with the logits in fp32 (the H2O checkpoint ships "head_dtype": "float32";
        # serve.sh gives every bf16 profile that head unless it opts out with "model":
        # docs/determinism.md "fp32 labels")
        self.assertEqual(vllm.flag("--dtype"), "bfloat16")
        if p.get("head_dtype") == "model":
            self.assertIsNone(vllm.flag("--hf-overrides"))
        else:
            self.assertEqual(vllm.json("--hf-overrides"), FP32_HEAD)
        # Lichen's `VLLM_BATCH_INVARIANT=1 vllm serve` (docs/determinism.md "GPU")
        self.assertEqual(vllm.env.get("VLLM_BATCH_INVARIANT"), "1")
        # the engine plugin's two entry points (docs/engine.md, docs/determinism.md)
        self.assertEqual(vllm.env.get("VLLM_PLUGINS"),
                         "onepass_two_way,onepass_batch_invariant")
        # box questions: one engine-wide structured-outputs config without free whitespace
        # (the card's disable_any_whitespace; its backend differs: SEED_DIFFERENCES)
        self.assertEqual(vllm.json("--structured-outputs-config"), STRUCTURED)
        # CUDA graphs and vLLM's block size on a GPU: the eager and 32-token-block flags
        # are the CPU's
        self.assertFalse(vllm.has("--enforce-eager"))
        self.assertIsNone(vllm.flag("--block-size"))
        self.assertNotIn("VLLM_CPU_OMP_THREADS_BIND", vllm.env)
        # H2O card: each engine configuration its own compile cache (vLLM keys its graphs
        # without hf_overrides or the image limits), under the cache folder
        self.assertRegex(vllm.env.get("VLLM_CACHE_ROOT", ""),
                         rf"^{re.escape(str(self.tmp / 'cache'))}/vllm/[0-9a-f]{{16}}$")
        # set reads run in vLLM's V1 runner only: a profile that reads choices as sets gets it
        sets = bool((p.get("layout") or {}).get("option_sets"))
        self.assertEqual(vllm.env.get("VLLM_USE_V2_MODEL_RUNNER"), "0" if sets else None)
        # H2O card: the front-end image-processor cache off, on the GPU vision profiles (the
        # embedded vision models are the CPU's, where the cache stays vLLM's default)
        if p.get("vision") and not p.get("embedded"):
            self.assertEqual(vllm.flag("--mm-processor-cache-gb"), "0")
        self.assertIsNone(vllm.flag("--max-num-batched-tokens"))
        self.assertEqual(shim.flag("--vllm-device"), "gpu")
        self.assertEqual(shim.flag("--vllm-dtype"), "bfloat16")

    def test_cpu_lines_hold_their_key_flags(self):
        for profile, vllm, shim in self.lines("cpu"):
            with self.subTest(profile=profile):
                self.cpu_line(CONFIG["profiles"][profile], vllm, shim)

    def cpu_line(self, p: dict, vllm: Line, shim: Line):
        dtype = vllm.flag("--dtype")
        self.assertIn(dtype, ("float32", "bfloat16"))
        self.assertIsNone(vllm.flag("--attention-backend"))
        self.assertEqual(vllm.env.get("VLLM_PLUGINS"),
                         "onepass_two_way,onepass_batch_invariant")
        self.assertNotIn("VLLM_BATCH_INVARIANT", vllm.env)
        self.assertTrue(vllm.has("--enforce-eager"))
        self.assertNotIn("VLLM_CACHE_ROOT", vllm.env)  # eager: nothing compiled
        self.assertNotIn("VLLM_USE_V2_MODEL_RUNNER", vllm.env)  # the CPU runs V1 only
        self.assertEqual(vllm.flag("--block-size"), "32")
        self.assertRegex(vllm.env.get("VLLM_CPU_OMP_THREADS_BIND", ""), r"^0-\d+$")
        self.assertEqual(vllm.env.get("VLLM_CPU_KVCACHE_SPACE"), "2")
        self.assertEqual(vllm.json("--structured-outputs-config"), STRUCTURED)
        fp32_head = dtype != "float32" and p.get("head_dtype") != "model"
        self.assertEqual(vllm.flag("--hf-overrides") is not None, fp32_head)
        self.assertEqual(shim.flag("--vllm-device"), "cpu")
        self.assertEqual(shim.flag("--vllm-dtype"), dtype)

    def test_lines_of_both_devices(self):
        for device in ("cpu", "gpu"):
            for profile, vllm, shim in self.lines(device):
                with self.subTest(profile=profile, device=device):
                    self.common_line(profile, vllm, shim)

    def common_line(self, profile: str, vllm: Line, shim: Line):
        p = CONFIG["profiles"][profile]
        self.assertEqual(vllm.argv[1:3], ["-m", "vllm.entrypoints.openai.api_server"])
        self.assertTrue(vllm.argv[0].endswith("/venv/bin/python"), vllm.argv[0])
        self.assertEqual(shim.argv[0], vllm.argv[0])
        for flag in ("--enable-tokenizer-info-endpoint", "--enable-log-requests",
                     "--enable-prompt-tokens-details"):
            self.assertTrue(vllm.has(flag), flag)
        self.assertEqual(vllm.flag("--served-model-name"), p["served_model_name"])
        self.assertEqual(vllm.flag("--max-model-len"), str(p["max_model_len"]))
        self.assertEqual(vllm.flag("--host"), "127.0.0.1")
        # vLLM answers only the shim: a key made at the start, in the environment (never argv,
        # which every local user can read), the same for the shim, no value shown
        self.assertEqual(vllm.env.get("VLLM_API_KEY"), "<fresh at start>")
        self.assertEqual(shim.env.get("ONEPASS_VLLM_KEY"), "<fresh at start>")
        self.assertFalse(vllm.has("--api-key"))
        self.assertNotIn("<fresh at start>", vllm.argv + shim.argv)
        # vLLM checks its key under /v1 only: the guard holds every route but /health, /metrics
        self.assertEqual(vllm.flag("--middleware"), "onepass_engine.guard.Guard")
        # ONEPASS_MODEL unset: the embedded build, offline
        embedded = p.get("embedded") or "smollm2-135m-instruct"
        self.assertEqual(vllm.flag("--model"), f"{self.tmp}/cache/models/{embedded}")
        self.assertEqual(vllm.env.get("HF_HUB_OFFLINE"), "1")
        # H2O card: vLLM never fetches a URL; the shim sends data URLs
        self.assertEqual(vllm.flag("--allowed-media-domains"), NO_FETCH_DOMAIN)
        self.assertEqual(vllm.env.get("VLLM_MEDIA_URL_ALLOW_REDIRECTS"), "0")
        vision = p.get("vision")
        if vision:
            self.assertEqual(vllm.json("--limit-mm-per-prompt"),
                             {"image": vision.get("max_images", 4) * IMAGE_REPEAT})
            self.assertEqual(vllm.json("--mm-processor-kwargs"),
                             vision.get("processor_kwargs") or None)
        else:
            self.assertIsNone(vllm.flag("--limit-mm-per-prompt"))
        # the shim talks to this vLLM, for this profile
        self.assertEqual(shim.argv[1], str(ROOT / "shim.py"))
        self.assertEqual(shim.flag("--vllm"),
                         f"http://127.0.0.1:{vllm.flag('--port')}")
        self.assertEqual(shim.flag("--config"), str(ROOT / "serve_config.json"))
        selected = None if profile == DEFAULT else profile
        self.assertEqual(shim.flag("--profile"), selected)
        self.assertEqual(shim.env.get("ONEPASS_PROFILE"), selected)

    def test_h2o_profile_takes_the_card_image_cap(self):
        """The H2O card: up to 4 images per request, each at most 1,638,400 pixels in vLLM."""
        vllm = self.blocks["h2o-lightning-4b", "gpu"]["vllm"]
        self.assertEqual(vllm.json("--mm-processor-kwargs"), {"max_pixels": 1638400})
        self.assertEqual(vllm.json("--limit-mm-per-prompt"),
                         {"image": 4 * IMAGE_REPEAT})

    def test_each_difference_from_a_seed_card_names_its_reason(self):
        for what, (card, doc, phrase) in SEED_DIFFERENCES.items():
            with self.subTest(what, card=card):
                text = " ".join((ROOT / doc).read_text(encoding="utf-8").split())
                self.assertIn(phrase, text, f"{doc} no longer says why ({card})")


class Settings(unittest.TestCase):
    """The settings the start reads change the dry run's lines the same way."""

    def dry_run(self, **env) -> subprocess.CompletedProcess:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        return dry_run(Path(tmp.name), **env)[0]

    def run_one(self, **env) -> dict[str, Line]:
        out = self.dry_run(**env)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        blocks = parse(out.stdout)
        self.assertEqual(len(blocks), 1, list(blocks))
        return next(iter(blocks.values()))

    def test_each_engine_configuration_has_its_own_compile_cache(self):
        roots = {p: self.run_one(ONEPASS_PROFILE=p, ONEPASS_DEVICE="gpu")["vllm"].env[
            "VLLM_CACHE_ROOT"] for p in PROFILES}
        self.assertEqual(len(set(roots.values())), len(PROFILES))  # one per profile
        # the same configuration on another port keeps its cache; another flag does not (each
        # run here has its own cache folder: the key is the last part)
        def key(**env):
            line = self.run_one(ONEPASS_PROFILE=DEFAULT, ONEPASS_DEVICE="gpu",
                                ONEPASS_MODEL="/models/m", **env)["vllm"]
            return Path(line.env["VLLM_CACHE_ROOT"]).name
        self.assertEqual(key(ONEPASS_VLLM_PORT="9911"), key())
        self.assertNotEqual(key(ONEPASS_VLLM_ARGS="--max-num-seqs 8"), key())

    def test_selected_profile_and_device(self):
        lines = self.run_one(ONEPASS_PROFILE="h2o-lightning-4b", ONEPASS_DEVICE="gpu",
                             ONEPASS_MODEL="h2oai/h2o-lightning-4b")
        vllm, shim = lines["vllm"], lines["shim"]
        self.assertEqual(vllm.flag("--model"), "h2oai/h2o-lightning-4b")
        self.assertNotIn("HF_HUB_OFFLINE", vllm.env)  # a hub id is fetched by vLLM
        self.assertEqual(shim.flag("--profile"), "h2o-lightning-4b")
        self.assertEqual(shim.env["ONEPASS_PROFILE"], "h2o-lightning-4b")

    def test_fp32_on_cpu_has_no_head_override(self):
        vllm = self.run_one(ONEPASS_PROFILE=DEFAULT, ONEPASS_DEVICE="cpu",
                            ONEPASS_DTYPE="float32")["vllm"]
        self.assertEqual(vllm.flag("--dtype"), "float32")
        self.assertIsNone(vllm.flag("--hf-overrides"))

    def test_batch_invariance_off(self):
        vllm = self.run_one(ONEPASS_PROFILE=DEFAULT, ONEPASS_DEVICE="gpu",
                            ONEPASS_BATCH_INVARIANT="0")["vllm"]
        self.assertNotIn("VLLM_BATCH_INVARIANT", vllm.env)
        self.assertEqual(vllm.env["VLLM_PLUGINS"], "onepass_two_way")
        self.assertEqual(vllm.flag("--attention-backend"), "TRITON_ATTN")

    def test_stock_vllm_with_patches_keeps_the_key_guard(self):
        """VLLM_PATCHES=1 (stock vLLM, no plugin, no engine/ .pth in its venv): the guard that
        holds /invocations and /generative_scoring to vLLM's key is still passed, importable
        from engine/ on PYTHONPATH, and no plugin is loaded (it was left out before: every route
        but /v1 answered any local process)."""
        for device in ("cpu", "gpu"):
            vllm = self.run_one(ONEPASS_PROFILE=DEFAULT, ONEPASS_DEVICE=device,
                                VLLM_PATCHES="1")["vllm"]
            self.assertEqual(vllm.flag("--middleware"), "onepass_engine.guard.Guard", device)
            self.assertEqual(vllm.env["PYTHONPATH"].split(":")[0], str(ROOT / "engine"))
            self.assertTrue((ROOT / "engine" / "onepass_engine" / "guard.py").is_file())
            self.assertEqual((vllm.env["VLLM_PLUGINS"], vllm.env["VLLM_API_KEY"]),
                             ("", "<fresh at start>"))
            self.assertTrue(vllm.argv[0].endswith("/venv/bin/python"))
        plain = self.run_one(ONEPASS_PROFILE=DEFAULT, ONEPASS_DEVICE="cpu")["vllm"]
        self.assertNotIn("PYTHONPATH", plain.env)  # the plugin's venv has engine/ on its path

    def test_extra_vllm_args_come_last(self):
        vllm = self.run_one(ONEPASS_PROFILE=DEFAULT, ONEPASS_DEVICE="gpu",
                            ONEPASS_VLLM_ARGS="--gpu-memory-utilization 0.9")["vllm"]
        self.assertEqual(vllm.argv[-2:], ["--gpu-memory-utilization", "0.9"])

    def test_the_api_key_is_withheld(self):
        out = self.dry_run(ONEPASS_PROFILE=DEFAULT, ONEPASS_DEVICE="cpu",
                           ONEPASS_API_KEY="s3cret-key,older-key")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertNotIn("s3cret", out.stdout)
        shim = parse(out.stdout)[DEFAULT, "cpu"]["shim"]
        self.assertEqual(shim.env["ONEPASS_API_KEY"], "<withheld>")

    def test_a_given_vllm_key_is_withheld_and_kept_out_of_the_compile_cache(self):
        same = {"ONEPASS_PROFILE": DEFAULT, "ONEPASS_DEVICE": "gpu", "ONEPASS_MODEL": "/models/m"}
        lines = self.run_one(ONEPASS_VLLM_KEY="vllm-s3cret", **same)
        self.assertNotIn("vllm-s3cret", repr(vars(lines["vllm"])) + repr(vars(lines["shim"])))
        self.assertEqual((lines["vllm"].env["VLLM_API_KEY"], lines["shim"].env[
            "ONEPASS_VLLM_KEY"]), ("<withheld>", "<withheld>"))
        cache = lambda line: Path(line.env["VLLM_CACHE_ROOT"]).name
        # another key (each start's is new) keeps the compiled graphs
        self.assertEqual(cache(lines["vllm"]), cache(self.run_one(**same)["vllm"]))

    def test_bad_settings_stop_with_exit_10(self):
        for env, says in (({"ONEPASS_DEVICE": "tpu"}, "ONEPASS_DEVICE must be"),
                          ({"ONEPASS_PROFILE": "no-such-profile"}, "no profile 'no-such-profile'")):
            with self.subTest(**env):
                out = self.dry_run(**env)
                self.assertEqual(out.returncode, 10, out.stdout + out.stderr)
                self.assertIn(says, out.stderr)


if __name__ == "__main__":
    unittest.main()
