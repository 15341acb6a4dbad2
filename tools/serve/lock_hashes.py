"""Write the sha256 of every distribution file pip may install into a lock (deps/*.txt).

Usage: python3 tools/serve/lock_hashes.py [--index-only] [--resolve] LOCK...
Each `name==version` of LOCK gets one `--hash=sha256:` per file that pip could pick for it on
Linux x86_64 (glibc) with CPython 3.11: every compatible wheel the index publishes for that
release (several manylinux tags, abi3, py3-none-any), or its sdist when no wheel fits. The
hashes come from the index's own listing (PyPI's JSON simple API, INDEX below); then, unless
--index-only, the lock is fetched with `pip download --no-deps` under this machine's pip
configuration, and each file pip picked must be one of those hashes, so a mirror or wheel
folder that serves other bytes than the index is caught. A release the index does not have
(torch's `+cpu` build, from PyTorch's own index) is hashed from the file pip downloaded.
--resolve (deps/gpu.txt): the pins above RESOLVED are the roots; everything below it is
replaced by pip's resolve of them against the index alone (no local configuration), sorted.
Comments are kept; the lock is rewritten in place. Exit 0 written, 1 a check failed, 2 unreachable.
"""
import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from check_gpu_pins import canonical, pip_env, version_key

INDEX = "https://pypi.org/simple/"
RESOLVED = "# Resolved by pip from the pins above"
PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)")
HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")
PLATFORM = re.compile(r"any|linux_x86_64|manylinux(1|2010|2014|_\d+_\d+)_x86_64")


class Unreachable(RuntimeError):
    """The index or pip could not be used."""


def parse(text: str) -> list:
    """The lock as items: a comment or blank line (str), or a requirement
    {"name", "version", "hashes"}; backslash-continued lines are one requirement."""
    items, logical = [], ""
    for raw in text.splitlines():
        if not logical and (not raw.strip() or raw.lstrip().startswith("#")):
            items.append(raw)
            continue
        logical += " " + raw.rstrip().removesuffix("\\")
        if raw.rstrip().endswith("\\"):
            continue
        words, logical = logical.split(), ""
        m = PIN.fullmatch(words[0])
        rest = [HASH.fullmatch(w) for w in words[1:]]
        if not m or not all(rest):
            raise ValueError(f"not `name==version [--hash=sha256:HEX]...`: {' '.join(words)!r}")
        items.append({"name": m.group(1), "version": m.group(2),
                      "hashes": [h.group(1) for h in rest]})
    if logical:
        raise ValueError("the lock ends inside a continued line")
    return items


def requirements(text: str) -> list:
    return [i for i in parse(text) if isinstance(i, dict)]


def render(items: list) -> str:
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
            continue
        out.append(f"{item['name']}=={item['version']}" + (" \\" if item["hashes"] else ""))
        for n, h in enumerate(sorted(item["hashes"]), 1):
            out.append(f"    --hash=sha256:{h}" + (" \\" if n < len(item["hashes"]) else ""))
    return "\n".join(out) + "\n"


def same_version(a: str, b: str) -> bool:
    """PEP 440 equality (1.0 == 1.0.0), local labels included (2.13.0+cpu is not 2.13.0)."""
    try:
        return version_key(a) == version_key(b) and \
            a.lower().partition("+")[2] == b.lower().partition("+")[2]
    except ValueError:
        return False


def wheel_fits(filename: str) -> bool:
    """Whether pip on CPython 3.11, Linux x86_64 (glibc), may install this wheel."""
    py, abi, plat = filename[:-4].split("-")[-3:]
    if not any(PLATFORM.fullmatch(p) for p in plat.split(".")):
        return False
    for i in py.split("."):
        for a in abi.split("."):
            m = re.fullmatch(r"(py|cp)3(\d*)", i)
            if not m or (m.group(2) and int(m.group(2)) > 11):
                continue
            if a == "none" and (m.group(1) == "py" or i == "cp311"):
                return True
            if (a == "abi3" and m.group(1) == "cp") or (a == "cp311" and i == "cp311"):
                return True
    return False


