"""Check that deps/gpu.txt's pins agree with each other as their published metadata says.

Usage: python3 tools/serve/check_gpu_pins.py [--lock deps/gpu.txt] [--python .venv/bin/python]
       [--timeout 120]
Owns: reading the lock's pins (every requirement `name==version`, hashes aside); one pip dry
run (`--no-deps --ignore-installed --report`) that fetches each pinned release's published metadata from the
registry; then, for every pinned package, each Requires-Dist that names another pinned package
(markers evaluated for Linux x86_64 and the interpreter pip runs on) checked against that pin,
Requires-Python, and torchcodec's own compatibility table (the README in its metadata) against
the torch pin. The parsing and checking are pure functions (tests/unit/test_gpu_pins.py).
Never installs anything (a dry run), never changes the lock, and never lets this machine's pip
configuration, local wheel folders or constraints in: the registry's metadata only, as a user's
pip sees it. Exit: 0 consistent, 1 a conflict (each printed) or a pin the registry refuses (no
such release, no file for the target), 2 pip or the registry unreachable (pip's own words say
which).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "deps" / "gpu.txt"
# The machine a GPU user runs serve.sh on; the Python version comes from the interpreter used.
TARGET = {"platform_machine": "x86_64", "platform_system": "Linux", "sys_platform": "linux",
          "os_name": "posix", "implementation_name": "cpython",
          "platform_python_implementation": "CPython", "extra": ""}
VERSION_KEYS = {"python_version", "python_full_version", "implementation_version"}
LATEST_TORCHCODEC = "torchcodec (newest release)"  # metadata key of the newest torchcodec
PHASES = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


class Unreachable(RuntimeError):
    """pip or the registry could not be used: the check cannot say anything."""


class Refused(RuntimeError):
    """The registry answered and has no such release (or no file for the target): a pin is
    wrong."""


# pip's words when it never got an answer from the index (DNS, proxy, TLS, timeouts, a 5xx):
# then "No matching distribution" says nothing about the pin.
NETWORK = re.compile(r"Retrying \(Retry|Could not fetch URL|NewConnectionError|ConnectTimeout|"
                     r"ReadTimeout|ProxyError|SSLError|Failed to establish a new connection|"
                     r"name resolution|Network is unreachable|Connection refused|HTTP error 5\d\d")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def version_key(text: str) -> tuple:
    """A PEP 440 sort key (release, pre, post, dev); a local label (+cpu) is ignored."""
    m = re.fullmatch(r"\s*v?(?:\d+!)?(\d+(?:\.\d+)*)(?:[-_.]?(a|alpha|b|beta|c|rc|pre|preview)"
                     r"[-_.]?(\d*))?(?:[-_.]?(?:post|rev|r)[-_.]?(\d*)|-(\d+))?"
                     r"(?:[-_.]?dev[-_.]?(\d*))?(?:\+[a-z0-9.]+)?\s*", text.lower())
    if not m:
        raise ValueError(f"not a version: {text!r}")
    release = [int(x) for x in m.group(1).split(".")]
    while len(release) > 1 and release[-1] == 0:  # 2.13 == 2.13.0
        release.pop()
    post = m.group(4) if m.group(4) is not None else m.group(5)
    dev = m.group(6)
    if m.group(2):
        pre = (0, PHASES[m.group(2)], int(m.group(3) or 0))
    elif dev is not None and post is None:
        pre = (-1,)  # 1.0.dev1 sorts before 1.0a1
    else:
        pre = (1,)
    return (tuple(release), pre, int(post or 0) if post is not None else -1,
            int(dev or 0) if dev is not None else float("inf"))


def _prefix_match(version: str, prefix: str) -> bool:
    """`==2.13.*`: the release starts with the prefix's numbers."""
    have = re.match(r"\d+(?:\.\d+)*", version).group(0).split(".")
    want = prefix.split(".")
    have += ["0"] * (len(want) - len(have))
    return [int(x) for x in have[:len(want)]] == [int(x) for x in want]


