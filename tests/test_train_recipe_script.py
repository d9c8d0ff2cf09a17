"""Smoke test of experiments/studies/strength/train.py (the per-game training recipes) and of
experiments/studies/strength/learns.py beneath it, on a TINY tic-tac-toe config, in one run: it trains with evaluations
against the recipe's baselines, keeps the first checkpoint aside, plays the final matches from random openings, writes
learns.json and the results file; then learns.py with `--seconds 0` evaluates again without training."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow  # 67 s on 2 cores: an experiment script's whole run, as the other benchmarks' are
def test_a_recipe_trains_evaluates_and_writes_its_results(load_experiment, tiny_overrides, tmp_path):
    overrides = [f"{name}={value}" for name, value in tiny_overrides.items() if name != "num_iterations"]
    out = tmp_path / "run"
    argv = ["--game", "tic_tac_toe", "--preset", "cpu", "--seconds", "0.01", "--out", str(out),
            "--results-dir", str(tmp_path / "results"), "--games", "2", "--eval-every", "1", "--eval-games", "4",
            "--mcts", "2", "--set", *overrides]
    with load_experiment("train") as recipes:
        results = recipes.main(argv)
        assert recipes.RECIPES["tic_tac_toe"].baselines == ("random", "onestep", "perfect")
    written = list((tmp_path / "results").glob("tic_tac_toe-cpu-*-cpu.json"))
    assert len(written) == 1 and json.loads(written[0].read_text())["final"] == results["final"]
    curve = results["during_training"]  # the first iteration runs alone (learns.py keeps it aside), then one more
    assert [record["iteration"] for record in curve] == [2]
    assert {"eval/random", "eval/onestep", "eval/perfect", "eval/score"} <= set(curve[-1])
    text = written[0].with_suffix(".md").read_text()
    assert "| 2 |" in text and "vs_mcts2:" in text and "perfect play, network" in text

    # learns.py's report, as the recipe got it.
    report = results["final"]
    assert (tmp_path / "run-first").is_dir()  # the run after its first iteration, copied aside
    assert report["iterations"] == 2  # the first iteration, then at least one more
    for match in ("vs_random", "vs_first_checkpoint", "vs_mcts2"):
        result = report[match]
        assert result["games"] == 4 and result["wins"] + result["draws"] + result["losses"] == 4
        assert result["as_first"]["wins"] + result["as_second"]["wins"] == result["wins"]
        assert result["win_rate"] == result["wins"] / 4
    assert json.loads((out / "learns.json").read_text()) == report
    judged = report["positions"]  # tic-tac-toe's 4520 solved positions
    for agent in ("network", "search"):
        assert 0.0 <= judged[agent]["optimal_move_rate"] <= 1.0
        assert 0.0 <= judged[agent]["optimal_move_rate_can_err"] <= judged[agent]["optimal_move_rate"]

    with load_experiment("learns") as learns:  # evaluation only: no iteration added
        again = learns.main(["--game", "tic_tac_toe", "--out", str(out), "--games", "2", "--opening-moves", "2",
                             "--mcts", "2", "--seconds", "0", "--set", *overrides])
    assert again["iterations"] == 2 and again["training_seconds"] < 60
    assert again["vs_mcts2"]["games"] == 4
