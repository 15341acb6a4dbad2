"""Assertions that hold a wall-clock duration to a constant, found in test sources by their AST
(docs/testing.md, "No clocks in assertions"). A duration is a difference of clock readings
(time.monotonic, perf_counter, time, process_time and their _ns forms, timeit), whatever it is
then named, scaled, summed or returned as; an assertion (assert, self.assert*, an `if` whose
body fails the test, or a comprehension's filter) that compares one with an expression holding
no clock reading of the same run, or with seconds written in the test added as slack, is
reported. A ratio (a duration over a duration, or anything per second) is no duration. A
comparison of instants (`now < deadline`) is not judged. Standard library only.
"""
import ast
from pathlib import Path

CLOCKS = {"monotonic", "perf_counter", "time", "process_time", "thread_time", "monotonic_ns",
          "perf_counter_ns", "time_ns", "process_time_ns"}
TIMERS = {"timeit", "repeat"}  # timeit's functions return durations
ORDERED = {"assertLess", "assertLessEqual", "assertGreater", "assertGreaterEqual",
           "assertAlmostEqual", "assertNotAlmostEqual", "assertEqual"}
FAILS = {"fail", "skipTest"}
INSTANT, DURATION, SLACK = "instant", "duration", "duration plus a constant"
SCALES = "scales"  # a function returning a duration when given one (stop_bound(step_s))
PASSED = {"max", "min", "sum", "abs", "round", "float", "int", "sorted", "list", "tuple",
          "statistics.median", "median", "mean", "fsum"}


def _literal(node) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, (int, float))
               and n.value != 0 for n in ast.walk(node))


def _called(node) -> str:
    f = node.func
    if isinstance(f, ast.Attribute):
        base = f.value.id if isinstance(f.value, ast.Name) else ""
        return f"{base}.{f.attr}" if base else f.attr
    return f.id if isinstance(f, ast.Name) else ""


class _Kinds:
    """The kind (instant, duration, slack or None) of expressions in one scope: names take the
    kinds of what was assigned to them; `returns` maps a function name to its return's kind."""

    def __init__(self, names: dict, returns: dict):
        self.names, self.returns = names, returns

    def of(self, node):  # noqa: C901 (one case per expression form)
        if isinstance(node, ast.Call):
            name = _called(node)
            short = name.rsplit(".", 1)[-1]
            if name in {f"time.{c}" for c in CLOCKS} or (name in CLOCKS and name != "time"):
                return INSTANT
            if name in {f"timeit.{t}" for t in TIMERS}:
                return DURATION
            if name in PASSED or short in PASSED:
                kinds = [self.of(a) for a in node.args]
                return DURATION if DURATION in kinds or SLACK in kinds else None
            kind = self.returns.get(short)
            if kind == SCALES:  # a helper of this module that scales what it is given
                return DURATION if DURATION in [self.of(a) for a in node.args] else None
            return kind if not isinstance(kind, tuple) else None
        if isinstance(node, ast.Name):
            kind = self.names.get(node.id)
            return kind if not isinstance(kind, tuple) else None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in ("self", "cls"):
            return self.names.get(f"self.{node.attr}")
        if isinstance(node, (ast.Subscript, ast.Starred)):
            kind = self.names.get(node.value.id) if isinstance(node.value, ast.Name) else None
            if isinstance(kind, tuple) and isinstance(node, ast.Subscript) \
                    and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
                return kind[node.slice.value] if node.slice.value < len(kind) else None
            return kind if not isinstance(kind, tuple) else self.of(node.value)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return self.of(node.elt)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            kinds = {self.of(e) for e in node.elts}
            return DURATION if DURATION in kinds else None
        if isinstance(node, ast.UnaryOp):
            return self.of(node.operand)
        if isinstance(node, ast.IfExp):
            return self.of(node.body) or self.of(node.orelse)
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        return None

    def _binop(self, node):
        a, b = self.of(node.left), self.of(node.right)
        if isinstance(node.op, ast.Sub) and a == INSTANT:
            return DURATION if b == INSTANT else INSTANT
        if isinstance(node.op, (ast.Add, ast.Sub)):
            if INSTANT in (a, b):
                return INSTANT
            timed = {a, b} & {DURATION, SLACK}
            if timed and None in (a, b):  # seconds written in the test: slack; a name: a value
                other = node.right if a else node.left  # the system was given (a deadline)
                return SLACK if _literal(other) else DURATION
            return SLACK if SLACK in timed else (DURATION if timed else None)
        if isinstance(node.op, (ast.Div, ast.FloorDiv)) and b:
            return None  # a ratio (or a rate: per second) is no duration
        if isinstance(node.op, (ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)):
            return a or b
        return None


def _targets(target, value, kinds: _Kinds, into: dict):
    if isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts):
                _targets(t, v, kinds, into)
            return
        shape = None
        if isinstance(value, ast.Call):
            shape = kinds.returns.get(_called(value).rsplit(".", 1)[-1])
        for i, t in enumerate(target.elts):
            kind = shape[i] if isinstance(shape, tuple) and i < len(shape) else None
            if _name(t) and kind:
                into[_name(t)] = kind
        return
    kind = kinds.of(value)
    if isinstance(value, ast.Call) and isinstance(
            kinds.returns.get(_called(value).rsplit(".", 1)[-1]), tuple):
        kind = kinds.returns[_called(value).rsplit(".", 1)[-1]]
    if _name(target) and kind:
        into[_name(target)] = kind


