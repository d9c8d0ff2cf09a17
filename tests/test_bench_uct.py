"""Smoke test of experiments/benchmarks/bench_uct.py: its quick mode times both UCT searches on tic-tac-toe and writes
what it prints (timings never asserted)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow  # the default suite keeps a benchmark script's quick mode in tests/test_bench_games.py
def test_quick_mode_times_both_searches(load_experiment, tmp_path, capsys):
    out = tmp_path / "bench.json"
    with load_experiment("bench_uct") as bench_uct:
        results = bench_uct.main(["--quick", "--rollouts", "--match", "8", "--json", str(out)])
    printed = capsys.readouterr().out

    assert json.loads(out.read_text()) == json.loads(json.dumps(results))
    assert [(row["game"], row["simulations"]) for row in results["rows"]] == [("tic_tac_toe", 16), ("tic_tac_toe", 64)]
    for row in results["rows"]:
        for search in ("azjax", "mctx"):
            assert row[search]["ms"] > 0 and row[search]["us_per_simulation"] > 0
        assert row["speed_up"] == row["mctx"]["ms"] / row["azjax"]["ms"]
    match = results["matches"]["tic_tac_toe"]
    assert match["name_a"] == "mcts:16" and match["name_b"] == "mctx-mcts:16" and match["games"] == 8
    assert set(results["rollouts_ms"]["tic_tac_toe"]) == {"by_rank", "categorical"}
    assert all(ms > 0 for ms in results["rollouts_ms"]["tic_tac_toe"].values())
    assert "speed-up" in printed and "tic_tac_toe: one rollout of the 8 positions" in printed
