"""Stdlib-only checks of onepass/'s shape (docs/architecture.md): imports point down, with no
cycle between modules or between folders; the HTTP edge and the kinds import only what lies
below them; no module runs past ~300 lines; the package lists its steps once each; and every
module has its mirrored unit test file (docs/testing.md).
Run: python3 -S -m unittest tests.unit.test_architecture
"""
import ast
import unittest
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "onepass"
UNIT = Path(__file__).resolve().parent
MAX_LINES = 300
# Modules allowed to have no tests/unit mirror, each with the reason: none. A module added to
# onepass/ comes with its test file (a package's __init__.py is tested under its folder's name,
# when at all: tests/unit/test_openapi.py, tests/unit/tryit/test_tryit.py).
UNMIRRORED: dict[str, str] = {}


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the onepass modules it imports (a `from pkg import name` of a submodule
    counts as that submodule)."""
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(max(node.level - 1, 0)):
                    base = base.rpartition(".")[0]
                module = (f"{base}.{node.module}" if node.module else base) if node.level \
                    else node.module
                for alias in node.names:
                    full = f"{module}.{alias.name}"
                    found.add(full if full in mods else module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {m for m in found if m in mods and m != name}
    return graph


def mirror(path: Path) -> Path:
    """onepass/prompt/layout.py -> tests/unit/prompt/test_layout.py."""
    rel = path.relative_to(PACKAGE)
    return UNIT / rel.parent / f"test_{rel.name}"


def folder(name: str) -> str:
    """onepass.edge.framing -> onepass.edge; onepass.pipeline stays itself."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else name


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))
    for v in list(graph):
        if v not in index:
            visit(v)
    return found


class TestShape(unittest.TestCase):
    def setUp(self):
        self.graph = imports(modules())

    def test_no_import_cycle_between_modules_or_folders(self):
        self.assertEqual(cycles(self.graph), [])
        folders = {}
        for name, deps in self.graph.items():
            if name == "onepass":  # the package's own docstring and version
                continue
            folders.setdefault(folder(name), set()).update(
                folder(d) for d in deps if folder(d) != folder(name))
        self.assertEqual(cycles(folders), [])

    def test_edge_and_kinds_import_only_what_lies_below(self):
        """edge/ is the HTTP library the service uses (never the service; inflight is the
        request's Call the edge abandons when its client leaves); kinds/ are used by every
        stage (never a stage)."""
        below = {"onepass.edge": {"onepass.errors", "onepass.telemetry", "onepass.inflight"},
                 "onepass.kinds": {"onepass.decision_model", "onepass.errors"}}
        for name, deps in self.graph.items():
            layer = folder(name)
            if layer in below:
                outside = {d for d in deps if folder(d) != layer}
                self.assertLessEqual(outside, below[layer], name)

    def test_the_package_names_the_steps_as_pipeline_runs_them(self):
        """onepass/__init__.py's docstring names the steps in pipeline.STEPS' order; no line in
        onepass/ marks a step by hand any more (STEPS is the one list)."""
        import onepass
        from onepass import pipeline
        named = onepass.__doc__.split("under steps/ (")[1].split(")")[0]
        self.assertEqual(tuple(w.strip() for w in named.split(",")), pipeline.NAMES)
        marked = [str(path) for path in sorted(PACKAGE.rglob("*.py"))
                  if "# step: " in path.read_text()]
        self.assertEqual(marked, [])

    def test_every_module_has_its_mirrored_unit_test(self):
        """Each onepass/DIR/NAME.py but __init__.py has tests/unit/DIR/test_NAME.py, in a folder
        that is a package (discovery skips one without __init__.py); the allow-list names only
        modules that exist and still have no mirror."""
        sources = {str(p.relative_to(PACKAGE)): p for p in PACKAGE.rglob("*.py")
                   if p.name != "__init__.py"}
        missing = sorted(str(mirror(p).relative_to(UNIT.parents[1])) for name, p in
                         sources.items() if name not in UNMIRRORED and not mirror(p).is_file())
        self.assertEqual(missing, [])
        unpackaged = sorted({str(mirror(p).parent.relative_to(UNIT.parents[1]))
                             for p in sources.values() if mirror(p).is_file()
                             and not (mirror(p).parent / "__init__.py").is_file()})
        self.assertEqual(unpackaged, [])
        stale = sorted(name for name in UNMIRRORED
                       if name not in sources or mirror(sources[name]).is_file())
        self.assertEqual(stale, [])

    def test_modules_stay_small(self):
        long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
                if (n := len(p.read_text().splitlines())) > MAX_LINES}
        self.assertEqual(long, {})


if __name__ == "__main__":
    unittest.main()
