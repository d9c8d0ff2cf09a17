"""experiments/studies/search_curve/search_curve.py: the network alone and each search judged on the same labelled
positions, one row each, written as markdown and JSON (the shipped tic-tac-toe agent at 1 and 2 simulations; marked
slow)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow  # three judging programs compiled: ~15 s
def test_a_curve_has_the_network_then_each_search(load_experiment, tmp_path):
    out = tmp_path / "curve.md"
    with load_experiment("search_curve") as script:
        results = script.main(["pretrained:tic_tac_toe", "--simulations", "1", "2", "--out", str(out)])
    rows = results["rows"]
    assert [row["simulations"] for row in rows] == [0, 1, 2]
    assert results["game"] == "tic_tac_toe" and results["strata"] == ["all"]
    assert rows[0]["optimal_move_rate"] == pytest.approx(1.0)  # the shipped network is perfect (its card)
    assert all(0.0 <= row["all"] <= 1.0 for row in rows)
    assert json.loads(out.with_suffix(".json").read_text())["rows"] == rows
    table = out.read_text()
    assert "| pretrained:tic_tac_toe | network alone | 100.0% |" in table and "| 2 simulations |" in table


def test_bad_simulations_or_an_unknown_set_are_refused(load_experiment, capsys):
    with load_experiment("search_curve") as script:
        with pytest.raises(SystemExit):
            script.main(["pretrained:tic_tac_toe", "--simulations", "0"])
        assert "--simulations must be >= 1" in capsys.readouterr().err
        with pytest.raises(SystemExit):
            script.main(["pretrained:tic_tac_toe", "--position-set", "pons"])
        assert "no set of labelled positions named 'pons'" in capsys.readouterr().err
        with pytest.raises(SystemExit):
            script.main(["pretrained:connect_four", "--strata", "begin-hardest"])
        assert "--strata: no stratum named 'begin-hardest'; the strata are begin-easy" in capsys.readouterr().err
