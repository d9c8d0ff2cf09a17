"""experiments/accelerator_suite.py --quick on the CPU: throughput beside the reference with the FLOP figures and
the per-network figures, written as <device>-<date>.md and .json. Both runs of the script are slow tests, as the
other benchmarks' whole runs are: one in bfloat16 alone (the GPU presets' dtype; float32 self-play beside the
reference is test_bench_selfplay's), one with both dtypes and the training part (learns.py and the race at the GPU
preset, shrunk; each of those scripts has a smoke test of its own). The default suite checks the configs they use."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow  # 54 s on 2 cores: an experiment script's whole run, as the other benchmarks' are
def test_quick_suite(load_experiment, tmp_path):
    with load_experiment("accelerator_suite") as suite:
        results = suite.main(["--quick", "--no-training", "--dtypes", "bfloat16", "--networks", "1x4",
                              "--simulations", "3", "--out-dir", str(tmp_path)])
    rows = results["throughput"]  # --networks and --simulations replace --quick's 1x8 and 2
    assert [(r["network"], r["dtype"], r["batch_size"], r["simulations"]) for r in rows] == [("1x4", "bfloat16", 8, 3)]
    assert [entry["dtype"] for entry in results["per_network"]] == ["bfloat16"]
    for row in rows:
        assert row["azjax_positions_per_s"] > 0 and row["reference_positions_per_s"] > 0 and row["ratio"] > 0
        assert row["flops_per_evaluation"] > 0 and row["network_tflops"] > 0
        assert row["share_of_peak"] is None  # a CPU has no peak in the table
    for entry in results["per_network"]:
        assert entry["sgd_steps_per_s"] > 0 and entry["largest_batch"] == 16  # --quick stops doubling at 16
    assert results["training"] == {}
    written = list(tmp_path.glob("cpu-*.md"))
    assert len(written) == 1 and "Self-play throughput" in written[0].read_text()
    assert json.loads(written[0].with_suffix(".json").read_text())["quick"] is True


def test_a_network_given_badly_is_named(load_experiment):
    with pytest.raises(SystemExit, match="BLOCKSxCHANNELS"), load_experiment("accelerator_suite") as suite:
        suite.main(["--quick", "--networks", "6by128"])


def test_selfplay_configs_hold_thousands_of_games(load_experiment):
    """The full grid's 4096 and 8192 games: an iteration's positions exceed the default replay (an H200 run stopped on
    it), so the suite's configs hold them (self-play alone, no compilation here)."""
    with load_experiment("accelerator_suite") as suite:
        config = suite.selfplay_config("connect_four", 6, 128, "bfloat16", 8192, 32, 16)
    assert config.train.replay_capacity >= 8192 * 16


def test_a_throughput_rows_network_reads_what_the_pgx_reference_observes(load_experiment):
    """One network plays azjax's self-play and the pgx reference beside it: Connect Four's azjax config observes
    pgx's planes (its observation version 2 added threat planes, which broke every row of the suite until the rows
    pinned version 1); the breakdown's config, with no reference, keeps the game's current version."""
    import pgx

    from azjax.training import make_components

    with load_experiment("accelerator_suite") as suite:
        row = suite.throughput_config("connect_four", 1, 4, "float32", 8, 2, 2)
        breakdown = suite.selfplay_config("connect_four", 1, 4, "float32", 8, 2, 2)
    assert make_components(row).game.observation_shape == tuple(pgx.make("connect_four").observation_shape)
    assert make_components(breakdown).game.observation_shape != make_components(row).game.observation_shape


@pytest.mark.slow
def test_quick_suite_trains(load_experiment, tmp_path):
    with load_experiment("accelerator_suite") as suite:
        results = suite.main(["--quick", "--train-seconds", "3", "--out-dir", str(tmp_path)])
    assert {(r["dtype"], r["batch_size"]) for r in results["throughput"]} == {("float32", 8), ("bfloat16", 8)}
    assert results["training"]["learns"]["iterations"] >= 1 and results["training"]["race"]["azjax_curve"]
    assert "## Training" in next(tmp_path.glob("cpu-*.md")).read_text()
