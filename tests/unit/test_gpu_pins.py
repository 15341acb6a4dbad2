"""Stdlib tests of tools/serve/check_gpu_pins.py: the pure parts offline (requirements, versions,
markers, the lock, torchcodec's table, the conflict check), then deps/gpu.txt against the
registry's published metadata through the venv's pip, skipped with the reason where pip or the
registry cannot be reached, failed where the registry answers that a pinned release is not there."""
import os
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "serve"))
import check_gpu_pins as cg  # noqa: E402

NOT_FOUND = ("ERROR: Could not find a version that satisfies the requirement torch==9.9 (from "
             "versions: none)")
ENV = dict(cg.TARGET, python_version="3.11", python_full_version="3.11.7")
README = """| `torchcodec`       | `torch`            | Python              |
| ------------------ | ------------------ | ------------------- |
| `main` / `nightly` | `main` / `nightly` | `>=3.10`, `<=3.14`   |
| `0.13`             | `>=2.11`             | `>=3.10`, `<=3.14`   |
| `0.11`             | `2.11`             | `>=3.10`, `<=3.14`   |
"""


def meta(name, version, requires=(), python=None, description=""):
    return {"name": name, "version": version, "requires_dist": list(requires),
            "requires_python": python, "description": description}


class PureTest(unittest.TestCase):
    def test_requirement_lines_as_metadata_writes_them(self):
        """check_gpu_pins.parse_requirement: specifiers, extras, parenthesised forms, markers."""
        r = cg.parse_requirement('transformers<5.20.0,>=5.16.1')
        self.assertEqual((r["name"], r["specs"], r["marker"]),
                         ("transformers", [("<", "5.20.0"), (">=", "5.16.1")], None))
        r = cg.parse_requirement('torch (==2.13.0)')
        self.assertEqual(r["specs"], [("==", "2.13.0")])
        r = cg.parse_requirement('mistral_common[image]>=1.11.6; extra == "audio"')
        self.assertEqual((r["name"], r["marker"]), ("mistral-common", 'extra == "audio"'))
        self.assertEqual(cg.parse_requirement("regex")["specs"], [])
        self.assertEqual(cg.parse_requirement("pkg @ https://x/y.whl")["specs"], [])
        with self.assertRaises(ValueError):
            cg.parse_requirement("torch =! 2")

    def test_versions_compare_as_pep_440_says(self):
        """check_gpu_pins.satisfies: ordering, wildcards, compatible release, local labels."""
        self.assertTrue(cg.satisfies("2.13.0", [("==", "2.13.0")]))
        self.assertTrue(cg.satisfies("2.13.0+cpu", [("==", "2.13.0")]))
        self.assertTrue(cg.satisfies("2.13", [("==", "2.13.0")]))
        self.assertFalse(cg.satisfies("2.12.1", [("==", "2.13.0")]))
        self.assertTrue(cg.satisfies("5.19.0", [("<", "5.20.0"), (">=", "5.16.1")]))
        self.assertFalse(cg.satisfies("5.20.0", [("<", "5.20.0"), (">=", "5.16.1")]))
        self.assertFalse(cg.satisfies("5.16.0", [("<", "5.20.0"), (">=", "5.16.1")]))
        self.assertFalse(cg.satisfies("6.33.1", [("!=", "6.33.1.*")]))
        self.assertTrue(cg.satisfies("7.36.2", [("!=", "6.33.*"), (">=", "5.29.6")]))
        self.assertTrue(cg.satisfies("1.4.5", [("~=", "1.4.2")]))
        self.assertFalse(cg.satisfies("1.5.0", [("~=", "1.4.2")]))
        self.assertTrue(cg.satisfies("0.7.0.post1", [(">", "0.7.0")]))
        self.assertTrue(cg.satisfies("2.0.0rc1", [("<", "2.0.0")]))
        self.assertTrue(cg.satisfies("2.0.0.dev1", [("<", "2.0.0a1")]))
        with self.assertRaises(ValueError):
            cg.version_key("latest")

    def test_markers_for_the_gpu_machine(self):
        """check_gpu_pins.marker_true: and/or/parentheses, versions compared as versions."""
        self.assertTrue(cg.marker_true('platform_machine == "x86_64" or '
                                       'platform_machine == "aarch64"', ENV))
        self.assertFalse(cg.marker_true('platform_machine == "s390x"', ENV))
        self.assertFalse(cg.marker_true('extra == "bench"', ENV))
        self.assertFalse(cg.marker_true('python_version > "3.11"', ENV))
        self.assertTrue(cg.marker_true('python_version >= "3.9"', dict(ENV, python_version="3.10")))
        self.assertTrue(cg.marker_true('platform_system == "Linux" and (python_version < "3.15")',
                                       ENV))
        self.assertTrue(cg.marker_true("'linux' in sys_platform", ENV))
        self.assertTrue(cg.marker_true(None, ENV))

    def test_the_lock_is_read_pin_by_pin(self):
        """check_gpu_pins.read_pins: deps/gpu.txt pins every line exactly, vllm 0.32.0 first."""
        pins = cg.read_pins((ROOT / "deps" / "gpu.txt").read_text())
        self.assertEqual(next(iter(pins.items())), ("vllm", "0.32.0"))
        for name in ("torch", "torchvision", "torchaudio", "torchcodec", "transformers"):
            self.assertIn(name, pins)
        with self.assertRaises(ValueError):
            cg.read_pins("vllm==0.32.0\ntransformers>=5\n")

    def test_torchcodec_table(self):
        """check_gpu_pins.torchcodec_table: the README rows, `>=2.11` and an exact `2.11`."""
        table = cg.torchcodec_table(README)
        self.assertEqual(table, {"0.13": [(">=", "2.11")], "0.11": [("==", "2.11.*")]})

    def test_conflicts_are_named_and_a_consistent_set_passes(self):
        """check_gpu_pins.check: a pin outside a pinned package's Requires-Dist, a Python the
        package refuses, a torchcodec built for another torch; none for a consistent set."""
        pins = {"vllm": "0.32.0", "torch": "2.13.0", "torchcodec": "0.13.0",
                "transformers": "5.19.0"}
        metadata = {"vllm": meta("vllm", "0.32.0", ["torch==2.13.0", "transformers<5.20.0,>=5.16.1",
                                                     'torch==2.0; platform_machine == "s390x"',
                                                     "regex"], ">=3.10"),
                    "torch": meta("torch", "2.13.0"), "transformers": meta("transformers", "5.19.0"),
                    "torchcodec": meta("torchcodec", "0.13.0", description=README)}
        self.assertEqual(cg.check(pins, metadata, ENV), [])
        moved = dict(metadata, torch=meta("torch", "2.10.0"),
                     transformers=meta("transformers", "5.20.0"))
        bad = cg.check(dict(pins, transformers="5.20.0", torch="2.10.0"), moved, ENV)
        self.assertEqual(len(bad), 3, bad)
        self.assertTrue(any("transformers is pinned to 5.20.0" in p for p in bad))
        self.assertTrue(any("torch is pinned to 2.10.0" in p for p in bad))
        self.assertTrue(any("built for torch >=2.11, not 2.10.0" in p for p in bad))
        old = cg.check(pins, metadata, dict(ENV, python_full_version="3.9.18"))
        self.assertEqual(len(old), 1)
        self.assertIn("requires Python >=3.10", old[0])
        self.assertIn("torch: pinned 2.10.0, the registry gave 2.13.0",
                      cg.check(dict(pins, torch="2.10.0"), metadata, ENV))
        metadata["torchcodec"] = meta("torchcodec", "0.14.0", description=README)
        missing = cg.check(dict(pins, torchcodec="0.14.0"), metadata, ENV)
        self.assertIn("not in its own compatibility table", missing[0])
        newest = dict(metadata, **{cg.LATEST_TORCHCODEC: meta(
            "torchcodec", "0.15.0", description=README.replace("`0.13`", "`0.14`"))})
        self.assertEqual(cg.check(dict(pins, torchcodec="0.14.0"), newest, ENV), [])


