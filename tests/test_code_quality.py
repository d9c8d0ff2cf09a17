"""The project's lint and type settings (pyproject.toml: [tool.ruff], [tool.mypy]) hold: the default test command is
the project's CI, so the check runs here."""

from __future__ import annotations

import shutil
import subprocess
import sys
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