def satisfies(version: str, specs: list) -> bool:
    """Whether `version` meets every (operator, version) pair (PEP 440 operators)."""
    v = version_key(version)
    for op, want in specs:
        if op in ("==", "!=") and want.endswith(".*"):
            ok = _prefix_match(version, want[:-2])
            ok = ok if op == "==" else not ok
        elif op == "===":
            ok = version == want
        elif op == "~=":
            parts = want.split(".")
            ok = v >= version_key(want) and _prefix_match(version, ".".join(parts[:-1]))
        else:
            w = version_key(want)
            ok = {"==": v == w, "!=": v != w, ">=": v >= w, "<=": v <= w, ">": v > w,
                  "<": v < w}[op]
        if not ok:
            return False
    return True


def parse_requirement(line: str) -> dict:
    """`name[extra] (>=1,<2); marker` -> {name, specs [(op, version)], marker or None}."""
    req, _, marker = line.partition(";")
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$", req)
    if not m:
        raise ValueError(f"not a requirement: {line!r}")
    rest = m.group(3).strip()
    if rest.startswith("@"):  # a direct URL: no version to check
        rest = ""
    rest = rest.strip("() ")
    specs = []
    for part in filter(None, (p.strip() for p in rest.split(","))):
        sm = re.fullmatch(r"(===|==|!=|~=|>=|<=|>|<)\s*(\S+)", part)
        if not sm:
            raise ValueError(f"not a version specifier: {part!r} in {line!r}")
        specs.append((sm.group(1), sm.group(2)))
    return {"name": canonical(m.group(1)), "specs": specs, "marker": marker.strip() or None}


def marker_true(marker, env: dict) -> bool:
    """Evaluate a PEP 508 environment marker (and, or, parentheses, every comparison)."""
    if not marker:
        return True
    tokens = re.findall(r"\(|\)|'[^']*'|\"[^\"]*\"|===|==|!=|~=|>=|<=|<|>|not\s+in\b|\bin\b"
                        r"|\band\b|\bor\b|[A-Za-z_][A-Za-z0-9_.]*", marker)
    pos = 0

    def value():
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok[0] in "'\"":
            return tok[1:-1], False
        if tok not in env:
            raise ValueError(f"unknown marker variable {tok!r} in {marker!r}")
        return env[tok], tok in VERSION_KEYS

    def compare():
        nonlocal pos
        if tokens[pos] == "(":
            pos += 1
            out = either()
            pos += 1  # ")"
            return out
        (left, lver), op = value(), re.sub(r"\s+", " ", tokens[pos])
        pos += 1
        right, rver = value()
        if op in ("in", "not in"):
            return (left in right) == (op == "in")
        if lver or rver:
            return satisfies(left, [(op, right)])
        return {"==": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
                ">": left > right, ">=": left >= right, "===": left == right}[op]

    def joined(word: str, part, join):
        """part (word part)*, left to right; every part is parsed (it moves pos)."""
        def parse():
            nonlocal pos
            out = part()
            while pos < len(tokens) and tokens[pos] == word:
                pos += 1
                out = join(part(), out)
            return out
        return parse

    either = joined("or", joined("and", compare, lambda new, out: new and out),
                    lambda new, out: new or out)  # compare() calls it for a parenthesis
    return either()


def read_pins(text: str) -> dict:
    """The lock's pins {canonical name: version}; a line that is not `name==version` (with its
    --hash options) is refused."""
    from lock_hashes import requirements  # it imports this module's version helpers
    return {canonical(r["name"]): r["version"] for r in requirements(text)}


def torchcodec_table(description: str) -> dict:
    """torchcodec's README table rows `| `0.14` | `>=2.11` | ...` -> {"0.14": [(op, v)]}."""
    table = {}
    for row in re.finditer(r"^\|\s*`(\d+\.\d+)`\s*\|\s*`([^`]+)`\s*\|", description, re.M):
        want = row.group(2).strip()
        specs = parse_requirement("torch " + want)["specs"] if want[0] in "<>=!~" else \
            [("==", want + ".*")]
        table.setdefault(row.group(1), specs)
    return table


