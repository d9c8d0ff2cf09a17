"""The your-own-game notebook runs from top to bottom (with AZJAX_QUICK=1: Breakthrough written in the notebook,
checked, registered and trained for 3 tiny iterations), so it cannot rot."""

from __future__ import annotations

import execute
import nbformat
import pytest

from azjax import rundir


@pytest.mark.slow  # 78 s on 2 cores; the same flow runs in the default suite through the CLI (test_your_own_game.py)
def test_your_own_game_notebook_runs(tmp_path):
    # Raises CellExecutionError, with the cell and its traceback, if any cell fails.
    notebook = execute.execute("your_own_game", quick=True, run_dir=tmp_path / "run", cwd=tmp_path)

    text = execute.printed(notebook)
    assert "quick mode: True" in text
    assert "legal moves: a2-a3 a2-b3 b2-a3" in text  # the rules, written in the notebook, at the start
    # The planted mistake: the checker names the check and the problem, and the replay shows a finished game.
    assert "GameCheckError, check [legal_mask]" in text
    assert "failed check [legal_mask]: the game is over, but legal_action_mask still allows" in text
    assert "X wins\nmoves from the start:" in text or "O wins\nmoves from the start:" in text
    # The fixed game passes every check, the test positions included.
    assert "breakthrough5: 64 random games" in text and "4 test positions; all checks passed" in text
    assert "config: the cpu preset registered with breakthrough5" in text  # games.register with presets
    assert "untrained network with its search: random" in text
    assert "stopped (iterations) after iteration 3" in text
    records = rundir.read_metrics(tmp_path / "run")
    assert [r["iteration"] for r in records] == [1, 2, 3]
    assert "eval/mcts8" in records[1]  # evaluated during training, every 2 iterations
    assert "agent A        agent B" in text  # the table against the baselines
    assert "trained        mcts:8" in text and "network alone  random" in text
    assert "X wins at once: network's value" in text and "the search plays" in text
    assert "Your move: c2-c3" in text and "trained plays" in text and "moves: c2-c3" in text
    assert "the legal moves and the ends agree with the plain-Python rules" in text
    assert execute.num_images(notebook) == 2  # the learning curve and the network's view of four positions
    # A position shown by `drawing.show`: the game has no `draw`, so an SVG of its text render; and so in the stored
    # outputs.
    assert execute.num_boards(notebook) == 1
    assert execute.num_boards(nbformat.read(execute.NOTEBOOKS_DIR / "your_own_game.ipynb", as_version=4)) == 1
