"""The quickstart notebook runs from top to bottom (with AZJAX_QUICK=1: tiny settings), so it cannot rot."""

from __future__ import annotations

import execute


def test_quickstart_notebook_runs(tmp_path):
    # Raises CellExecutionError, with the cell and its traceback, if any cell fails.
    notebook = execute.execute("quickstart", quick=True, run_dir=tmp_path / "run", cwd=tmp_path)

    text = execute.printed(notebook)
    assert "quick mode: True" in text
    assert "stopped (iterations) after iteration 2" in text
    assert "trained      perfect" in text  # the table against the baselines
    assert "trained plays" in text and "Your move: b2" in text
    assert execute.num_images(notebook) == 2  # the learning curve and the heat maps
    assert (tmp_path / "run" / "learning_curves.png").is_file()