def _name(target) -> str | None:
    """A local's name, or self.NAME for an attribute of self or cls (one for every method)."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
            and target.value.id in ("self", "cls"):
        return f"self.{target.attr}"
    return None


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _own(body):
    """The nodes of a scope's statements, not those of functions defined in it."""
    todo = [n for n in body if not isinstance(n, FUNCTIONS)]
    while todo:
        node = todo.pop(0)
        yield node
        todo += [c for c in ast.iter_child_nodes(node) if not isinstance(c, FUNCTIONS)]


def _functions(body):
    """The functions defined in a scope's statements (methods of its classes included)."""
    todo = list(body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        else:
            todo += list(ast.iter_child_nodes(node))


def _scope_names(body, outer: dict, returns: dict) -> dict:
    names = dict(outer)
    for _ in range(3):  # a name's kind may come from one assigned later in the text
        kinds = _Kinds(names, returns)
        for node in _own(body):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    _targets(t, node.value, kinds, names)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                _targets(node.target, node.value if isinstance(node, ast.AnnAssign)
                         else ast.BinOp(node.target, node.op, node.value), kinds, names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "append" and isinstance(node.func.value, ast.Name) \
                    and node.args and kinds.of(node.args[0]) == DURATION:
                names[node.func.value.id] = DURATION  # a list of durations
            elif isinstance(node, (ast.For, ast.comprehension)):
                kind = kinds.of(node.iter)
                if kind and isinstance(node.target, ast.Name):
                    names[node.target.id] = kind
    return names


def _return_kind(fn, names: dict, returns: dict):
    kinds = _Kinds(names, returns)
    for node in _own(fn.body):
        if isinstance(node, ast.Return) and node.value is not None:
            if isinstance(node.value, ast.Tuple):
                shape = tuple(kinds.of(e) for e in node.value.elts)
                if any(shape):
                    return shape
            elif kinds.of(node.value):
                return kinds.of(node.value)
    return None


def returns_of(trees) -> dict:
    """{function name: the kind it returns} for the functions of `trees` returning a duration
    or a tuple holding one (a helper that times a request and returns the seconds)."""
    returns: dict = {}
    for _ in range(2):
        for tree in trees:
            for fn in ast.walk(tree):
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    kind = _return_kind(fn, _scope_names(fn.body, {}, returns), returns)
                    if kind in (DURATION, SLACK) or isinstance(kind, tuple):
                        returns[fn.name] = kind
                        continue
                    given = {a.arg: DURATION for a in fn.args.args}
                    if given and _return_kind(fn, _scope_names(fn.body, given, returns),
                                              returns) == DURATION:
                        returns.setdefault(fn.name, SCALES)
    return returns


def _compared(node) -> list:
    """(left, right) pairs an assertion node compares."""
    pairs = []
    if isinstance(node, ast.Assert):
        tests = [node.test]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in ORDERED and len(node.args) >= 2:
            pairs.append((node.args[0], node.args[1]))
        tests = node.args[:1] if node.func.attr in {"assertTrue", "assertFalse"} else []
    elif isinstance(node, ast.comprehension):
        tests = node.ifs  # a filter picking the slow ones for an assertion
    elif isinstance(node, ast.If) and any(
            isinstance(n, ast.Raise) or (isinstance(n, ast.Call) and isinstance(
                n.func, ast.Attribute) and n.func.attr in FAILS) for n in _own(node.body)):
        tests = [node.test]
    else:
        return pairs
    for test in tests:
        for cmp in ast.walk(test):
            if isinstance(cmp, ast.Compare):
                sides = [cmp.left, *cmp.comparators]
                pairs += list(zip(sides, sides[1:]))
    return pairs


def _bad(a, b) -> bool:
    """A duration against no clock reading at all, or any side with a slack in seconds."""
    clocked = {DURATION, INSTANT, SLACK}
    return SLACK in (a, b) or (a == DURATION and b not in clocked) or (
        b == DURATION and a not in clocked)


def offenders(source: str, name: str = "<source>", returns: dict | None = None) -> list:
    """`name:line: text` for each assertion in `source` comparing a duration with a constant."""
    tree = ast.parse(source)
    returns = {**returns_of([tree]), **(returns or {})}
    selfs: dict = {}  # self.NAME's kinds, assigned in one method, read in another
    found = set()

    def visit(body, outer, report):
        names = _scope_names(body, {**outer, **selfs}, returns)
        selfs.update((k, v) for k, v in names.items() if k.startswith("self."))
        kinds = _Kinds(names, returns)
        for node in _own(body) if report else ():
            if any(_bad(kinds.of(a), kinds.of(b)) for a, b in _compared(node)):
                at = node.ifs[0] if isinstance(node, ast.comprehension) else node
                found.add((at.lineno, ast.get_source_segment(source, at)))
        for fn in _functions(body):
            visit(fn.body, names, report)

    visit(tree.body, {}, False)
    visit(tree.body, {}, True)
    return [f"{name}:{line}: {text}" for line, text in sorted(found)]


def sources(root: Path) -> list:
    """The test sources the rule covers: tests/ (helpers included), test_shim.py,
    test_security.py and card_tests/."""
    return sorted([*root.glob("tests/**/*.py"), root / "test_shim.py", root / "test_security.py",
                   *root.glob("card_tests/*.py")])
