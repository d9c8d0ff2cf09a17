"""The GPU presets' shapes run on the CPU: one training iteration of each, with thousands of parallel games as on
a GPU, its compute dtype and SGD batch and the CPU's lessons it takes (unfinished games kept, a cosine learning rate,
mixed value targets, policy-surprise draws), but a 1 x 8 network, 2 simulations, 2 moves and 1 SGD step, so that a
user can try a config before renting an accelerator (the full shapes only take longer). The replay ring is cut to
one iteration's positions, since the presets' rings of up to half a million positions would fill a laptop's
memory. In 2 moves few games end, so the SGD step mostly waits for a full batch: the bfloat16 training step itself is
run at TINY size below."""

from __future__ import annotations

import math

import jax
import pytest

from azjax import config as config_lib
from azjax import presets, training

GPU_GAMES = ["tic_tac_toe", "connect_four", "gomoku", "othello", "brandub"]
# An accelerator's shapes: -m slow runs them all (Connect Four's is the preset measured on an accelerator, Brandub's
# has the most actions and the largest replay rows). The default suite keeps their compute dtype (bfloat16) below.


@pytest.mark.slow
@pytest.mark.parametrize("game", GPU_GAMES)
def test_one_iteration_of_the_gpu_preset(game):
    preset = presets.get_config(game, "gpu")
    steps = 2
    config = config_lib.with_overrides(preset, {
        "network.num_blocks": 1, "network.num_channels": 8, "network.value_hidden": 8,
        "search.num_simulations": 2, "search.max_num_considered_actions": 2,
        "selfplay.num_steps": steps, "train.num_sgd_steps": 1,
        "train.replay_capacity": max(preset.train.batch_size, preset.selfplay.num_games * steps),
    })
    assert config.selfplay.num_games >= 1024 and config.network.compute_dtype == preset.network.compute_dtype
    assert config.selfplay.keep_unfinished and config.train.lr_schedule == "cosine"
    assert config.train.value_target_mix == 0.5 and config.train.policy_surprise_weight == 0.5
    state, metrics = jax.jit(training.make_train_iteration(config))(training.init_run_state(config))
    metrics = jax.device_get(metrics)
    assert int(state.iteration) == 1
    assert all(math.isfinite(float(value)) for value in metrics.values()) and metrics["params_finite"]
    assert state.selfplay.game_state.current_player.shape == (config.selfplay.num_games,)
    assert metrics["positions_lost"] == 0  # the unfinished games' positions wait in replay


def test_a_bfloat16_run_trains(tiny_config):
    """The GPU presets' compute dtype through whole iterations that take SGD steps, on the CPU."""
    config = config_lib.with_overrides(tiny_config, {"network.compute_dtype": "bfloat16"})
    iteration = jax.jit(training.make_train_iteration(config))
    start = training.init_run_state(config)
    state, first = iteration(start)
    state, second = iteration(state)
    taken = int(first["sgd_steps"]) + int(second["sgd_steps"])
    assert taken > 0 and math.isfinite(float(second["loss"])) and second["params_finite"]
    moved = jax.tree.map(lambda a, b: bool((a != b).any()), start.train_state.params, state.train_state.params)
    assert all(jax.tree.leaves(moved))
