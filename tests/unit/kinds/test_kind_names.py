"""Stdlib-only test that a question kind is named only in onepass/kinds/: no other module of
onepass holds a string literal equal to a registered kind's name or to its type on either API
("noul", "predicate", ...), an attribute so named (`labels.choice`: one kind's labels, by name)
or a constant-style identifier naming one (NOUL, MAX_BOX_QUESTIONS).
Everything else asks the registry, by name it was given or by capability (kinds.shaped, ...).
A JSON Schema's {"type": "number"} is spelt as the number kind is named: outside kinds/ it is
kinds.schema_parts.REAL, so the rule needs no exception.
Run: python3 -S -m unittest tests.unit.kinds.test_kind_names
"""
import ast
import unittest

from onepass import kinds
from tests.support.paths import ROOT

PACKAGE = ROOT / "onepass"
KINDS_DIR = PACKAGE / "kinds"


def spoken_names() -> set[str]:
    """Every registered kind's name and its type on either API."""
    return set(kinds.names()) | set(kinds.types())


def identifiers(node) -> list[str]:
    """The identifiers a node binds or uses: names, attributes, imports, definitions, args."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.alias):
        return [node.name.rsplit(".", 1)[-1], *([node.asname] if node.asname else [])]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.arg, ast.keyword)):
        return [node.arg] if node.arg else []
    return []


def naming(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, what) for each string literal or attribute equal to one of `names` and each
    constant-style identifier (all capitals) with one of them, in capitals, among its words."""
    upper = {n.upper() for n in names}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value in names:
            found.append((node.lineno, repr(node.value)))
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.append((node.lineno, f".{node.attr}"))
        for name in identifiers(node):
            if name.isupper() and upper & set(name.split("_")):
                found.append((getattr(node, "lineno", 0), name))
    return found


class TestScanner(unittest.TestCase):
    def test_it_finds_each_form(self):
        """naming: a literal, an attribute, a constant and a constant's word are found; a
        longer string, a variable and REAL are not."""
        source = ('from x import NOUL\nMAX_BOX_QUESTIONS = 4\nq = {"type": "noul"}\n'
                  'schema = {"type": "number"}\nnote = "a noul question"\nnoul = 1\n'
                  'k = {"type": REAL}\nn = len(facts.labels.box)\n')
        self.assertEqual(sorted(naming(source, {"noul", "box", "number"})),
                         [(1, "NOUL"), (2, "MAX_BOX_QUESTIONS"), (3, "'noul'"), (4, "'number'"),
                          (8, ".box")])


class TestOnepass(unittest.TestCase):
    def test_no_module_outside_kinds_names_a_kind(self):
        """Every module of onepass/ outside onepass/kinds/ is free of the kinds' names."""
        names = spoken_names()
        self.assertLessEqual({"noul", "choice", "score", "box", "number", "predicate"}, names)
        modules = [p for p in sorted(PACKAGE.rglob("*.py")) if KINDS_DIR not in p.parents]
        self.assertGreater(len(modules), 40)
        offending = {str(p.relative_to(ROOT)): hits for p in modules
                     if (hits := naming(p.read_text(encoding="utf-8"), names))}
        self.assertEqual(offending, {})


if __name__ == "__main__":
    unittest.main()
