"""The sha256 manifest that the model builders (build_model.py, build_hybrid.py, build_vlm.py)
share.

Owns: hashing a file, checking a finished build against its SHA256SUMS manifest and the digests
recorded in the repo, the fresh `.partial` directory a build writes into and the sibling
tokenizer the random-weight builds borrow, and publishing a build (check, write the manifest,
rename into place).
A finished build is recognised by its manifest and checked, never rebuilt, unless the digests
recorded in the repo have changed since (then it is built again).
"""
import hashlib
import os
import shutil
import sys
from pathlib import Path

MANIFEST = "SHA256SUMS"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(out: Path, expected: dict, tool: str) -> bool:
    """True when OUT holds a finished build whose files match its manifest; exits on damage.
    A build of other recorded digests (a grounding checkpoint shipped since it was
    built) is removed, and False returned, so that it is built again."""
    manifest = out / MANIFEST
    if not manifest.exists():
        return False
    recorded = dict(reversed(line.split(None, 1)) for line in manifest.read_text().splitlines())
    # a build the repo no longer records is replaced whole, so its files need no hashing first
    stale = [name for name, digest in recorded.items() if expected.get(name, digest) != digest]
    if stale:
        print(f"{tool}: {out} was built from other weights ({', '.join(stale)}); rebuilding",
              file=sys.stderr)
        shutil.rmtree(out)
        return False
    for name, digest in recorded.items():
        if sha256(out / name) != digest:
            sys.exit(f"{tool}: {out / name} does not match its recorded sha256; "
                     f"delete {out} to rebuild")
    return True


def sibling_tokenizer(out: Path, name: str, files: tuple, tool: str) -> Path:
    """The tokenizer directory built beside OUT (tools/models/build_model.py); exits if it is
    missing."""
    tokenizer_dir = out.parent / name
    missing = [n for n in files if not (tokenizer_dir / n).exists()]
    if missing:
        sys.exit(f"{tool}: {tokenizer_dir} lacks {missing}; run tools/models/build_model.py "
                 f"{tokenizer_dir} first")
    return tokenizer_dir


def fresh_partial(out: Path) -> Path:
    """An empty OUT.partial to build into (a crashed earlier build's files are removed)."""
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def publish(tmp: Path, out: Path, expected: dict, tool: str, hint: str) -> None:
    """Check the fresh build in TMP against the recorded digests, then move it to OUT."""
    digests = {p.name: sha256(p) for p in sorted(tmp.iterdir()) if p.is_file()}
    for name, digest in expected.items():
        if digests[name] != digest:
            sys.exit(f"{tool}: {name} built to sha256 {digests[name]}, not the recorded "
                     f"{digest}; {hint} (partial build left in {tmp})")
    (tmp / MANIFEST).write_text("".join(f"{d}  {name}\n" for name, d in digests.items()))
    os.replace(tmp, out)


def main(build, expected: dict | None, tool: str, models: dict | None = None) -> None:
    """A builder's command line: OUT_DIR is checked if built, else built; then printed. With
    MODELS ({name: expected digests}), `--model NAME` picks one (default: the first) and the
    build is called as build(out, name)."""
    args = sys.argv[1:]
    usage = f"usage: python tools/{tool}.py OUT_DIR" + (
        f" [--model {'|'.join(models)}]" if models else "")
    if {"-h", "--help"} & set(args):  # usage, and nothing built
        sys.exit(print(usage))
    name = None
    if models:
        name = next(iter(models))
        if "--model" in args:
            i = args.index("--model")
            name = args[i + 1] if i + 1 < len(args) else ""
            del args[i:i + 2]
        if name not in models:
            sys.exit(f"{tool}: unknown model {name!r}; one of {', '.join(models)}")
        expected = models[name]
    if len(args) != 1:
        sys.exit(usage)
    out = Path(args[0]).expanduser().resolve()
    if not verify(out, expected, tool):
        out.parent.mkdir(parents=True, exist_ok=True)
        build(out) if name is None else build(out, name)
    print(out)
