"""Smoke test of experiments/learns.py on a TINY tic-tac-toe config: it trains, keeps the first checkpoint aside,
evaluates from random openings and writes learns.json; `--seconds 0` evaluates again without training."""

from __future__ import annotations

import json


def test_trains_keeps_the_first_checkpoint_and_reports(load_experiment, tiny_overrides, tmp_path):
    out = tmp_path / "run"
    overrides = [f"{name}={value}" for name, value in tiny_overrides.items() if name != "num_iterations"]
    argv = ["--game", "tic_tac_toe", "--out", str(out), "--games", "4", "--opening-moves", "2", "--mcts", "2",
            "--set", *overrides]
    with load_experiment("learns") as learns:
        report = learns.main([*argv, "--seconds", "0.01"])
        assert (tmp_path / "run-first").is_dir()  # the run after its first iteration, copied aside
        assert report["iterations"] == 2  # the first iteration, then at least one more
        for match in ("vs_random", "vs_first_checkpoint", "vs_mcts2"):
            result = report[match]
            assert result["games"] == 8 and result["wins"] + result["draws"] + result["losses"] == 8
            assert result["as_first"]["wins"] + result["as_second"]["wins"] == result["wins"]
            assert result["win_rate"] == result["wins"] / 8
        assert json.loads((out / "learns.json").read_text()) == report
        judged = report["positions"]  # tic-tac-toe's 4520 solved positions
        for agent in ("network", "search"):
            assert 0.0 <= judged[agent]["optimal_move_rate"] <= 1.0
            assert 0.0 <= judged[agent]["optimal_move_rate_can_err"] <= judged[agent]["optimal_move_rate"]

        again = learns.main([*argv, "--seconds", "0"])  # evaluation only: no iteration added
        assert again["iterations"] == 2 and again["training_seconds"] < 60
