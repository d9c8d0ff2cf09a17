"""experiments/studies/gpu_sweep/gpu_sweep.py: its variants are valid configs (the "old" one the GPU preset measured on
an H200), its default minutes fit its budget, its report has a row per variant; and, marked slow, the whole sweep on the
CPU at a tiny size: two variants trained a few seconds each in their own processes, judged on the labelled positions and
in a round robin, written as <game>-<device>-<date>.md and .json."""

from __future__ import annotations

import dataclasses
import json

import pytest

from azjax import presets
from azjax.config import Config, NetworkConfig, SearchConfig, SelfPlayConfig, TrainConfig

# 1 x 8 network, 2 simulations, 16 games, SGD batches of 32: every variant shrunk alike (--set wins over them).
TINY_SET = ["network.num_blocks=1", "network.num_channels=8", "network.value_hidden=8", "search.num_simulations=2",
            "search.max_num_considered_actions=2", "selfplay.num_games=16", "train.batch_size=32",
            "train.num_sgd_steps=2", "train.replay_capacity=1024"]


def test_every_variant_is_a_valid_config_that_trains_the_presets_samples(load_experiment):
    with load_experiment("gpu_sweep") as sweep:
        assert sweep.VARIANTS
        for game, variants in sweep.VARIANTS.items():
            assert "preset" in variants and variants["preset"] == {}
            for name in variants:
                config = sweep.variant_config(game, "gpu", name, {})
                samples = config.train.num_sgd_steps * config.train.batch_size
                played = config.selfplay.num_games * config.selfplay.num_steps
                assert samples == presets.samples_per_played_position(config.selfplay) * played, (game, name)


def test_the_old_connect_four_variant_is_the_preset_measured_on_an_h200(load_experiment):
    """The Connect Four GPU preset of experiments/benchmarks/results/accelerator_suite-gpu-nvidia-h200-2026-11-26.md,
    field for field."""
    measured = Config(
        game="connect_four",
        num_iterations=400,
        network=NetworkConfig(num_blocks=6, num_channels=128, compute_dtype="bfloat16"),
        search=SearchConfig(num_simulations=128),
        selfplay=SelfPlayConfig(num_games=4096, num_steps=64),
        train=TrainConfig(batch_size=2048, num_sgd_steps=256, learning_rate=2e-3, replay_capacity=1_048_576),
    )
    with load_experiment("gpu_sweep") as sweep:
        assert sweep.variant_config("connect_four", "gpu", "old", {}) == measured
        for game in sweep.VARIANTS:  # every game's GPU preset before it took the CPU's lessons
            old = sweep.variant_config(game, "gpu", "old", {})
            assert not old.selfplay.keep_unfinished and old.train.lr_schedule == "constant"
            assert old.train.value_target_mix == 0.0 and old.train.policy_surprise_weight == 0.0


def test_the_default_minutes_fit_the_budget(load_experiment):
    with load_experiment("gpu_sweep") as sweep:
        for num_variants in range(1, 6):
            for with_positions in (True, False):
                minutes = sweep.default_minutes(num_variants, with_positions)
                total = (num_variants * (minutes + sweep.RUN_OVERHEAD_MINUTES)
                         + sweep.eval_minutes(num_variants, with_positions))
                assert minutes >= sweep.MIN_MINUTES
                assert total <= sweep.BUDGET_MINUTES or minutes == sweep.MIN_MINUTES


def test_set_overrides_win_and_reach_the_command_line(load_experiment):
    with load_experiment("gpu_sweep") as sweep:
        extra = sweep.parse_sets(["selfplay.num_steps=4", "selfplay.keep_unfinished=false"])
        overrides = sweep.variant_overrides("connect_four", "short", extra)
        assert sweep.variant_config("connect_four", "gpu", "short", extra).selfplay.num_steps == 4
        arguments = sweep.override_arguments(overrides)
        assert arguments[arguments.index("--selfplay.num_steps") + 1] == "4"
        assert sweep.override_arguments({"selfplay.keep_unfinished": False}) == ["--selfplay.keep_unfinished", "false"]
        with pytest.raises(SystemExit, match=r"SECTION\.FIELD=VALUE"):
            sweep.parse_sets(["selfplay.num_steps"])


def test_every_variants_command_line_is_one_azjax_train_accepts(load_experiment):
    """Each variant's overrides as the sweep passes them, parsed by `azjax train`'s own parser: an override with no
    option (the "old" variants once set num_iterations, which --iterations sets) would fail its run on the device."""
    from azjax import cli
    from azjax.cli import train as train_command

    parser = cli.build_parser()
    with load_experiment("gpu_sweep") as sweep:
        assert sweep.VARIANTS and all(sweep.VARIANTS.values())
        for game, variants in sweep.VARIANTS.items():
            for name in variants:
                arguments = ["train", "--game", game, "--preset", "gpu", "--iterations", "5",
                             *sweep.override_arguments(sweep.variant_overrides(game, name, {}))]
                args, unknown = parser.parse_known_args(arguments)
                assert unknown == [], (game, name, unknown)
                config = train_command.config_from_args(args)
                if isinstance(config, tuple):
                    config = config[0]
                expected = sweep.variant_config(game, "gpu", name, {})
                assert config == dataclasses.replace(expected, num_iterations=5), (game, name)


