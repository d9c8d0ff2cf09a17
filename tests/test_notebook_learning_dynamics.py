"""The learning-dynamics notebook runs from top to bottom (with AZJAX_QUICK=1: two tiny Connect Four runs of 3
iterations), so it cannot rot."""

from __future__ import annotations

import execute
import pytest

from azjax import rundir


@pytest.mark.slow  # 49 s on 2 cores; the quickstart, inside-the-search and boards notebooks run in the default suite
def test_learning_dynamics_notebook_runs(tmp_path):
    # Raises CellExecutionError, with the cell and its traceback, if any cell fails.
    notebook = execute.execute("learning_dynamics", quick=True, run_dir=tmp_path / "runs", cwd=tmp_path)

    text = execute.printed(notebook)
    assert "quick mode: True" in text
    assert "untrained network: optimal-move rate" in text  # the evaluator, compiled before the runs
    for label in ("drop", "keep"):
        assert f"{label}: stopped (iterations) after iteration 3" in text
        records = rundir.read_metrics(tmp_path / "runs" / label)
        assert [r["iteration"] for r in records] == [1, 2, 3]
        assert "eval/optimal_move_rate" in records[-1]  # evaluated during training
    assert "the runs differ in: selfplay.keep_unfinished: False -> True" in text
    assert "of 6000; best" in text  # the optimal-move rate on the solved positions, with its interval
    assert "evaluations both made" in text  # the runs compared evaluation by evaluation
    assert "of the played positions reached replay" in text
    assert "each trained on" in text  # the replay's age and samples per position
    assert "Resignation was off in every run" in text
    assert "run        iters s/iter optimal moves" in text  # the summary table
    # Strength, losses, self-play games, positions, replay and learning rate (no resignation plot: it was off).
    assert execute.num_images(notebook) == 5