class PipOutputTest(unittest.TestCase):
    """dry_run tells a registry it could not reach (a skip) from one that refused a pin (a
    failure) by pip's words, on a stand-in python that exits 1 saying them."""

    def pip_saying(self, stderr: str):
        with tempfile.TemporaryDirectory() as tmp:
            fake = Path(tmp) / "python"
            fake.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{stderr}\nEOF\nexit 1\n")
            fake.chmod(0o755)
            cg.dry_run(str(fake), ["torch==2.10.0"], timeout=30)

    def test_no_such_release_is_refused(self):
        with self.assertRaises(cg.Refused):
            self.pip_saying(f"{NOT_FOUND}\nERROR: No matching distribution found for torch==9.9")

    def test_no_answer_from_the_index_is_unreachable(self):
        for why in ("NewConnectionError('<HTTPSConnection>: Failed to establish a new "
                    "connection: [Errno -3] Temporary failure in name resolution')",
                    "ProxyError('Cannot connect to proxy.')"):
            with self.subTest(why), self.assertRaises(cg.Unreachable):
                self.pip_saying(f"WARNING: Retrying (Retry(total=4, connect=None)) after "
                                f"connection broken by '{why}': /simple/torch/\n{NOT_FOUND}")


class RegistryTest(unittest.TestCase):
    def test_deps_gpu_txt_is_consistent_on_the_registry(self):
        """tools/serve/check_gpu_pins.py against the registry: the lock's published metadata agrees
        with itself (a dry run through the venv's pip; nothing is installed)."""
        python = Path(os.environ.get("ONEPASS_VENV") or ROOT / ".venv") / "bin" / "python"
        pins = cg.read_pins((ROOT / "deps" / "gpu.txt").read_text())
        try:
            metadata, env = cg.fetch_metadata(pins, str(python), timeout=90)
        except cg.Unreachable as e:
            self.skipTest(f"registry check not run: {e}")
        except cg.Refused as e:
            self.fail(str(e))
        self.assertEqual(set(pins) - set(metadata), set())
        self.assertEqual(cg.check(pins, metadata, env), [])


if __name__ == "__main__":
    unittest.main()
