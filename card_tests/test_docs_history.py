"""Docs describe today's code for its users; history lives in the research notes and the git log.

The box page stays a page a user reads (at most 200 lines: what box questions do, modes,
conventions, profiles, limits, today's figures); the grounding model's training runs are in
tools/models/research-log.md. The user documents (README.md, docs/, docs/runbooks/, the
figures of today's code in docs/measured.md among them) name no issue and no training run; only
docs/measured-archive.md, the older figures kept as history, may. Comments and docstrings in onepass/ say why the code
is as it is, not which issue or run led there. Links into the box page and the research log
resolve to a file and, where they name one, a heading. No server needed.
"""
import ast
import io
import re
import tokenize

import claims
from claims import ROOT

BOX_PAGE = ROOT / "docs" / "box.md"
RESEARCH_LOG = ROOT / "tools" / "models" / "research-log.md"
MAX_BOX_LINES = 200
# The older figures, kept with the runs that made them (history).
ARCHIVE = "docs/measured-archive.md"
ISSUE = re.compile(r"\bissues? #?\d+", re.I)
RUN = re.compile(r"\bruns? \d+\b|\bruns?-\d+", re.I)  # "run 36", "runs 28-31", "#run-36-..."
LINK = re.compile(r"\]\(([^)\s]+)\)")


def user_docs() -> dict[str, str]:
    docs = {p.relative_to(ROOT).as_posix(): claims.text(p) for p in claims.documents()}
    return {name: body for name, body in docs.items() if name != ARCHIVE}


def history_named(text: str) -> list[str]:
    return [m.group(0) for pattern in (ISSUE, RUN) for m in pattern.finditer(text)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(body: str) -> set[str]:
    found, seen = set(), {}
    for heading in re.findall(r"^#{1,6} (.+?)\s*#*$", claims.prose(body), re.M):
        base = slug(heading)
        found.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return found


def comments_and_docstrings(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and every module, class and function docstring."""
    out = [(tok.start[0], tok.string) for tok in
           tokenize.generate_tokens(io.StringIO(source).readline) if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                out.append((node.body[0].lineno, doc))
    return out


def test_the_box_page_is_short():
    lines = len(claims.text(BOX_PAGE).splitlines())
    assert lines <= MAX_BOX_LINES, f"docs/box.md has {lines} lines; history goes to {RESEARCH_LOG}"


def test_user_docs_name_no_issue_or_run():
    docs = user_docs()
    assert {"README.md", "docs/box.md", "docs/measured.md"} <= set(docs)
    named = [(name, n + 1, hit) for name, body in docs.items()
             for n, line in enumerate(body.splitlines()) for hit in history_named(line)]
    assert not named, named


def test_code_comments_name_no_issue_or_run():
    sources = sorted((ROOT / "onepass").rglob("*.py"))
    assert sources
    named = [(path.relative_to(ROOT).as_posix(), line, hit) for path in sources
             for line, text in comments_and_docstrings(path.read_text(encoding="utf-8"))
             for hit in history_named(text)]
    assert not named, named


def test_links_into_the_box_page_and_the_research_log_resolve():
    """Every link from a document (or the research log) to docs/box.md or the research log
    reaches the file and, when it names an anchor, a heading there."""
    targets = {BOX_PAGE.resolve(), RESEARCH_LOG.resolve()}
    sources = [*claims.documents(), RESEARCH_LOG]
    checked, broken = 0, []
    for source in sources:
        for link in LINK.findall(claims.prose(claims.text(source))):
            path, _, anchor = link.partition("#")
            target = (source.parent / path).resolve() if path else source.resolve()
            if link.startswith(("http:", "https:", "mailto:")) or target not in targets:
                continue
            checked += 1
            if not target.exists():
                broken.append((source.name, link, "no such file"))
            elif anchor and anchor not in anchors(claims.text(target)):
                broken.append((source.name, link, "no such heading"))
    assert checked >= 5 and not broken, (checked, broken)


def test_the_research_log_says_it_is_history():
    head = claims.text(RESEARCH_LOG)[:600]
    assert "History, not user documentation" in head
    assert "docs/box.md" in head
