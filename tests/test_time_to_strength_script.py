"""experiments/studies/time_to_strength/time_to_strength.py: the reference's value targets against a hand-worked window,
and the whole race on a TINY tic-tac-toe config."""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest


def test_reference_value_targets_follow_pgx(load_experiment):
    with load_experiment("time_to_strength") as race:
        # One column per game; moves 0-3. Game a: X wins on move 2, a new game starts at move 3 and does not end.
        # Game b: drawn on move 3. Game c: never ends in the window.
        reward = jnp.asarray([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
        ended = jnp.asarray([[False, False, False], [False, False, False], [True, False, False],
                             [False, True, False]])
        target, mask = race.reference_value_targets(reward, ended)
    # Each value is for the player to move: the winner moved at 2, the loser at 1, the winner at 0.
    np.testing.assert_allclose(target[:, 0], [1.0, -1.0, 1.0, 0.0])
    np.testing.assert_allclose(mask, [[1, 1, 0], [1, 1, 0], [1, 1, 0], [0, 1, 0]])
    np.testing.assert_allclose(target[:, 1], 0.0)  # a draw is worth 0 to both


def test_only_the_marks_the_budget_reached_get_rows_then_the_end(load_experiment):
    """`--seconds 30` with the default marks (60 ... 600): no row for a mark past the runs' time, whose figures would
    be the 30 s ones again; one row at the end, with both runs' last points."""
    with load_experiment("time_to_strength") as race:
        rows = race.pick_rows([60, 90, 150, 300, 600], 30.0, [12.0, 31.5], [8.0, 20.0, 33.2])
        assert rows == [{"seconds": 33.2, "final": True, "azjax": 1, "reference": 2}]
        rows = race.pick_rows([10, 25, 30, 60], 30.0, [12.0, 31.5], [8.0, 20.0, 33.2])
    assert [row["seconds"] for row in rows] == [10, 25, 30, 33.2]
    assert [(row["azjax"], row["reference"]) for row in rows] == [(None, 0), (0, 1), (0, 1), (1, 2)]
    assert [row.get("final", False) for row in rows] == [False, False, False, True]


@pytest.mark.slow  # 45 s on 2 cores: an experiment script's whole run, as the other benchmarks' are
def test_the_race_runs_and_reports(load_experiment, tiny_overrides, tmp_path):
    overrides = [f"{name}={value}" for name, value in tiny_overrides.items() if name != "num_iterations"]
    argv = ["--game", "tic_tac_toe", "--seconds", "0.01", "--out", str(tmp_path), "--marks", "0.001", "1000",
            "--reference-steps", "12", "--checkpoint-every", "1", "--games-per-seat", "2", "--set", *overrides]
    with load_experiment("time_to_strength") as race:
        result = race.main(argv)
    assert result["reference_iterations"] >= 1 and len(result["azjax_curve"]) >= 1
    assert result["marks"][0] == {"seconds": 0.001, "azjax": None, "reference": None}  # nothing trained yet
    assert len(result["marks"]) == 2 and result["marks"][1]["final"]  # 1000 s is past the run: the end instead
    late = result["marks"][1]
    assert 0.0 <= late["azjax"] <= 1.0 and 0.0 <= late["reference"] <= 1.0
    assert late["reference"] == result["reference_final"]
    match = result["final_match"]
    assert match["games"] == 4 and match["wins"] + match["draws"] + match["losses"] == 4
    assert json.loads((tmp_path / "time_to_strength.json").read_text())["marks"] == result["marks"]
