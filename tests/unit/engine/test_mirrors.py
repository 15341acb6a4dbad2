"""Every module of the engine plugin has its unit test file: engine/onepass_engine/NAME.py is
tested in tests/unit/engine/test_NAME.py, its __init__.py in test_init.py (tests/unit/
test_architecture.py holds onepass/ to the same rule).
Run: python3 -S -m unittest tests.unit.engine.test_mirrors
"""
import unittest
from pathlib import Path

from tests.support.paths import ROOT

PLUGIN = ROOT / "engine" / "onepass_engine"
HERE = Path(__file__).resolve().parent


def mirror(module: Path) -> Path:
    name = "init" if module.stem == "__init__" else module.stem
    return HERE / f"test_{name}.py"


class TestMirrors(unittest.TestCase):
    def test_every_plugin_module_has_its_test_file(self):
        modules = sorted(PLUGIN.glob("*.py"))
        self.assertIn(PLUGIN / "__init__.py", modules)
        missing = [str(mirror(m).relative_to(ROOT)) for m in modules if not mirror(m).is_file()]
        self.assertEqual(missing, [])
        self.assertTrue((HERE / "__init__.py").is_file())  # discovery enters packages only


if __name__ == "__main__":
    unittest.main()
