"""Smoke test of experiments/benchmarks/bench_train.py: both convolution gradients run and report positive figures
(timings never asserted). Slow-marked (47 s on the 2 cores): the gradient it times is tested against XLA's in
test_networks, and the suite had grown to 17.5 minutes."""

from __future__ import annotations

import pytest

_TINY = [
    "--games", "tic_tac_toe", "--repeats", "1", "--set", "network.num_blocks=1", "network.num_channels=4",
    "network.value_hidden=4", "search.num_simulations=2", "selfplay.num_games=4", "selfplay.num_steps=2",
    "train.batch_size=8", "train.num_sgd_steps=2", "train.replay_capacity=64",
]


@pytest.mark.slow
def test_reports_both_convolution_gradients(load_experiment, capsys):
    with load_experiment("bench_train") as module:
        results = module.main(_TINY)
    rows = results["rows"]
    assert [row["conv_gradient"] for row in rows] == ["azjax", "xla-grad"]
    for row in rows:
        assert row["game"] == "tic_tac_toe"
        assert row["sgd_ms_per_step"] > 0 and row["iteration_s"] > 0 and len(row["iteration_times_s"]) == 1
    assert "faster with azjax's gradient" in capsys.readouterr().out
