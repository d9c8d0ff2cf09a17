"""Reanalyse: replay keeps each position's game state and outcome, a few ready positions are searched again each
iteration with the current network, and their targets are rewritten from the new search, for their player to move.

Compiled once per module: one TINY tic-tac-toe training iteration with Reanalyse (two iterations run), and one
reanalysis of hand-made positions with a search deep enough to see an immediate win.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import compatibility, games, replay, selfplay, training
from azjax import config as config_lib
from azjax.config import ConfigError
from azjax.replay import Batch

REANALYSE = {"train.reanalyse_positions": 24, "train.reanalyse_simulations": 8, "train.value_target_mix": 0.5,
             "train.policy_surprise_weight": 0.5}


@pytest.fixture(scope="module")
def config(tiny_config) -> config_lib.Config:
    return config_lib.with_overrides(tiny_config, REANALYSE)


@pytest.fixture(scope="module")
def run(config):
    """Two training iterations with Reanalyse: the run states before and after the second, and its metrics."""
    iteration = jax.jit(training.make_train_iteration(config))
    first, _ = iteration(training.init_run_state(config))
    second, metrics = iteration(first)
    return first, second, metrics


@pytest.fixture(scope="module")
def game() -> games.Game:
    return games.make("tic_tac_toe")


def test_replay_keeps_each_positions_state_and_outcome(run, game):
    buffer = run[1].replay
    kept = buffer.replayable
    ready = np.asarray(buffer.ready)
    assert ready.sum() > 0
    # The kept state is the position the row's observation shows, and its player is the one to move there.
    observed = jax.vmap(game.observe)(kept.state)
    np.testing.assert_array_equal(np.asarray(observed)[ready], np.asarray(buffer.data.observation)[ready])
    np.testing.assert_array_equal(np.asarray(kept.state.current_player)[ready], np.asarray(buffer.player)[ready])
    outcome = np.asarray(kept.outcome)[ready]
    assert set(np.unique(outcome)) <= {-1.0, 0.0, 1.0}
    # The move number is the stones on the board (tic-tac-toe from the empty board; random opening moves count).
    stones = np.asarray(buffer.data.observation).sum(axis=(1, 2, 3))
    np.testing.assert_array_equal(np.asarray(kept.move_number)[ready], stones[ready])


def test_each_iteration_reanalyses_the_configured_positions(run, config):
    _, _, metrics = run
    assert int(metrics["reanalysed"]) == config.train.reanalyse_positions
    # The search of the same network over and over moves the targets, but not wildly.
    assert 0.0 < float(metrics["reanalyse_value_change"]) < 1.0
    assert all(np.isfinite(float(v)) for v in metrics.values())


def test_a_reanalysed_value_target_blends_the_outcome_with_the_new_search(run, config):
    before, after, _ = run
    # Rows untouched by the second iteration's self-play (the ring wrote the new positions elsewhere) whose policy
    # target changed were reanalysed: their value target is again (1 - m) x outcome + m x a search value in [-1, 1].
    buffer = after.replay
    mix = config.train.value_target_mix
    ready = np.asarray(before.replay.ready) & np.asarray(buffer.ready)
    same_state = np.all(np.asarray(before.replay.data.observation) == np.asarray(buffer.data.observation),
                        axis=(1, 2, 3))
    changed = ~np.all(np.isclose(np.asarray(before.replay.data.policy_target), np.asarray(buffer.data.policy_target)),
                      axis=1)
    rows = ready & same_state & changed
    assert rows.sum() > 0
    outcome = np.asarray(buffer.replayable.outcome)[rows]
    search_share = (np.asarray(buffer.data.value_target)[rows] - (1 - mix) * outcome) / mix
    assert np.all(np.abs(search_share) <= 1.0 + 1e-5)
    np.testing.assert_allclose(outcome, np.asarray(before.replay.replayable.outcome)[rows])
    np.testing.assert_allclose(np.asarray(buffer.data.policy_target)[rows].sum(axis=1), 1.0, atol=1e-5)


def _position(game, moves):
    state = game.init(jax.random.key(0))
    for action in moves:
        state = game.step(state, jnp.int32(action))
    return state


def test_the_new_search_value_is_for_the_player_to_move(game, tiny_config):
    """X to move can win at once (cell 2); O to move must block it. With 32 simulations the search finds X's win,
    worth +1 for X: a row whose stored outcome is -1 (pretend) gets (1 - m) x -1 + m x 1 = 0 with m = 0.5. A sign
    error would leave it at -1."""
    config = config_lib.with_overrides(tiny_config, {**REANALYSE, "train.reanalyse_positions": 2,
                                                     "train.reanalyse_simulations": 32,
                                                     "search.max_num_considered_actions": 9})
    parts = training.make_components(config)
    variables = training.init_run_state(config).train_state.variables
    x_to_win = _position(game, [0, 3, 1, 4])  # X on 0 and 1, O on 3 and 4: X to move, wins at 2
    buffer = replay.init_replay(game, 4, surprise=True, state_like=x_to_win)
    states = jax.tree.map(lambda *xs: jnp.stack(xs), x_to_win, x_to_win)
    rows = Batch(observation=jax.vmap(game.observe)(states), policy_target=jnp.full((2, 9), 1 / 9),
                 value_target=jnp.array([-0.5, -0.5]), surprise=jnp.zeros(2))
    replayable = replay.Replayable(state=states, move_number=jnp.array([4, 4]), outcome=jnp.array([-1.0, -1.0]))
    buffer = replay.add(buffer, rows, jnp.array([True, True]), player=states.current_player, replayable=replayable)
    reanalyse = jax.jit(functools.partial(training.reanalyse, parts=parts, config=config))  # as the iteration runs it
    new, metrics = reanalyse(jax.random.key(1), variables, buffer)
    assert int(metrics["reanalysed"]) == 2
    np.testing.assert_allclose(np.asarray(new.data.value_target)[:2], 0.0, atol=1e-5)
    assert np.all(np.argmax(np.asarray(new.data.policy_target)[:2], axis=1) == 2)  # the winning move
    # The rows that were never filled stay as they were.
    np.testing.assert_array_equal(np.asarray(new.data.value_target)[2:], 0.0)
    np.testing.assert_array_equal(np.asarray(new.data.policy_target)[2:], 0.0)


def test_draw_ready_draws_distinct_ready_rows_and_says_when_there_are_too_few(game):
    buffer = replay.init_replay(game, 16, state_like=_position(game, []))
    buffer = buffer.replace(ready=jnp.zeros(16, bool).at[jnp.array([1, 4, 9])].set(True))
    rows, valid = replay.draw_ready(jax.random.key(0), buffer, 5)
    rows, valid = np.asarray(rows), np.asarray(valid)
    assert len(set(rows.tolist())) == 5  # distinct
    assert sorted(rows[valid].tolist()) == [1, 4, 9]  # every ready row, and only they are valid
    # With max_moves, only the ready positions at most that many moves into their game: of 1, 4 and 9 (moves 1, 4
    # and 1 below), 1 and 9 for max_moves 2.
    moves = jnp.arange(16) % 8
    buffer = buffer.replace(replayable=buffer.replayable.replace(move_number=moves))
    rows, valid = replay.draw_ready(jax.random.key(1), buffer, 5, max_moves=2)
    assert sorted(np.asarray(rows)[np.asarray(valid)].tolist()) == [1, 9]
    buffer = buffer.replace(ready=jnp.ones(16, bool))
    rows, valid = replay.draw_ready(jax.random.key(2), buffer, 10, max_moves=2)
    assert np.asarray(valid).sum() == 6 and np.all(np.asarray(moves)[np.asarray(rows)[np.asarray(valid)]] <= 2)
    counts = np.zeros(16)
    for seed in range(200):
        rows, valid = replay.draw_ready(jax.random.key(seed), buffer, 4)
        assert np.all(np.asarray(valid))
        counts[np.asarray(rows)] += 1
    assert counts.min() > 20  # uniform: 50 expected per row


def test_refresh_needs_a_buffer_that_keeps_outcomes(game):
    buffer = replay.init_replay(game, 4)
    with pytest.raises(ValueError, match="state_like"):
        replay.refresh(buffer, jnp.array([0]), jnp.array([True]), jnp.zeros((1, 9)), jnp.zeros(1))


def test_store_positions_refuses_a_trajectory_without_states(run, game):
    buffer = run[1].replay
    # Every field but the game states (by name: a new field cannot shift them).
    fields = {f.name: jnp.zeros((1, 1)) for f in dataclasses.fields(selfplay.Trajectory) if f.name != "state"}
    trajectory = selfplay.Trajectory(**fields)
    assert trajectory.state is None
    with pytest.raises(ValueError, match="record_states"):
        selfplay.store_positions(buffer, trajectory, jnp.zeros(1, jnp.int32), game.max_length)


@pytest.mark.parametrize("overrides, message", [
    ({"train.reanalyse_positions": -1}, r"train\.reanalyse_positions must be >= 0"),
    ({"train.reanalyse_positions": 100000}, r"at most train\.replay_capacity"),
    ({"train.reanalyse_positions": 8, "train.reanalyse_simulations": 0}, r"train\.reanalyse_simulations"),
    ({"train.reanalyse_positions": 8, "train.reanalyse_max_moves": -1}, r"train\.reanalyse_max_moves"),
])
def test_bad_reanalyse_settings_are_named(tiny_config, overrides, message):
    with pytest.raises(ConfigError, match=message):
        config_lib.with_overrides(tiny_config, overrides).validate()


def test_reanalysed_positions_must_split_over_the_devices(config):
    odd = config_lib.with_overrides(config, {"train.reanalyse_positions": 7})
    with pytest.raises(ConfigError, match=r"train\.reanalyse_positions"):
        training.check_splits(odd, 2)


def test_turning_reanalyse_on_changes_a_checkpoints_layout(tiny_config, config):
    structural, _ = compatibility.compare_configs(tiny_config, config)
    assert any(line.startswith("train.reanalyse_positions") for line in structural)
    more = dataclasses.replace(config, train=dataclasses.replace(config.train, reanalyse_positions=48,
                                                                 reanalyse_simulations=16))
    structural, other = compatibility.compare_configs(config, more)
    assert not structural and len(other) == 2  # how many and how deep: no change to what is saved


def test_reanalyse_max_moves_searches_only_the_opening_again(run, config):
    opening = config_lib.with_overrides(config, {"train.reanalyse_max_moves": 2})
    buffer = run[1].replay
    variables = run[1].train_state.variables
    reanalyse = jax.jit(functools.partial(training.reanalyse, parts=training.make_components(opening),
                                          config=opening))
    new, metrics = reanalyse(jax.random.key(5), variables, buffer)
    moves = np.asarray(buffer.replayable.move_number)
    eligible = np.asarray(buffer.ready) & (moves <= 2)
    assert int(metrics["reanalysed"]) == min(eligible.sum(), opening.train.reanalyse_positions) > 0
    changed = ~np.all(np.asarray(new.data.policy_target) == np.asarray(buffer.data.policy_target), axis=1)
    assert changed.any() and np.all(moves[changed] <= 2)


def test_the_trainer_says_what_reanalyse_adds_to_an_iteration(tiny_config, config):
    from azjax import trainer

    assert "Reanalyse" not in trainer.describe_iteration(tiny_config)
    said = trainer.describe_iteration(config_lib.with_overrides(config, {"train.reanalyse_max_moves": 14}))
    assert "Reanalyse of 24 replayed positions of the first 14 moves at 8 simulations" in said