def release_of(filename: str) -> tuple:
    """(canonical name, version, kind) of a distribution file name, kind wheel or sdist."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        return canonical(parts[0]), parts[1], "wheel"
    for ext in (".tar.gz", ".zip", ".tar.bz2"):
        if filename.endswith(ext):
            name, _, version = filename[:-len(ext)].rpartition("-")
            return canonical(name), version, "sdist"
    return "", "", ""


def index_hashes(name: str, version: str, index: str = INDEX, timeout: float = 60) -> tuple:
    """(sorted sha256s, kind) of the files pip may pick for name==version from the index:
    its compatible wheels, else its sdist; ([], None) when the index has no such release."""
    url = index.rstrip("/") + "/" + canonical(name) + "/"
    request = urllib.request.Request(url, headers={
        "Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            files = json.load(answer)["files"]
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return [], None
        raise Unreachable(f"{url}: {e}") from None
    except (OSError, ValueError, KeyError) as e:
        raise Unreachable(f"{url}: {e}") from None
    found = {"wheel": set(), "sdist": set()}
    for f in files:
        fname, fver, kind = release_of(f["filename"])
        if kind and fname == canonical(name) and same_version(fver, version) and \
                "sha256" in f.get("hashes", {}) and (kind == "sdist" or wheel_fits(f["filename"])):
            found[kind].add(f["hashes"]["sha256"])
    for kind in ("wheel", "sdist"):
        if found[kind]:
            return sorted(found[kind]), kind
    return [], None


def sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def downloaded_hashes(reqs: list, sdists: set) -> dict:
    """{canonical name: sha256} of the files `pip download --no-deps` picks here."""
    with tempfile.TemporaryDirectory(prefix="lock-hashes-") as tmp:
        listing = Path(tmp) / "requirements.txt"
        listing.write_text("".join(f"{r['name']}=={r['version']}\n" for r in reqs))
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary",
               ":all:", *(f"--no-binary={n}" for n in sorted(sdists)), "-d", tmp,
               "-r", str(listing)]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise Unreachable("pip download: " + " ".join(run.stderr.strip().splitlines()[-3:]))
        return {release_of(p.name)[0]: sha256(p) for p in Path(tmp).iterdir()
                if release_of(p.name)[2]}


def resolve(items: list) -> list:
    """The items up to RESOLVED, then pip's full resolve of the pins above it (index only)."""
    cut = next((n for n, i in enumerate(items) if isinstance(i, str) and i.startswith(RESOLVED)),
               None)
    if cut is None:
        raise ValueError(f"--resolve needs a line starting {RESOLVED!r} below the roots")
    if sys.version_info[:2] != (3, 11) or sys.platform != "linux":
        raise ValueError("--resolve resolves for the Python it runs on: run it with CPython 3.11 "
                         "on Linux x86_64")
    roots = [i for i in items[:cut] if isinstance(i, dict)]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        run = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                              "--ignore-installed", "--only-binary", ":all:", "--report",
                              str(report), *(f"{r['name']}=={r['version']}" for r in roots)],
                             capture_output=True, text=True, env=pip_env())
        if run.returncode != 0:
            raise Unreachable("pip resolve: " + " ".join(run.stderr.strip().splitlines()[-3:]))
        found = [i["metadata"] for i in json.loads(report.read_text())["install"]]
    have = {canonical(r["name"]) for r in roots}
    rest = sorted((m for m in found if canonical(m["name"]) not in have),
                  key=lambda m: canonical(m["name"]))
    return items[:cut + 1] + [{"name": m["name"], "version": m["version"], "hashes": []}
                              for m in rest]


def rehash(items: list, index: str, download: bool, say=print) -> list:
    """Every requirement's hashes replaced by the index's (checked against pip's download)."""
    reqs = [i for i in items if isinstance(i, dict)]
    sdists, missing = set(), []
    for r in reqs:
        r["hashes"], kind = index_hashes(r["name"], r["version"], index)
        if kind == "sdist":
            sdists.add(canonical(r["name"]))
            say(f"lock_hashes: {r['name']}=={r['version']}: no wheel fits, its sdist is hashed")
        elif kind is None:
            missing.append(r)
    if missing and not download:
        raise ValueError("not on the index, and --index-only: " +
                         ", ".join(f"{r['name']}=={r['version']}" for r in missing))
    if download:
        got = downloaded_hashes(reqs, sdists)
        for r in reqs:
            digest = got.get(canonical(r["name"]))
            if digest is None:
                raise ValueError(f"pip download gave no file for {r['name']}=={r['version']}")
            if r in missing:
                say(f"lock_hashes: {r['name']}=={r['version']}: not on the index; hashed from "
                    "the file pip downloaded here")
                r["hashes"] = [digest]
            elif digest not in r["hashes"]:
                raise ValueError(f"{r['name']}=={r['version']}: pip downloaded a file "
                                 f"(sha256 {digest}) that the index does not publish")
    return items


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("locks", nargs="+", type=Path)
    parser.add_argument("--index", default=INDEX, help="a PEP 691 simple index")
    parser.add_argument("--index-only", action="store_true",
                        help="no pip download cross-check (the GPU lock's wheels are GBs)")
    parser.add_argument("--resolve", action="store_true")
    args = parser.parse_args(argv)
    for lock in args.locks:
        try:
            items = parse(lock.read_text())
            if args.resolve:
                items = resolve(items)
            items = rehash(items, args.index, not args.index_only)
        except ValueError as e:
            print(f"lock_hashes: {lock}: {e}", file=sys.stderr)
            return 1
        except Unreachable as e:
            print(f"lock_hashes: {lock}: not written: {e}", file=sys.stderr)
            return 2
        lock.write_text(render(items))
        reqs = [i for i in items if isinstance(i, dict)]
        print(f"lock_hashes: {lock}: {len(reqs)} pins, "
              f"{sum(len(r['hashes']) for r in reqs)} hashes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
