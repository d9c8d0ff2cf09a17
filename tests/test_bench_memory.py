"""experiments/benchmarks/bench_memory.py at a tiny size: a row per game with the memory XLA says each program needs."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_bench_memory_reports_each_programs_memory(load_experiment, tiny_overrides, tmp_path):
    overrides = [f"{name}={value}" for name, value in tiny_overrides.items() if name != "num_iterations"]
    with load_experiment("bench_memory") as bench:
        rows = bench.main(["--games", "tic_tac_toe", "--json", str(tmp_path / "out.json"), "--set", *overrides])
    (row,) = rows
    assert row["game"] == "tic_tac_toe" and row["games"] == tiny_overrides["selfplay.num_games"]
    for field in ("iteration_needs", "evaluation_needs", "onestep_needs", "onestep_all_at_once_needs", "peak_rss"):
        assert row[field] > 0, field
    assert row["opponents"] == ["random", "onestep", "mcts:100", "perfect"]
    assert (tmp_path / "out.json").is_file()
