"""The quickstart notebook runs from top to bottom (with AZJAX_QUICK=1: tiny settings), so it cannot rot."""

from __future__ import annotations

import re

import execute
import nbformat
import pytest


@pytest.mark.slow  # a notebook that trains; the default suite runs the boards notebook (tests/test_notebook_boards.py)
def test_quickstart_notebook_runs(tmp_path):
    # Raises CellExecutionError, with the cell and its traceback, if any cell fails.
    notebook = execute.execute("quickstart", quick=True, run_dir=tmp_path / "run", cwd=tmp_path)

    text = execute.printed(notebook)
    assert "quick mode: True" in text
    assert "stopped (iterations) after iteration 2" in text
    assert "trained      perfect" in text  # the table against the baselines
    assert "trained plays" in text and "Your move: b2" in text
    assert execute.num_images(notebook) == 1  # the learning curve
    assert (tmp_path / "run" / "learning_curves.png").is_file()
    # The shipped agent, before any training: its card, and a game against UCT.
    assert re.search(r"^pretrained:connect_four.* parameters", text, re.MULTILINE)
    assert re.search(r"^pretrained +mcts:8 ", text, re.MULTILINE)
    # Boards are pictures drawn by azjax (SVG), not printed: the empty Connect Four board with the network's policy,
    # its game, a game against the perfect player, the network's policy and values (two rows) and the game played;
    # and so in the stored outputs.
    assert "  a b c" not in text
    assert execute.num_boards(notebook) == 6
    assert execute.num_boards(nbformat.read(execute.NOTEBOOKS_DIR / "quickstart.ipynb", as_version=4)) == 6
