"""The README's and the docs' shell blocks run as written: every --flag a command passes to
serve.sh, shim.py or a bench/tools script is one that program takes (serve.sh's argument list,
a script's own --help), every ONEPASS_* variable a command sets is one the code reads, and the
ports a document's commands call are the ports its commands
start things on (a document that moves the shim off 8741 calls 8741 nowhere). No server: the
programs' own usage is the reference. (A runbook's third-party harness flags are held by the
runbook smokes, tests/live/test_runbooks_live.py.)"""
import functools
import re
import shlex
import subprocess
import sys

import claims
from claims import ROOT

SHELL = ("bash", "sh", "shell")
SERVE_ARGS = re.search(r'^ARGS="(.*?)"', (ROOT / "serve.sh").read_text(), re.M).group(1)
URL_PORT = re.compile(r"(?:127\.0\.0\.1|localhost|0\.0\.0\.0|\[::1\]):(\d{2,5})\b")
SET_PORT = re.compile(r"\b(ONEPASS_(?:PORT|VLLM_PORT)|ONEPASS_LB_BIND|--port)[= ](?:[\w.]+:)?(\d{2,5})\b")
DEFAULT_PORTS = {"8741", "8742"}  # serve.sh's shim and vLLM when nothing moves them
# the balancer's and its servers' ports as deploy/haproxy.cfg and deploy/scale.py start them
DEPLOY_PORTS = set(re.findall(r"127\.0\.0\.1:(\d+)", (ROOT / "deploy" / "haproxy.cfg").read_text()))
RUN_RECORDS = ("docs/measured.md", "docs/measured-archive.md")  # runs on whatever ports they had
SET_ENV = re.compile(r"(?:^|[\s'\"])(ONEPASS_[A-Z0-9_]+)=")  # VAR=value, -e VAR=value, env VAR=
# what reads the environment: serve.sh, test.sh, the shim, its tools, benches and deploy files
READERS = [ROOT / "serve.sh", ROOT / "test.sh", ROOT / "shim.py"] + [
    p for folder in ("onepass", "tools", "bench", "deploy", "engine")
    for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".sh", ".yaml", ".cfg", ".json")]
READ = set(re.findall(r"ONEPASS_[A-Z0-9_]+", "\n".join(
    p.read_text(errors="replace") for p in READERS if p.is_file())))


def commands(block: str) -> list[list[str]]:
    """Each simple command of a shell block, as words (continued lines joined, comments and
    prompts dropped; a line shlex cannot split is skipped)."""
    text = re.sub(r"\\\n", " ", block)
    out = []
    for line in text.splitlines():
        line = re.sub(r"^\s*\$\s+", "", line.split(" #")[0]).strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", line):
            try:
                words = shlex.split(part)
            except ValueError:
                continue
            if words:
                out.append(words)
    return out


def program(words: list[str]) -> tuple[str, list[str]]:
    """(the repository program a command runs, its arguments), or ("", []) when it runs none
    of ours (a third-party tool, podman, curl)."""
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # VAR=value prefixes
        words = words[1:]
    for i, w in enumerate(words[:3]):
        path = w.removeprefix("./")
        if path in ("serve.sh", "test.sh") or re.match(r"^(?:bench|tools)/[\w/.-]+\.py$", path) \
                or path == "shim.py":
            return path, words[i + 1:]
    return "", []


@functools.lru_cache(maxsize=None)
def usage(path: str, sub: str = "") -> str:
    """A program's usage text; with `sub`, its subcommand's (corpus.py record --help)."""
    if path == "serve.sh":
        return SERVE_ARGS
    out = subprocess.run([sys.executable, str(ROOT / path), *([sub] if sub else []), "--help"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    return out.stdout + out.stderr


def unknown_flags(doc: str) -> list[tuple[str, str]]:
    found = []
    for block in claims.blocks(doc, SHELL):
        for words in commands(block):
            path, args = program(words)
            if not path or path == "test.sh":  # test.sh's arguments go to pytest
                continue
            sub = args[0] if args and re.match(r"^[a-z][a-z-]*$", args[0]) and \
                re.search(rf"\b{args[0]}\b", usage(path).split("\n\n")[0]) else ""
            for flag in {a.split("=")[0] for a in args if re.match(r"^--[a-z][\w-]*", a)}:
                if not re.search(re.escape(flag) + r"(?![\w-])", usage(path, sub)):
                    found.append((path, flag))
    return found


def unread_variables(doc: str) -> list[str]:
    """ONEPASS_* variables a document's commands set that no program of ours reads, or use
    ($NAME) that neither its commands set nor ours read (another machine's settings)."""
    text = "\n".join(claims.blocks(doc, SHELL))
    set_here = set(SET_ENV.findall(text))
    used = set(re.findall(r"\$\{?(ONEPASS_[A-Z0-9_]+)", text))
    return sorted({n for n in set_here if n not in READ} | (used - set_here - READ))


def stray_ports(doc: str) -> list[str]:
    """URL ports of a document's commands that none of its commands start anything on. A
    document that moves the shim (ONEPASS_PORT) may not call serve.sh's default port."""
    text = "\n".join(claims.blocks(doc, SHELL))
    set_ports = {port for _, port in SET_PORT.findall(text)}
    moved = any(name == "ONEPASS_PORT" and port != "8741" for name, port in SET_PORT.findall(text))
    allowed = set_ports | DEPLOY_PORTS | (DEFAULT_PORTS - ({"8741"} if moved else set()))
    allowed |= {p for pair in re.findall(r"-p\s+(\d+):(\d+)", text) for p in pair}
    return sorted({port for port in URL_PORT.findall(text) if port not in allowed})


DOCS = {p.relative_to(ROOT).as_posix(): claims.text(p) for p in claims.documents()}


def test_every_flag_a_command_passes_is_taken():
    wrong = [(doc, *hit) for doc, body in DOCS.items() for hit in unknown_flags(body)]
    assert not wrong, wrong


def test_a_documents_commands_call_the_ports_they_start_on():
    wrong = [(doc, stray_ports(body)) for doc, body in DOCS.items()
             if doc not in RUN_RECORDS and stray_ports(body)]
    assert not wrong, wrong


def test_every_variable_a_command_sets_is_read():
    wrong = [(doc, unread_variables(body)) for doc, body in DOCS.items()
             if unread_variables(body)]
    assert not wrong, wrong


def test_the_checks_catch_what_they_are_for():
    """Planted: a flag serve.sh does not take, a script flag its --help lacks, and a runbook
    that starts the shim on 8861 and then calls 8741."""
    planted = ("```bash\nbash serve.sh --port 9000\n"
               "python3 bench/measure/readme_example.py --url http://127.0.0.1:8741 --bogus\n"
               "podman run -e ONEPASS_PORT=8861 onepass\n"
               "curl http://127.0.0.1:8741/health\n```\n")
    assert set(unknown_flags(planted)) == {("serve.sh", "--port"),
                                           ("bench/measure/readme_example.py", "--bogus")}
    assert stray_ports(planted) == ["8741"]
    assert unread_variables("```bash\nONEPASS_PODMAN_STORE=/x ONEPASS_PORT=1 bash serve.sh\n"
                            "podman run -e ONEPASS_HOSTT=0.0.0.0 onepass\n```\n") == [
        "ONEPASS_HOSTT", "ONEPASS_PODMAN_STORE"]
    assert unread_variables("```bash\npodman $ONEPASS_PODMAN_STORE run onepass\n```\n") == [
        "ONEPASS_PODMAN_STORE"]
