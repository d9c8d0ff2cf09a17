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
