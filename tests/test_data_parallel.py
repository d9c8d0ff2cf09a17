"""Data parallelism: the games and the SGD batch split over several devices (two CPU devices here).

jax fixes its device count when it starts, and this test process has one CPU device, so the runs on two devices
happen in one subprocess started with XLA_FLAGS=--xla_force_host_platform_device_count=2. It trains the TINY
config (with Reanalyse) for one iteration on one device and on two from the same seed, then resumes the two-device
run on one device; it plays arena games and the training evaluator's games split over the two devices; the tests compare
what it reports. Device choice and its errors are tested in-process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
import pytest
from tiny import TEST_XLA_FLAGS

from azjax import layout, parallel, presets
from azjax.config import ConfigError

_SCRIPT = textwrap.dedent(
    """
    import dataclasses, json, sys
    import jax, numpy as np
    from azjax import bots, arena, config as config_lib, evaluation, games as games_lib, parallel, presets, trainer
    from azjax import progress, uct

    overrides, root, full = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3] == "full"
    # With Reanalyse on, so that its search of replayed positions is split over the devices too.
    config = config_lib.with_overrides(presets.get_config("tic_tac_toe", "cpu"),
                                       {**overrides, "num_iterations": 1, "train.reanalyse_positions": 16,
                                        "train.value_target_mix": 0.5})
    quiet = lambda _: None
    one = trainer.train(config, root + "/one", num_devices=1, progress=False, log=quiet)
    logs = []
    two = trainer.train(config, root + "/two", num_devices=2, progress=False, log=logs.append)
    games = two.run_state.selfplay.move_number  # [B], one entry per game
    diff = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(  # on other devices
        jax.tree.leaves(one.run_state.train_state.params), jax.tree.leaves(two.run_state.train_state.params)))
    found = {
        "devices": len(jax.devices()),
        "logs": logs,
        "game_devices": sorted(str(d) for d in games.sharding.device_set),
        "game_shard_shapes": [list(s.data.shape) for s in games.addressable_shards],
        "one": one.history[0],
        "two": two.history[0],
        "param_max_abs_diff": diff,
    }
    if not full:
        print(json.dumps(found))
        sys.exit()
    longer = dataclasses.replace(config, num_iterations=2)
    resumed = trainer.train(longer, root + "/two", num_devices=1, progress=False, log=quiet)
    # The arena on two devices: each plays its half of the games on its own, with its own keys.
    game = games_lib.make("tic_tac_toe")
    bot_a, bot_b = uct.uct_bot(game, 4), bots.onestep_bot(game)
    key, mesh = jax.random.key(3), parallel.mesh_for(8)
    split = arena.play_games(key, game, bot_a.act, bot_b.act, 16, opening_moves=2, mesh=mesh)
    blocks = [arena.play_games(jax.random.fold_in(key, d), game, bot_a.act, bot_b.act, 8, opening_moves=2)
              for d in range(2)]
    # The same match shown as it plays: each device reports its own games.
    import io
    stream, shown = io.StringIO(), []
    arena.play(key, game, bot_a, bot_b, 16, opening_moves=2, mesh=mesh,
               progress=progress.MatchProgress(stream, every=0.0), on_games=shown.append)
    evaluator = evaluation.make_evaluator(config, opponents=("random", "onestep"), num_games=8, mesh=mesh)
    eval_scores = evaluator(jax.random.key(4), two.run_state.train_state.variables)
    print(json.dumps({
        **found,
        "resumed_iterations": [r["iteration"] for r in resumed.history],
        "resumed_from": resumed.resumed_from,
        "arena_devices": len(split.outcome.sharding.device_set),
        "arena_split": [np.asarray(x).tolist() for x in (split.outcome, split.seat, split.length)],
        "arena_blocks": [np.concatenate([np.asarray(getattr(b, f)) for b in blocks]).tolist()
                         for f in ("outcome", "seat", "length")],
        "eval_scores": eval_scores,
        "shown_split": [np.asarray(x).tolist() for x in (shown[0].outcome, shown[0].seat, shown[0].length)],
        "shown_reports": [r for r in stream.getvalue().split("\\r") if "games finished" in r],
    }))
    """
)


def run_on_two_devices(root, tiny_overrides: dict, full: bool) -> dict:
    """The script's findings on a CPU made two devices: the TINY iteration on one and on two devices, and with
    `full` also the resume on one device, the arena's split match and the evaluator over both."""
    env = dict(os.environ, XLA_FLAGS=f"{TEST_XLA_FLAGS} --xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(tiny_overrides), str(root), "full" if full else "iteration"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def two_device_runs(tiny_overrides, tmp_path_factory):
    return run_on_two_devices(tmp_path_factory.mktemp("data_parallel"), tiny_overrides, full=False)


@pytest.fixture(scope="module")
def two_device_extras(tiny_overrides, tmp_path_factory):
    """-m slow: the resume, the arena and the evaluator on two devices compile programs of their own; the default
    suite keeps the iteration's split and its equality with one device."""
    return run_on_two_devices(tmp_path_factory.mktemp("data_parallel_full"), tiny_overrides, full=True)


def test_games_are_split_evenly_over_two_devices(two_device_runs, tiny_overrides):
    assert two_device_runs["devices"] == 2
    assert any("Data parallel over 2 devices" in line for line in two_device_runs["logs"])
    assert len(two_device_runs["game_devices"]) == 2
    half = tiny_overrides["selfplay.num_games"] // 2
    assert two_device_runs["game_shard_shapes"] == [[half], [half]]


def test_two_devices_compute_the_same_iteration_as_one(two_device_runs):
    one, two = two_device_runs["one"], two_device_runs["two"]
    # The same games from the same keys and network: self-play statistics agree exactly...
    for name in ("games_finished", "positions_added", "game_length", "player0_win_rate", "draw_rate", "reanalysed"):
        assert one[name] == two[name], name
    # ...and the SGD steps (and Reanalyse's searches) up to the rounding of the cross-device reductions.
    for name in ("loss", "policy_loss", "value_loss", "grad_norm", "reanalyse_value_change"):
        assert two[name] == pytest.approx(one[name], rel=1e-4), name
    assert two_device_runs["param_max_abs_diff"] < 1e-4


@pytest.mark.slow  # see two_device_extras
def test_a_two_device_run_resumes_on_one_device(two_device_extras):
    assert two_device_extras["resumed_from"] == 1
    assert two_device_extras["resumed_iterations"] == [2]


@pytest.mark.slow  # see two_device_extras
def test_the_arena_plays_each_devices_share_of_the_games_on_its_own(two_device_extras):
    assert two_device_extras["arena_devices"] == 2
    # Device d's games are exactly a one-device match of half the games from the key folded with d.
    assert two_device_extras["arena_split"] == two_device_extras["arena_blocks"]
    _outcome, seat, _ = two_device_extras["arena_split"]
    assert seat == [0] * 4 + [1] * 4 + [0] * 4 + [1] * 4  # each device seats its own games half and half


@pytest.mark.slow  # see two_device_extras
def test_a_match_split_over_devices_shows_all_its_games_as_they_finish(two_device_extras):
    assert two_device_extras["shown_split"] == two_device_extras["arena_split"]  # showing it changes no game
    finished = [int(report.split(": ")[1].split(" of ")[0]) for report in two_device_extras["shown_reports"]]
    assert finished and finished == sorted(finished)
    assert finished[-1] == 16  # both devices' games counted
    assert all(report.endswith(" elapsed\x1b[K") for report in two_device_extras["shown_reports"])


@pytest.mark.slow  # see two_device_extras
def test_the_evaluator_splits_its_games_over_the_run_devices(two_device_extras):
    scores = two_device_extras["eval_scores"]
    assert set(scores) == {"eval/random", "eval/onestep", "eval/score", "eval/optimal_move_rate",
                           "eval/optimal_move_rate_can_err", "eval/value_accuracy", "positions_seconds",
                           "eval_memory_bytes"}
    assert all(0.0 <= value <= 1.0 for name, value in scores.items() if name.startswith("eval/"))
    assert scores["eval/score"] == pytest.approx((scores["eval/random"] + scores["eval/onestep"]) / 2)


def test_devices_default_to_all_that_divide_the_batches(tiny_config):
    assert layout.run_devices(tiny_config) == jax.devices()[:1]  # this process sees one CPU device
    assert layout.run_devices(tiny_config, 1) == jax.devices()[:1]


class _Device:
    def __init__(self, platform: str, index: int):
        self.platform, self.id = platform, index


@pytest.mark.parametrize(
    ("game", "platform", "expected"),
    [("tic_tac_toe", "cpu", 1), ("connect_four", "cpu", 2), ("brandub", "cpu", 2), ("tic_tac_toe", "gpu", 2)],
)
def test_the_default_layout_keeps_small_cpu_networks_on_one_device(game, platform, expected):
    """bench_layout.py measured tic-tac-toe's preset 2x faster on one CPU device, the others faster on two."""
    config = presets.get_config(game, "cpu")
    devices = [_Device(platform, 0), _Device(platform, 1)]
    chosen, reason = layout.default_layout(config, devices)
    assert chosen == devices[:expected]
    assert reason.startswith("one CPU device" if expected == 1 else f"2 {platform.upper()} devices" if platform == "cpu"
                             else "2 gpu devices")
    assert ("multiply-adds" in reason) == (platform == "cpu")


def test_the_split_threshold_sits_between_the_measured_presets():
    macs = {game: layout.evaluation_macs(presets.get_config(game, "cpu"), cells)
            for game, cells in (("tic_tac_toe", 9), ("connect_four", 42), ("brandub", 49), ("othello6", 36))}
    larger = [value for game, value in macs.items() if game != "tic_tac_toe"]
    assert macs["tic_tac_toe"] < layout.CPU_SPLIT_MIN_MACS < min(larger)


def test_asking_for_more_devices_than_there_are_names_the_flag(tiny_config):
    with pytest.raises(ConfigError, match="xla_force_host_platform_device_count=4"):
        layout.run_devices(tiny_config, 4)
    with pytest.raises(ConfigError, match="asked for 0"):
        layout.run_devices(tiny_config, 0)


def test_expose_cpu_cores_sets_the_device_count_unless_the_user_did(monkeypatch):
    monkeypatch.setattr(parallel, "_backend_started", lambda: False)  # this process's jax has long started
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_some_flag=1")
    parallel.expose_cpu_cores(3)
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_some_flag=1 --xla_force_host_platform_device_count=3"
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=5")
    parallel.expose_cpu_cores(3)
    assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=5"
    monkeypatch.delenv("XLA_FLAGS")
    parallel.expose_cpu_cores(1)  # one device is what jax gives anyway
    assert "XLA_FLAGS" not in os.environ


def test_expose_cpu_cores_leaves_the_environment_alone_once_jax_started(monkeypatch):
    jax.devices()  # starts the backend, if nothing did yet
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    parallel.expose_cpu_cores(2)
    assert "XLA_FLAGS" not in os.environ
