"""tools/models/model_manifest.py verify: a cached model build is kept when it matches the
digests recorded in the repo, built again when the repo now records other ones (a grounding
checkpoint shipped since), and refused when its files no longer match its own manifest.
Run: python3 -S -m unittest tests.unit.test_model_manifest
"""
import io
import sys
import tempfile
import unittest
from contextlib import redirect_stderr
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "models"))
import model_manifest as mm  # noqa: E402


def build(root: Path, content: bytes) -> tuple[Path, str]:
    out = root / "model"
    out.mkdir()
    (out / "model.safetensors").write_bytes(content)
    digest = mm.sha256(out / "model.safetensors")
    (out / mm.MANIFEST).write_text(f"{digest}  model.safetensors\n")
    return out, digest


class VerifyTest(unittest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp())

    def test_a_build_of_the_recorded_digests_is_kept(self):
        out, digest = build(self.root, b"weights")
        self.assertTrue(mm.verify(out, {"model.safetensors": digest}, "t"))
        self.assertTrue((out / "model.safetensors").exists())

    def test_a_build_of_other_recorded_digests_is_removed_for_a_rebuild(self):
        out, _ = build(self.root, b"older weights")
        newer = "0" * 64  # what the repo records now
        err = io.StringIO()
        with redirect_stderr(err):
            self.assertFalse(mm.verify(out, {"model.safetensors": newer}, "t"))
        self.assertFalse(out.exists())
        self.assertIn("rebuilding", err.getvalue())

    def test_a_damaged_build_is_refused_and_left_alone(self):
        out, digest = build(self.root, b"weights")
        (out / "model.safetensors").write_bytes(b"weightz")
        with self.assertRaises(SystemExit) as stop:
            mm.verify(out, {"model.safetensors": digest}, "t")
        self.assertIn("does not match", str(stop.exception.code))
        self.assertTrue(out.exists())

    def test_no_manifest_is_no_build(self):
        self.assertFalse(mm.verify(self.root / "absent", {}, "t"))


if __name__ == "__main__":
    unittest.main()
