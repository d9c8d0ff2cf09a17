"""Smoke test of experiments/train.py (the per-game training recipes) on a TINY tic-tac-toe config: it trains with
evaluations against the recipe's baselines, plays the final matches and writes its results file."""

from __future__ import annotations

import json


def test_a_recipe_trains_evaluates_and_writes_its_results(load_experiment, tiny_overrides, tmp_path):
    overrides = [f"{name}={value}" for name, value in tiny_overrides.items() if name != "num_iterations"]
    argv = ["--game", "tic_tac_toe", "--preset", "cpu", "--seconds", "0.01", "--out", str(tmp_path / "run"),
            "--results-dir", str(tmp_path / "results"), "--games", "2", "--eval-every", "1", "--eval-games", "4",
            "--mcts", "2", "--set", *overrides]
    with load_experiment("train") as recipes:
        results = recipes.main(argv)
        assert recipes.RECIPES["tic_tac_toe"].baselines == ("random", "onestep", "perfect")
    written = list((tmp_path / "results").glob("tic_tac_toe-cpu-cpu-*.json"))
    assert len(written) == 1 and json.loads(written[0].read_text())["final"] == results["final"]
    curve = results["during_training"]  # the first iteration runs alone (learns.py keeps it aside), then one more
    assert [record["iteration"] for record in curve] == [2]
    assert {"eval/random", "eval/onestep", "eval/perfect", "eval/score"} <= set(curve[-1])
    final = results["final"]
    assert final["vs_mcts2"]["games"] == 4 and final["vs_random"]["games"] == 4
    text = written[0].with_suffix(".md").read_text()
    assert "| 2 |" in text and "vs_mcts2:" in text and "perfect play, network" in text
