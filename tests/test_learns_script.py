"""experiments/studies/strength/learns.py's refusals (its whole run is smoke-tested in test_train_recipe_script.py)."""

from __future__ import annotations

import pytest


def test_seconds_zero_without_a_first_checkpoint_refuses(load_experiment, tmp_path, capsys):
    """`--seconds 0` evaluates a finished run again; without OUT-first it would train an iteration and play the
    agent against itself, so it says what is missing instead."""
    with load_experiment("learns") as learns, pytest.raises(SystemExit) as stop:
        learns.main(["--game", "tic_tac_toe", "--out", str(tmp_path / "run"), "--seconds", "0"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "run-first is missing" in err and "--seconds > 0" in err
    assert not (tmp_path / "run").exists()
