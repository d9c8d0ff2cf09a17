"""The inside-the-search notebook runs from top to bottom (with AZJAX_QUICK=1: a tiny Connect Four network trained
for 2 iterations, searches of 16 and 2 simulations), so it cannot rot; and what it prints about the search holds:
mctx's root decisions replay, the rounds of sequential halving halve, the policy target is a distribution."""

from __future__ import annotations

import itertools
import re

import execute
import nbformat
import pytest

from azjax import checkpointing

# The notebook's quick settings.
SIMS = 16  # simulations of the search shown
NUM_SEARCHES = 4  # copies of the position searched at once, each with its own noise
ROUND = re.compile(
    r"^round (\d+): (\d+) actions considered, (\d+) more visit\(s\) each "
    r"\(simulations (\d+)-(\d+)(, cut short by the budget)?\): ([a-g ]+)$",
    re.MULTILINE,
)


@pytest.mark.slow  # see tests/test_notebook_quickstart.py
def test_inside_the_search_notebook_runs(tmp_path):
    # Raises CellExecutionError, with the cell and its traceback, if any cell fails.
    notebook = execute.execute("inside_the_search", quick=True, run_dir=tmp_path / "run", cwd=tmp_path)

    text = execute.printed(notebook)
    assert "quick mode: True" in text
    assert "trained 2 iterations" in text and checkpointing.latest_iteration(tmp_path / "run") == 2
    assert "solved positions" in text  # the network's optimal-move rate
    assert "the perfect player plays g" in text  # the forced block, from the solver

    # The tree's history replays every root decision with mctx's own selection, on mctx's schedule.
    assert f"the same move at {SIMS} of {SIMS} simulations" in text
    assert "explored a move with the scheduled visit count: True" in text

    # Sequential halving: all 7 moves, then half of those still in the running (at least 2) per round; each round's
    # moves are survivors of the round before, and its simulations follow on.
    rounds = ROUND.findall(text)
    assert [int(r[0]) for r in rounds] == list(range(1, len(rounds) + 1)) and len(rounds) >= 3
    considered = [int(r[1]) for r in rounds]
    assert considered[0] == 7
    assert all(after == max(2, before // 2) for before, after in itertools.pairwise(considered))
    assert int(rounds[0][3]) == 1 and int(rounds[-1][4]) == SIMS
    assert all(int(later[3]) == int(earlier[4]) + 1 for earlier, later in itertools.pairwise(rounds))
    explored = [set(r[6].split()) for r in rounds]
    assert all(later <= earlier for earlier, later in itertools.pairwise(explored))
    for (_, k, _, _, _, cut, _), moves in zip(rounds, explored, strict=True):
        assert len(moves) == int(k) or (cut and len(moves) < int(k))
    final = re.search(r"the most visited, by final score: .* -> ([a-g]) \(the search played ([a-g])\)", text)
    assert final and final[1] == final[2] and final[1] in explored[-1]

    # The improved policy, recomputed from the tree, is the search's policy target, a distribution.
    assert "equals the search's policy target: True; it sums to 1.000000" in text
    assert f"PUCT, {SIMS} simulations: plays" in text

    # The sweep: a header and one row per number of simulations, with the moves of every search.
    assert re.search(r"sims\s+Gumbel MuZero: moves played\s+target g\s+PUCT: moves played\s+target g", text)
    rows = {int(line.split()[0]): line.split() for line in text.splitlines() if re.match(r"\s*\d+\s+[a-g]:\d", line)}
    assert sorted(rows) == [2, SIMS]
    for tokens in rows.values():  # sims, the moves of the Gumbel searches, their target, the same for PUCT
        targets = [i for i, token in enumerate(tokens) if re.fullmatch(r"\d\.\d\d", token)]
        assert len(targets) == 2 and targets[1] == len(tokens) - 1
        for moves in (tokens[1:targets[0]], tokens[targets[0] + 1:targets[1]]):
            assert sum(int(move.split(":")[1]) for move in moves) == NUM_SEARCHES

    # The prior, the tree, the halving, the improved policy, PUCT's policies, PUCT's tree, the sweep.
    assert execute.num_images(notebook) == 7
    # The position drawn by azjax (SVG, no longer a printed board): with the prior, then with the visit shares and Q
    # of each search; and so in the stored outputs.
    assert "X to move" not in text
    assert execute.num_boards(notebook) == 3
    assert execute.num_boards(nbformat.read(execute.NOTEBOOKS_DIR / "inside_the_search.ipynb", as_version=4)) == 3
