"""What the documentation claims, read out of it: the card_tests' parser.

Owns: the documents that make claims (README.md, docs/*.md, docs/runbooks/*.md), and pulling
out of them what can be held to the code: backticked names (files, environment variables,
flags, routes, profiles), fenced code blocks by language, markdown tables, and the
"(not checked automatically)" markers.
Never: checks anything itself (the test_card_* modules do), or reads code.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNCHECKED = "(not checked automatically)"  # how a doc marks a claim no test can hold


def documents() -> list[Path]:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return docs + sorted((ROOT / "docs" / "runbooks").glob("*.md"))


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def prose(doc: str) -> str:
    """The document without its fenced code blocks (commands and JSON are checked apart)."""
    return re.sub(r"^```.*?^```", "", doc, flags=re.S | re.M)


def spans(doc: str) -> list[str]:
    """Every `backticked` span outside code blocks."""
    return re.findall(r"`([^`\n]+)`", prose(doc))


def blocks(doc: str, languages) -> list[str]:
    """The bodies of fenced code blocks whose language is one of `languages`."""
    out = []
    for lang, body in re.findall(r"^```([\w-]*)\n(.*?)^```", doc, flags=re.S | re.M):
        if lang in languages:
            out.append(body)
    return out


def tables(doc: str) -> list[tuple[int, list[list[str]]]]:
    """(line index of the header, rows of cells) for every markdown table."""
    lines, out, i = doc.splitlines(), [], 0
    while i < len(lines):
        if (lines[i].startswith("|") and i + 1 < len(lines)
                and re.match(r"^\|[\s:|-]+\|$", lines[i + 1].strip())):
            start, rows = i, []
            while i < len(lines) and lines[i].startswith("|"):
                if i != start + 1:
                    rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            out.append((start, rows))
        else:
            i += 1
    return out


FILE = re.compile(r"^(?:\.\./shared/|[\w.-]+/)*[\w.-]+\.(?:py|sh|json|md|txt|yaml|yml|png|cfg|toml)$")
DIR = re.compile(r"^(?:[\w.-]+/)+$")


def repo_paths(doc: str) -> set[str]:
    """Backticked spans that name a file or folder of the repository (or ../shared): a path
    whose first folder is one of the repository's, or a bare file name. A path under a folder
    the repository does not have names another package's file (vLLM's, a harness's)."""
    found = set()
    for span in spans(doc):
        name = span.split()[0] if span.split() else ""
        if name.startswith(("/", "http", "$", "~", "<", ".venv")) or "*" in name:
            continue  # routes, links, variables
        if not (FILE.match(name) or (DIR.match(name) and not name.startswith("v1/"))):
            continue
        first = name.split("/")[0]
        if ("/" in name) and first != ".." and not (ROOT / first).exists():
            continue  # another package's source, named by its own folder
        found.add(name)
    return found


def exists(name: str) -> bool:
    """A path from the repository's root (or docs/), or a bare file name found in it."""
    if (ROOT / name).exists() or (ROOT / "docs" / name).exists():
        return True
    if "/" in name.rstrip("/"):
        return False
    return any(p for p in ROOT.rglob(name.rstrip("/"))
               if ".venv" not in p.parts and "__pycache__" not in p.parts)


def env_vars(doc: str) -> set[str]:
    return set(re.findall(r"\bONEPASS_[A-Z0-9_]+\b", doc))


def flags(doc: str) -> set[str]:
    """--flags named alone in backticks: the shim's, serve.sh's, vLLM's as serve.sh passes them,
    or a bench's (runbooks name their harness's own flags: the runbook smokes check those)."""
    return {m for span in spans(doc) for m in re.findall(r"^(--[a-z][a-z0-9-]+)$", span)
            if m != "--flag"}


def routes(doc: str) -> set[tuple[str, str]]:
    """(method, path) pairs named as `GET /x` or `POST /x`."""
    return set(re.findall(r"`(GET|POST) (/[\w/.-]*)", doc))


def scripts(doc: str) -> set[str]:
    """bench/ and tools/ Python scripts named anywhere (prose or commands), in their subfolders
    (bench/measure/latency.py, tools/serve/cpu_dtype.py)."""
    return set(re.findall(r"(?<![\w/.])((?:bench|tools)/(?:[\w-]+/)*[\w-]+\.py)\b", doc))
