"""Stand-ins for the engine plugin's unit tests (tests/unit/engine/): its modules loaded from
engine/ when the run has torch and vLLM (the venv), and fake vLLM callables with the exact
signatures contract.py pins, so a wrapper is called the way vLLM 0.32.0 calls it.
Standard library only: the stdlib run (python3 -S) imports it and skips those tests; where
vLLM is installed a module that fails to import fails the run (tests/support/venv_only.py).
"""
import importlib
import sys

from tests.support.paths import ROOT
from tests.support.venv_only import load

ENGINE = str(ROOT / "engine")


def engine(*names: str) -> tuple:
    """onepass_engine's modules `names`, or as many Nones when this python has no torch or no
    vLLM (python3 -S); an ImportError where both are installed."""
    if ENGINE not in sys.path:
        sys.path.insert(0, ENGINE)
    got = load(lambda: tuple(importlib.import_module(f"onepass_engine.{name}")
                             for name in names), "torch", "vllm")
    return got or (None,) * len(names)


def stand_in(module: str, cls: str, attr: str, record):
    """A fake of vLLM's module.cls.attr with the signature contract.py pins for it: it hands
    its arguments, by name, to `record` and returns what record returns."""
    (contract,) = engine("contract")
    signature = contract.SIGNATURES[module, cls, attr]
    namespace = {"record": record}
    exec(f"def original{signature}:\n    return record(dict(locals()))\n", namespace)
    return namespace["original"]
