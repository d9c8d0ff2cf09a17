"""notebooks/execute.py without the dev extra: one line naming the install command, exit status 2, no traceback."""

from __future__ import annotations

import pathlib
import runpy
import sys

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "notebooks" / "execute.py"


@pytest.mark.parametrize("missing", ["nbformat", "nbclient"])
def test_without_the_dev_extra_it_says_how_to_install_it(missing, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, missing, None)  # `import` of it fails, as where it is not installed
    monkeypatch.setattr(sys, "argv", [str(SCRIPT)])
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"notebooks/execute.py needs the dev extra ({missing} is not installed): "
                            'pip install -e ".[dev]"\n')
