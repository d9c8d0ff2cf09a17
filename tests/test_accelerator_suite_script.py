"""experiments/benchmarks/accelerator_suite.py --quick on the CPU: throughput beside the reference with the FLOP figures
and the per-network figures, written as accelerator_suite-<device>-<date>.md and .json. Both runs of the script are
slow tests, as the other benchmarks' whole runs are: one in bfloat16 alone (the GPU presets' dtype; float32 self-play
beside the reference is test_bench_selfplay's), one with both dtypes and the training part (learns.py and the race at
the GPU preset, shrunk; each of those scripts has a smoke test of its own). The default suite checks the configs they
use."""

from __future__ import annotations

import argparse
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
    written = list(tmp_path.glob("accelerator_suite-cpu-*.md"))
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
    assert "## Training" in next(tmp_path.glob("accelerator_suite-cpu-*.md")).read_text()


def test_on_a_cpu_the_suite_says_what_its_sizes_cost(load_experiment):
    """Before it starts: which sizes are an accelerator's (with --quick, part 3's time alone; nothing with --quick
    --no-training); after the first setting: the rest's cost scaled from that setting's measured seconds."""
    with load_experiment("accelerator_suite") as suite:
        def settings(plan):
            return [("connect_four", b, c, d, n, s) for (b, c) in plan["networks"] for d in plan["dtypes"]
                    for s in plan["simulations"] for n in plan["batch_sizes"]]

        part3 = suite.training_part(argparse.Namespace(train_seconds=900.0, no_race=False, quick=False))
        full = suite.cpu_notice(suite.FULL, settings(suite.FULL), False, part3)
        assert full.startswith("On a CPU: these sizes are an accelerator's: part 1 times 32 self-play settings")
        assert "up to 8192 games x 128 simulations" in full and "part 3 trains 2 x 900 s" in full
        quick_part3 = suite.training_part(argparse.Namespace(train_seconds=900.0, no_race=False, quick=True))
        quick = suite.cpu_notice(suite.QUICK, settings(suite.QUICK), True, quick_part3)
        assert "not part 3's time" in quick and "30 min of training" in quick
        assert suite.cpu_notice(suite.QUICK, settings(suite.QUICK), True, None) is None

        # Two settings, 8 and 16 games: the first's 10 s are 2 timed calls of 1 s and 8 s of set-up; the second costs
        # the set-up and twice the calls. Part 2 (--quick's SGD: 8 games x 16 moves x 3 evaluations to fill, 2 x 2
        # steps of 16 samples x 3): 576 evaluations at 1/48 s, and 2 set-ups.
        plan = dict(networks=[(1, 8)], batch_sizes=[8, 16], simulations=[2], dtypes=["float32"], steps=2, repeats=1,
                    max_batch=0)
        line = suite.cpu_estimate(plan, settings(plan), 10.0, 1.0, 2, None, True)
        assert line == ("This CPU timed the first setting in 10 s: by the others' games x simulations x network, "
                        "part 1's other 1 settings take about 12 s and part 2 about 28 s.")
        slower = suite.cpu_estimate(plan, settings(plan), 20.0, 2.0, 2, quick_part3, True)
        assert "about 24 s and part 2 about 56 s; part 3 trains 30 min" in slower
