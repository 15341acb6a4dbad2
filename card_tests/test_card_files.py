"""The documentation held to the repository: every file, variable, flag, profile, script and
command it names exists and runs; every stated default equals the code's; every measured table
names the script that produced it. No server needed (test_card_live.py holds the rest).
"""
import json
import re
import subprocess
import sys

import claims
from claims import ROOT

from onepass import config

DOCS = {p.relative_to(ROOT).as_posix(): claims.text(p) for p in claims.documents()}
SETTINGS = {env: (name, kind, default) for name, (kind, default, env, _) in config.SETTINGS.items()}
# Where an ONEPASS_ variable that is not a shim setting is read: serve.sh, test.sh, the tools,
# benches and deploy scripts, the live suites' fixtures and their helpers (tests/support/).
READERS = ["serve.sh", "test.sh", "conftest.py",
           *map(str, [*ROOT.glob("tools/*/*.py"), *ROOT.glob("bench/*/*.py"),
                      *ROOT.glob("bench/*/*.sh"), *ROOT.glob("deploy/*"),
                      *ROOT.glob("tests/support/*.py"), *ROOT.glob("onepass/**/*.py")])]
SOURCES = "\n".join((ROOT / p).read_text(errors="replace") for p in READERS if (ROOT / p).is_file())
MEASURED = re.compile(r"\b(p50|p95|p99|ECE|IoU|accuracy|GFLOP/s|tok/s)\b", re.I)


def shim_help() -> str:
    return subprocess.run([sys.executable, str(ROOT / "shim.py"), "--help"], capture_output=True,
                          text=True, check=True, cwd=ROOT).stdout


def test_every_named_file_exists():
    missing = [(doc, path) for doc, body in DOCS.items() for path in claims.repo_paths(body)
               if not claims.exists(path)]
    assert not missing, missing


def test_every_environment_variable_is_read():
    """A shim setting appears in `shim.py --help`; any other ONEPASS_ variable is read by
    serve.sh, test.sh, a tool, a bench, a deploy script or the live suite's fixtures."""
    helped = shim_help()
    unread = []
    for doc, body in DOCS.items():
        for var in claims.env_vars(body):
            if var in SETTINGS:
                if var not in helped.replace("\n", " "):
                    unread.append((doc, var, "not in shim.py --help"))
            elif var not in SOURCES:
                unread.append((doc, var, "read nowhere"))
    assert not unread, unread


def test_every_named_flag_exists():
    """A backticked --flag is one of the shim's (its --help) or of a script beside it."""
    helped = shim_help()
    unknown = [(doc, flag) for doc, body in DOCS.items() if not doc.startswith("docs/runbooks/")
               for flag in claims.flags(body)
               if not re.search(re.escape(flag) + r"(?![\w-])", helped + SOURCES)]
    assert not unknown, unknown


def test_profiles_named_are_the_profiles_shipped():
    """configuration.md's table of the shipped profiles lists exactly serve_config.json's."""
    shipped = set(json.loads((ROOT / "serve_config.json").read_text())["profiles"])
    table = next(rows for _, rows in claims.tables(DOCS["docs/configuration.md"])
                 if rows and rows[0][:3] == ["profile", "model", "status"])
    named = {n for row in table[1:] for n in re.findall(r"`([\w.-]+)`", row[0])}
    assert named == shipped