def test_an_unknown_variant_or_a_taken_runs_dir_is_refused_before_any_run(load_experiment, tmp_path, capsys):
    with load_experiment("gpu_sweep") as sweep:
        with pytest.raises(SystemExit):
            sweep.main(["--game", "connect_four", "--variants", "preset,huge"])
        assert "huge" in capsys.readouterr().err
        (tmp_path / "preset").mkdir()
        with pytest.raises(SystemExit):
            sweep.main(["--game", "connect_four", "--variants", "preset", "--runs-dir", str(tmp_path)])
        assert "already holds preset" in capsys.readouterr().err


def test_a_run_is_read_from_its_metrics(load_experiment, tmp_path):
    records = [{"iteration": i, "iteration_seconds": s, "positions_per_second": p, "loss": 1.0 / i}
               for i, s, p in ((1, 2.0, 100.0), (2, 1.0, 200.0), (3, 1.0, 300.0))]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "checkpoints" / "3").mkdir(parents=True)
    with load_experiment("gpu_sweep") as sweep:
        run = sweep.read_run(tmp_path)
        assert run == {"iterations": 3, "median_iteration_seconds": 1.0, "median_positions_per_second": 200.0,
                       "last_loss": pytest.approx(1 / 3), "has_checkpoint": True}
        assert sweep.read_run(tmp_path / "missing")["iterations"] == 0


@pytest.mark.slow
def test_a_tiny_sweep_on_the_cpu(load_experiment, tmp_path):
    with load_experiment("gpu_sweep") as sweep:
        results = sweep.main(["--game", "tic_tac_toe", "--variants", "preset,short", "--minutes", "0.05", "--games",
                              "2", "--runs-dir", str(tmp_path / "runs"), "--results-dir", str(tmp_path / "results"),
                              "--set", *TINY_SET])
    [markdown] = (tmp_path / "results").glob("tic_tac_toe-cpu-*.md")
    written = json.loads(markdown.with_suffix(".json").read_text())
    assert written["variants"] == json.loads(json.dumps(results["variants"]))
    assert [row["variant"] for row in written["variants"]] == ["preset", "short"]
    for row in written["variants"]:
        assert row["exit_code"] == 0 and row["iterations"] >= 1 and row["has_checkpoint"]
        assert row["config"]["network"]["num_channels"] == 8  # --set reached the run
        assert 0.0 <= row["network_optimal_move_rate"] <= 1.0 and 0.0 <= row["search_optimal_move_rate"] <= 1.0
        assert row["elo"] is not None
        assert f"| {row['variant']} |" in markdown.read_text()
    assert written["variants"][1]["config"]["selfplay"]["num_steps"] == 8  # the variant's own override
    assert written["device_kind"] and written["versions"]["jax"]
    commands = [step["command"] for step in written["steps"]]
    assert len(commands) == 4 and all(command.startswith("azjax ") for command in commands)
    assert "eval --positions" in commands[2] and "--games 2" in commands[3]


def test_on_a_cpu_the_sweep_announces_no_total_until_its_first_run(load_experiment, tmp_path):
    """On an accelerator the first line gives the estimated total; on a CPU, where one iteration of the GPU preset
    can outlast a run's minutes, it says that the total waits for the first run, whose measured wall time then sizes
    the rest."""
    with load_experiment("gpu_sweep") as sweep:
        on_gpu = sweep.announcement("connect_four", "gpu", 3, 2.0, True, tmp_path, "gpu")
        total = 3 * (2.0 + sweep.RUN_OVERHEAD_MINUTES) + sweep.eval_minutes(3, True)
        assert f"about {total:.1f} min in all" in on_gpu and "CPU" not in on_gpu
        on_cpu = sweep.announcement("connect_four", "gpu", 3, 2.0, True, tmp_path, "cpu")
        assert "in all" not in on_cpu and "On a CPU: these sizes are an accelerator's" in on_cpu
        assert "the total is known once the first run has trained" in on_cpu
        assert "accelerator's" not in sweep.announcement("tic_tac_toe", "cpu", 2, 1.0, True, tmp_path, "cpu")

        run = {"iterations": 1, "median_iteration_seconds": 150.0}
        line = sweep.first_run_line(270.0, run, 2, 3, True, "cpu")
        assert line.startswith("The first run took 4.5 min (1 iteration of 150.0 s): 2 more runs as long take about "
                               "9.0 min, then the evaluation")
        assert "longer on this CPU" in line
        assert "about" in sweep.first_run_line(60.0, run, 2, 3, True, "gpu").split("then ")[1]


def test_the_platform_is_asked_of_a_process_of_its_own(load_experiment):
    import jax

    with load_experiment("gpu_sweep") as sweep:
        assert sweep.device_platform() == jax.devices()[0].platform
