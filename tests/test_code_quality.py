"""The project's lint and type settings (pyproject.toml: [tool.ruff], [tool.mypy]) hold: the default test command is
the project's CI, so the check runs here."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    done = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise", str(ROOT)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"ruff check found problems (fix them, or `ruff check --fix`):\n{done.stdout}"


def test_mypy_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"mypy (settings in pyproject.toml) found problems:\n{done.stdout}{done.stderr}"


MAX_FUNCTION_LINES = 80  # lines of code of a function, its docstring apart
LONGER = {  # a function over MAX_FUNCTION_LINES, and why it stays whole
}


def _functions(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            lines = node.end_lineno - node.lineno + 1 - (len(docstring.splitlines()) if docstring else 0)
            yield f"{path.relative_to(ROOT).as_posix()}:{node.name}", lines


def test_no_function_in_the_package_is_longer_than_a_screen():
    """STYLE.md: a function fits on a screen. The docstring does not count: a long one documents, it does not hide."""
    long = {name: lines for path in sorted((ROOT / "azjax").rglob("*.py")) for name, lines in _functions(path)
            if lines > MAX_FUNCTION_LINES and name not in LONGER}
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines of code (split them, or say in LONGER why not): {long}"


DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def test_no_comment_in_the_package_carries_a_date():
    """STYLE.md: measurements, dates and the history of a choice live in experiments/ records; a comment with a date
    in it is stale the day it lands."""
    dated = []
    for path in sorted((ROOT / "azjax").rglob("*.py")):
        with tokenize.open(path) as source:
            for token in tokenize.generate_tokens(source.readline):
                if token.type == tokenize.COMMENT and DATE.search(token.string):
                    dated.append(f"{path.relative_to(ROOT).as_posix()}:{token.start[0]}: {token.string.strip()}")
    assert not dated, ("comments with dates (move the record to a results/ folder under experiments/ and cite it):\n"
                       + "\n".join(dated))


# Tests that cannot fail: an assert whose expression is true whatever the code does, and a test whose every assert
# sits in a loop that may run zero times (it passes, checking nothing, when the loop's collection comes out empty).

TESTS = ROOT / "tests"


def _cannot_fail(test: ast.expr) -> bool:
    """Whether an assert's expression is true whatever the names in it hold."""
    match test:
        case ast.Constant(value=value):
            return bool(value)
        case ast.Tuple(elts=items) | ast.List(elts=items) | ast.Set(elts=items):  # `assert (x, "message")`
            return bool(items)
        case ast.Dict(keys=items) | ast.JoinedStr(values=items):
            return bool(items)
        case ast.UnaryOp(op=ast.Not(), operand=ast.Constant(value=value)):
            return not value
        case ast.BoolOp(op=ast.Or(), values=values):  # `x or True`, `x or not x`
            negated = {ast.dump(v.operand) for v in values if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not)}
            return any(_cannot_fail(v) or ast.dump(v) in negated for v in values)
        case ast.BoolOp(op=ast.And(), values=values):
            return all(_cannot_fail(v) for v in values)
        case ast.Compare(left=ast.Call(func=ast.Name(id="len")), ops=[ast.GtE()], comparators=[ast.Constant(value=0)]):
            return True  # `len(x) >= 0`
    return False


def always_true_asserts(source: str) -> list[int]:
    """The lines of `source`'s asserts that cannot fail."""
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Assert)
            and _cannot_fail(node.test)]