def test_every_named_script_answers_help():
    """Every bench/ and tools/ Python script the docs name exists and runs `--help` (exit 0)."""
    named = sorted({s for body in DOCS.values() for s in claims.scripts(body)})
    assert named
    failed = []
    for script in named:
        if not (ROOT / script).exists():
            failed.append((script, "missing"))
            continue
        out = subprocess.run([sys.executable, str(ROOT / script), "--help"], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            failed.append((script, out.stderr[-300:]))
    assert not failed, failed


def test_shell_blocks_parse():
    """Every ```bash / ```sh block is valid bash (bash -n)."""
    bad = []
    for doc, body in DOCS.items():
        for block in claims.blocks(body, {"bash", "sh", "shell"}):
            out = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
            if out.returncode != 0:
                bad.append((doc, block[:80], out.stderr.strip()))
    assert not bad, bad


def test_stated_defaults_equal_the_code():
    """configuration.md's flag table and the README's settings table state each default as the
    code has it (numbers compared as numbers, text without its backticks)."""
    wrong = []
    for doc in ("docs/configuration.md", "README.md"):
        for _, rows in claims.tables(DOCS[doc]):
            header = [h.lower() for h in rows[0]] if rows else []
            if "default" not in header:
                continue
            col, env_col = header.index("default"), next(
                (i for i, h in enumerate(header) if h in ("environment", "variable")), None)
            for row in rows[1:]:
                var = row[env_col].strip("`") if env_col is not None else ""
                if var not in SETTINGS:
                    continue
                name, kind, default = SETTINGS[var]
                stated = row[col].strip("`")
                if name in ("profile",):  # stated as the file's default_profile, in words
                    continue
                same = (str(default) == stated or (kind in (int, float) and _number(stated) is not
                                                   None and kind(_number(stated)) == default))
                if not same:
                    wrong.append((doc, var, stated, default))
    assert not wrong, wrong


def test_limits_stated_in_prose_equal_the_code():
    """"4 per request (`--max-box-questions`)", "32 MiB (`--max-body-bytes`", "`ONEPASS_X`
    (default 16)": a number stated beside a setting's flag or variable is the code's default."""
    named = {**{env: (n, d) for env, (n, _, d) in SETTINGS.items()},
             **{"--" + n.replace("_", "-"): (n, d) for _, (n, _, d) in SETTINGS.items()}}
    before = re.compile(r"(\d[\d,]*(?:\.\d+)?)( MiB)? [^|()\n]{0,40}?\(`(ONEPASS_[A-Z0-9_]+|--[\w-]+)`")
    after = re.compile(r"`(ONEPASS_[A-Z0-9_]+|--[\w-]+)`[^|\n]{0,30}?default (\d[\d,]*(?:\.\d+)?)")
    wrong, seen = [], 0
    for doc, body in DOCS.items():
        text = claims.prose(body)
        stated = [(m.group(3), m.group(1), m.group(2)) for m in before.finditer(text)]
        stated += [(m.group(1), m.group(2), None) for m in after.finditer(text)]
        for key, number, mib in stated:
            if key not in named:
                continue
            seen += 1
            value = float(number.replace(",", "")) * (1 << 20 if mib else 1)
            if value != named[key][1]:
                wrong.append((doc, key, number + (mib or ""), named[key][1]))
    assert seen >= 10 and not wrong, (seen, wrong)


def test_measured_tables_name_their_command():
    """A table of measured figures has, within the 15 lines before it, the script that produced
    them (bench/ or tools/), and that script exists."""
    unnamed = []
    for doc, body in DOCS.items():
        lines = body.splitlines()
        for start, rows in claims.tables(body):
            header = " ".join(rows[0]) if rows else ""
            cells = " ".join(" ".join(r) for r in rows[1:])
            if not (MEASURED.search(header) and re.search(r"\d\.\d|\d{2,}", cells)):
                continue
            before = "\n".join(lines[max(0, start - 15):start])
            named = claims.scripts(before)
            if not named or not all((ROOT / s).exists() for s in named):
                unnamed.append((doc, start + 1, header[:60]))
    assert not unnamed, unnamed


def test_claims_left_unchecked_are_few_and_listed():
    """Claims no test can hold are marked "(not checked automatically)"; they stay few."""
    marked = [(doc, line.strip()[:90]) for doc, body in DOCS.items()
              for line in body.splitlines() if claims.UNCHECKED in line]
    print("\n".join(f"{d}: {t}" for d, t in marked))
    assert len(marked) <= 12, marked


def _number(text: str):
    try:
        return float(text.replace("_", ""))
    except ValueError:
        return None


def test_every_runbook_smoke_runs_in_the_suite():
    """Each `bench/measure/runbook_smoke.py NAME` a runbook names is a smoke the script knows, and
    the live suite runs it (tests/live/test_runbooks_live.py), so a runbook whose smoke fails
    fails `bash test.sh`."""
    named = {m for doc, body in DOCS.items() if doc.startswith("docs/runbooks/")
             for m in re.findall(r"bench/measure/runbook_smoke\.py ([a-z][\w-]+)", body)}
    assert named, "no runbook names its smoke"
    helped = subprocess.run([sys.executable, str(ROOT / "bench" / "measure" / "runbook_smoke.py"),
                             "--help"], capture_output=True, text=True, check=True).stdout
    suite = (ROOT / "tests" / "live" / "test_runbooks_live.py").read_text()
    for name in sorted(named):
        assert name in helped, name
        assert f'"{name}"' in suite, name


def test_architecture_lists_the_steps_in_order():
    """docs/architecture.md's numbered life of a request is pipeline.STEPS, one line a step,
    in order; every module it names exists (test_every_named_file_exists checks the paths)."""
    from onepass import pipeline
    body = DOCS["docs/architecture.md"]
    life = body[body.index("## The life of a request"):body.index("## The modules")]
    steps = re.findall(r"^(\d+)\. \*\*(\w+)\*\*", life, re.M)
    assert [int(n) for n, _ in steps] == list(range(1, len(pipeline.STEPS) + 1)), steps
    assert tuple(name for _, name in steps) == pipeline.NAMES


def test_the_readme_example_answer_is_the_shipped_defaults():
    """The answer the README shows was written by bench/measure/readme_example.py --write for
    today's default profile, its model's weights and the README's request: the fingerprint
    recorded beside it is recomputed (a refit, a new default or an edited request makes it
    stale), and the model it names is the default profile's."""
    sys.path.insert(0, str(ROOT / "bench" / "measure"))
    import readme_example
    readme = DOCS["README.md"]
    recorded = re.search(r"<!-- readme_example fingerprint ([0-9a-f]{16}) -->", readme)
    assert recorded, "the README's example has no recorded fingerprint"
    assert recorded.group(1) == readme_example.fingerprint(readme), (
        "the README's example answer is stale: run bench/measure/readme_example.py --write "
        "against serve.sh on the default profile")
    name, profile = readme_example.default_profile()
    shown = re.search(r"```json\n(.*?)\n```\n<!-- readme_example", readme, re.S).group(1)
    assert json.loads(shown)["model"] == profile["model_name"], name