def check(pins: dict, metadata: dict, env: dict) -> list:
    """Every conflict between the pins, as their metadata states it; [] when consistent."""
    problems = []
    for name, version in pins.items():
        meta = metadata.get(name)
        if meta is None:
            problems.append(f"{name}=={version}: no metadata from the registry")
            continue
        if canonical(meta.get("version", "")) != canonical(version) and not satisfies(
                meta.get("version", "0"), [("==", version)]):
            problems.append(f"{name}: pinned {version}, the registry gave {meta.get('version')}")
        py = meta.get("requires_python")
        if py and not satisfies(env["python_full_version"], parse_requirement("python " + py)["specs"]):
            problems.append(f"{name}=={version} requires Python {py}, "
                            f"not {env['python_full_version']}")
        for line in meta.get("requires_dist") or []:
            req = parse_requirement(line)
            if req["name"] not in pins or not marker_true(req["marker"], env):
                continue
            if not satisfies(pins[req["name"]], req["specs"]):
                problems.append(f"{name}=={version} requires {line.strip()}, "
                                f"but {req['name']} is pinned to {pins[req['name']]}")
    if "torchcodec" in pins and "torch" in pins and "torchcodec" in metadata:
        minor = ".".join(pins["torchcodec"].split(".")[:2])
        # A release's README lists the releases before it (itself as "main"): the newest
        # release's table has the pinned one's row.
        table = {}
        for key in ("torchcodec", LATEST_TORCHCODEC):
            for row, specs in torchcodec_table((metadata.get(key) or {}).get("description")
                                               or "").items():
                table.setdefault(row, specs)
        if minor not in table:
            problems.append(f"torchcodec {minor}: not in its own compatibility table")
        elif not satisfies(pins["torch"], table[minor]):
            problems.append(f"torchcodec {minor} is built for torch "
                            f"{','.join(o + v for o, v in table[minor])}, not {pins['torch']}")
    return problems


def pip_env() -> dict:
    """This machine's pip settings out: no config file, local wheel folder or constraint."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIP_") or k in ("PIP_CERT", "PIP_DEFAULT_TIMEOUT")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def dry_run(python: str, requirements: list, timeout: float) -> list:
    """The metadata of each requirement's release, from `pip install --dry-run --report`."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
               "--quiet", "--report", str(report), *requirements]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                 env=pip_env())
        except subprocess.TimeoutExpired:
            raise Unreachable(f"pip did not answer within {timeout:.0f} s") from None
        if run.returncode != 0 or not report.exists():
            tail = " ".join(run.stderr.strip().splitlines()[-2:])
            if NETWORK.search(run.stderr) or run.returncode == 0:
                raise Unreachable(f"pip could not reach the registry: {tail}")
            raise Refused(f"the registry refused the pins: {tail}")
        return [i["metadata"] for i in json.loads(report.read_text()).get("install", [])]


def fetch_metadata(pins: dict, python: str, timeout: float) -> tuple:
    """({name: metadata}, target env): the pinned releases in one pip dry run (and the newest
    torchcodec, whose README carries the compatibility row of the pinned one)."""
    if not Path(python).exists():
        raise Unreachable(f"no interpreter with pip at {python}")
    probe = "import platform, sys; print(platform.python_version()); import pip"
    try:
        full = subprocess.run([python, "-c", probe], capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        raise Unreachable(f"{python} cannot run pip: {e}") from None
    found = dry_run(python, [f"{n}=={v}" for n, v in pins.items()], timeout)
    metadata = {canonical(m["name"]): m for m in found}
    if "torchcodec" in pins:
        metadata[LATEST_TORCHCODEC] = dry_run(python, ["torchcodec"], timeout)[0]
    env = dict(TARGET, python_full_version=full, python_version=".".join(full.split(".")[:2]))
    return metadata, env


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lock", default=str(LOCK))
    parser.add_argument("--python", default=str(Path(os.environ.get("ONEPASS_VENV") or
                                                     ROOT / ".venv") / "bin" / "python"),
                        help="an interpreter with pip (the Python the GPU venv will use)")
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args(argv)
    pins = read_pins(Path(args.lock).read_text())
    try:
        metadata, env = fetch_metadata(pins, args.python, args.timeout)
    except Unreachable as e:
        print(f"check_gpu_pins: not checked: {e}", file=sys.stderr)
        return 2
    except Refused as e:
        print(f"check_gpu_pins: conflict: {e}")
        return 1
    problems = check(pins, metadata, env)
    for p in problems:
        print(f"check_gpu_pins: conflict: {p}")
    if not problems:
        print(f"check_gpu_pins: {len(pins)} pins consistent with their published metadata "
              f"(Linux x86_64, Python {env['python_full_version']})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