def _module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """The module's names bound once, at its top level, to their expressions."""
    bound: dict[str, list[ast.expr]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
    return {name: values[0] for name, values in bound.items() if len(values) == 1}


def _never_empty(iterable: ast.expr, constants: dict[str, ast.expr]) -> bool:
    """Whether a `for` loop over `iterable` surely runs at least once: a non-empty literal, a `range` of literal
    (or module-constant) bounds, such a module constant, or enumerate/sorted/zip/.items() of those."""
    match iterable:
        case ast.Name(id=name) if name in constants:
            return _never_empty(constants[name], constants)
        case ast.Tuple(elts=items) | ast.List(elts=items) | ast.Set(elts=items):
            return bool(items)
        case ast.Dict(keys=items):
            return bool(items)
        case ast.Constant(value=str() as text):
            return bool(text)
        case ast.Call(func=ast.Name(id="range"), args=args) if args:
            bounds = [constants.get(a.id, a) if isinstance(a, ast.Name) else a for a in args]
            if all(isinstance(b, ast.Constant) and type(b.value) is int for b in bounds):
                return len(range(*(b.value for b in bounds))) > 0
        case ast.Call(func=ast.Name(id="enumerate" | "sorted" | "reversed" | "list" | "tuple"), args=[first, *_]):
            return _never_empty(first, constants)
        case ast.Call(func=ast.Name(id="zip"), args=args) if args:
            return all(_never_empty(a, constants) for a in args)
        case ast.Call(func=ast.Attribute(value=mapping, attr="items" | "keys" | "values"), args=[]):
            return _never_empty(mapping, constants)
    return False


def _asserts_in_loops(node: ast.AST, in_loop: bool, constants: dict[str, ast.expr]):
    """For each assert in `node` (nested functions and classes apart), whether it sits in the body of a loop that
    may run zero times."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
        return
    if isinstance(node, ast.Assert):
        yield in_loop
    elif isinstance(node, ast.For | ast.AsyncFor):
        may_skip = in_loop or not _never_empty(node.iter, constants)
        for statement in node.body:
            yield from _asserts_in_loops(statement, may_skip, constants)
        for statement in node.orelse:  # `else:` runs either way
            yield from _asserts_in_loops(statement, in_loop, constants)
    else:
        for child in ast.iter_child_nodes(node):
            yield from _asserts_in_loops(child, in_loop, constants)


def loop_only_checks(source: str) -> list[str]:
    """The test functions of `source` whose every assert is in a loop over something that may be empty."""
    tree = ast.parse(source)
    constants = _module_constants(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            in_loops = [flag for statement in node.body for flag in _asserts_in_loops(statement, False, constants)]
            if in_loops and all(in_loops):
                found.append(f"{node.lineno}:{node.name}")
    return found


def test_no_assert_in_the_tests_is_always_true():
    """`assert x == y or True` passes whatever x is: a check switched off that still reads as one."""
    found = [f"{path.relative_to(ROOT).as_posix()}:{line}" for path in sorted(TESTS.rglob("*.py"))
             for line in always_true_asserts(path.read_text())]
    assert not found, f"asserts that cannot fail (assert what the test means to check): {found}"
    bad = ("def test_it(x):\n    assert x == 1 or True\n    assert (x, 'message')\n    assert x or not x\n"
           "    assert True\n    assert x == 1 or x == 2\n    assert x and 1\n")
    assert always_true_asserts(bad) == [2, 3, 4, 5]


def test_no_test_asserts_only_in_a_loop_that_may_run_zero_times():
    """A test whose asserts all sit in `for item in items:` passes, checking nothing, when `items` comes out empty:
    assert that it is not (its length, say) outside the loop, or loop over a literal or a literal range."""
    found = [f"{path.relative_to(ROOT).as_posix()}:{name}" for path in sorted(TESTS.rglob("*.py"))
             for name in loop_only_checks(path.read_text())]
    assert not found, f"tests whose asserts may all be skipped (assert the loop's collection is not empty): {found}"
    bad = ("N = 3\ndef test_found(xs):\n    for x in xs:\n        assert x\n"
           "def test_nested(xs):\n    for x in range(N):\n        for y in xs:\n            assert y\n"
           "def test_fine(xs):\n    assert xs\n    for x in xs:\n        assert x\n"
           "def test_literal():\n    for x in (1, 2):\n        for y in range(N):\n            assert x\n"
           "def test_else(xs):\n    for x in xs:\n        pass\n    else:\n        assert xs\n")
    assert loop_only_checks(bad) == ["2:test_found", "5:test_nested"]
