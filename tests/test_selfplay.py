"""Self-play: value targets on hand-made trajectories, then TINY tic-tac-toe runs of `run_selfplay`.

Three runs (one compilation each) share the generic checks: no resignation with random openings, resignation
switched on but disabled in every game, and resignation of every game.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import games, replay
from azjax.games import random_opening
from azjax.networks import inference_fn, init_variables
from azjax.search import SearchOutput
from azjax.selfplay import (
    Trajectory,
    compute_value_targets,
    init_options,
    init_selfplay,
    new_games,
    policy_surprise,
    reply_targets,
    run_selfplay,
    selfplay_options,
    store_positions,
)
from azjax.training import make_components

# --------------------------------------------------------------------------------------------------------------
# compute_value_targets on hand-made trajectories


def make_trajectory(current_player, terminated, rewards) -> Trajectory:
    """A Trajectory [T, B] with the fields value targets read; the others are zeros of the right shapes."""
    current_player = jnp.asarray(current_player, jnp.int32)
    steps, batch = current_player.shape
    zeros = lambda *shape, dtype=jnp.float32: jnp.zeros((steps, batch, *shape), dtype)  # noqa: E731
    return Trajectory(
        observation=zeros(3, 3, 2),
        policy_target=zeros(9),
        current_player=current_player,
        move_number=zeros(dtype=jnp.int32),
        root_value=zeros(),
        action_value=zeros(),
        policy_surprise=zeros(),
        terminated=jnp.asarray(terminated, bool),
        rewards=jnp.asarray(rewards, jnp.float32),
        resigned=zeros(dtype=bool),
        would_have_resigned=zeros(2, dtype=bool),
        false_positive=zeros(2, dtype=bool),
    )


def column(players, end_step=None, end_rewards=None, steps=6):
    """One game slot: players [T]; the game in it ends at `end_step` with `end_rewards` (per player id)."""
    terminated = np.zeros(steps, bool)
    rewards = np.zeros((steps, 2), np.float32)
    for step, reward in zip(np.atleast_1d(end_step if end_step is not None else []), end_rewards or [], strict=True):
        terminated[step] = True
        rewards[step] = reward
    return np.asarray(players), terminated, rewards


def stack_columns(*columns):
    players, terminated, rewards = zip(*columns, strict=True)
    return np.stack(players, 1), np.stack(terminated, 1), np.stack(rewards, 1)


def test_value_targets_of_hand_made_games():
    slots = stack_columns(
        # X wins at step 2; a new game starts at step 3 and is drawn at step 5.
        column([0, 1, 0, 0, 1, 0], end_step=[2, 5], end_rewards=[[1, -1], [0, 0]]),
        # O wins at step 3; the next game is still running at the end of the scan.
        column([0, 1, 0, 1, 0, 1], end_step=[3], end_rewards=[[-1, 1]]),
        # A game carried over from the last iteration (O to move first) that O loses at step 4 (e.g. resigns).
        column([1, 0, 1, 0, 1, 0], end_step=[4], end_rewards=[[1, -1]]),
        # A game that does not end within the scan.
        column([0, 1, 0, 1, 0, 1]),
    )
    targets = compute_value_targets(make_trajectory(*slots))
    target, mask = targets.value_target, targets.value_mask
    expected_target = np.array(
        [
            [1, -1, 1, 0, 0, 0],
            [-1, 1, -1, 1, 0, 0],
            [-1, 1, -1, 1, -1, 0],
            [0, 0, 0, 0, 0, 0],
        ],
        np.float32,
    ).T
    expected_mask = np.array(
        [
            [1, 1, 1, 1, 1, 1],
            [1, 1, 1, 1, 0, 0],
            [1, 1, 1, 1, 1, 0],
            [0, 0, 0, 0, 0, 0],
        ],
        bool,
    ).T
    assert target.shape == mask.shape == (6, 4) and target.dtype == jnp.float32 and mask.dtype == jnp.bool_
    np.testing.assert_array_equal(mask, expected_mask)
    np.testing.assert_array_equal(np.where(expected_mask, target, 0), expected_target)
    # The games each slot held at step 0, per player id: the outcomes their earlier positions (in replay) need.
    np.testing.assert_array_equal(targets.carried_ended, [True, True, True, False])
    np.testing.assert_array_equal(np.asarray(targets.carried_outcome)[:3], [[1, -1], [-1, 1], [1, -1]])


def test_value_target_is_the_outcome_for_the_player_to_move():
    # The same finished game seen from both seats: alternating players get opposite targets.
    players, terminated, rewards = stack_columns(column([0, 1, 0, 1, 0], end_step=[4], end_rewards=[[1, -1]], steps=5))
    targets = compute_value_targets(make_trajectory(players, terminated, rewards))
    target, mask = targets.value_target, targets.value_mask
    assert np.all(mask)
    np.testing.assert_array_equal(target[:, 0], [1, -1, 1, -1, 1])
    np.testing.assert_array_equal(target[:-1, 0], -target[1:, 0])


def test_nothing_carries_back_across_a_game_end():
    # Slot 0: a win for O ends at step 0; the game after it is drawn at step 3. Slot 1: two wins for X in a row.
    players, terminated, rewards = stack_columns(
        column([1, 0, 1, 0], end_step=[0, 3], end_rewards=[[-1, 1], [0, 0]], steps=4),
        column([0, 1, 0, 0], end_step=[2, 3], end_rewards=[[1, -1], [1, -1]], steps=4),
    )
    targets = compute_value_targets(make_trajectory(players, terminated, rewards))
    target, mask = targets.value_target, targets.value_mask
    assert np.all(mask)
    np.testing.assert_array_equal(target[:, 0], [1, 0, 0, 0])
    np.testing.assert_array_equal(target[:, 1], [1, -1, 1, 1])


def reference_value_targets(terminated, rewards, current_player):
    """Plain-Python value targets: walk each slot forward, game by game."""
    steps, batch = terminated.shape
    target = np.zeros((steps, batch), np.float32)
    mask = np.zeros((steps, batch), bool)
    for b in range(batch):
        start = 0
        for t in range(steps):
            if terminated[t, b]:
                for s in range(start, t + 1):
                    target[s, b] = rewards[t, b, current_player[s, b]]
                    mask[s, b] = True
                start = t + 1
    return target, mask


# --------------------------------------------------------------------------------------------------------------
# run_selfplay on TINY tic-tac-toe

RUNS = {
    "no_resign_with_openings": {"opening_moves": 3, "resign_threshold": None},
    "resign_disabled": {"opening_moves": 0, "resign_threshold": 0.99, "resign_disabled_fraction": 1.0},
    "resign_all": {"opening_moves": 0, "resign_threshold": 0.99, "resign_disabled_fraction": 0.0},
}


@functools.cache
def network_variables(config):
    parts = make_components(config)
    return init_variables(parts.network, jax.random.key(0), parts.game.observation_shape)


@functools.cache
def compiled_selfplay(config):
    parts = make_components(config)
    play = functools.partial(run_selfplay, game=parts.game, search_fn=parts.search_fn,
                             **selfplay_options(config.selfplay))
    return jax.jit(play)


@functools.cache
def played(name: str, tiny_config):
    """(selfplay config, initial state, final state, trajectory as numpy) of the TINY run `name`."""
    config = dataclasses.replace(tiny_config, selfplay=dataclasses.replace(tiny_config.selfplay, **RUNS[name]))
    parts = make_components(config)
    initial = init_selfplay(jax.random.key(1), parts.game, **init_options(config.selfplay))
    final, trajectory = compiled_selfplay(config)(jax.random.key(2), network_variables(tiny_config), initial)
    return config, initial, final, jax.device_get(trajectory)


@pytest.fixture(scope="module", params=list(RUNS))
def run(request, tiny_config):
    """(name, selfplay config, initial state, final state, trajectory as numpy) of one TINY run."""
    return (request.param, *played(request.param, tiny_config))


def stones(trajectory) -> np.ndarray:
    """[T, B] stones on the board of each recorded position."""
    return trajectory.observation.sum(axis=(2, 3, 4)).astype(int)


def test_trajectory_shapes(run):
    _, config, _, final, trajectory = run
    steps, batch = config.selfplay.num_steps, config.selfplay.num_games
    expected = {
        "observation": (steps, batch, 3, 3, 2),
        "policy_target": (steps, batch, 9),
        "current_player": (steps, batch),
        "move_number": (steps, batch),
        "root_value": (steps, batch),
        "action_value": (steps, batch),
        "policy_surprise": (steps, batch),
        "terminated": (steps, batch),
        "rewards": (steps, batch, 2),
        "resigned": (steps, batch),
        "would_have_resigned": (steps, batch, 2),
        "false_positive": (steps, batch, 2),
    }
    for name, shape in expected.items():
        assert getattr(trajectory, name).shape == shape, name
    assert final.move_number.shape == (batch,) and final.game_state.board.shape == (batch, 9)
    assert not np.any(np.asarray(final.game_state.terminated))  # finished games were replaced


def test_policy_targets_are_distributions_over_legal_moves(run):
    trajectory = run[4]
    legal = trajectory.observation.sum(axis=-1).reshape(*trajectory.observation.shape[:2], 9) == 0
    policy = trajectory.policy_target
    np.testing.assert_allclose(policy.sum(axis=-1), 1.0, rtol=1e-5)
    assert np.all(policy >= 0)
    np.testing.assert_array_equal(policy[~legal], 0.0)


def test_positions_match_their_move_numbers(run):
    trajectory = run[4]
    # Every move (opening moves too) adds one stone and passes the turn.
    np.testing.assert_array_equal(stones(trajectory), trajectory.move_number)
    np.testing.assert_array_equal(trajectory.current_player, trajectory.move_number % 2)


def test_finished_games_restart_in_their_slot(run):
    _, config, initial, final, trajectory = run
    done = trajectory.terminated
    assert np.all(done.any(axis=0)), "every tic-tac-toe game ends within 12 moves"
    now, later = trajectory.move_number[:-1], trajectory.move_number[1:]
    np.testing.assert_array_equal(later[~done[:-1]], now[~done[:-1]] + 1)  # a game goes on
    assert np.all(later[done[:-1]] <= config.selfplay.opening_moves)  # a fresh game (after its opening)
    if config.selfplay.opening_moves == 0:
        np.testing.assert_array_equal(later[done[:-1]], 0)
        assert np.all(trajectory.observation[1:][done[:-1]] == 0)  # an empty board
    np.testing.assert_array_equal(trajectory.move_number[0], initial.move_number)
    expected_final = np.where(done[-1], final.move_number, trajectory.move_number[-1] + 1)
    np.testing.assert_array_equal(final.move_number, expected_final)


def test_rewards_are_zero_sum_paid_at_the_end_and_never_for_an_illegal_move(run):
    trajectory = run[4]
    rewards, done = trajectory.rewards, trajectory.terminated
    np.testing.assert_array_equal(rewards.sum(axis=-1), 0.0)
    np.testing.assert_array_equal(rewards[~done], 0.0)
    mover_reward = np.take_along_axis(rewards, trajectory.current_player[..., None], axis=-1)[..., 0]
    played_out = done & ~trajectory.resigned
    assert np.all(mover_reward[played_out] >= 0), "the move that ends a game wins or draws; it is never illegal"


def test_value_targets_of_a_run_match_a_plain_python_walk(run):
    name, trajectory = run[0], run[4]
    targets = compute_value_targets(trajectory)
    target, mask = targets.value_target, targets.value_mask
    expected_target, expected_mask = reference_value_targets(
        trajectory.terminated, trajectory.rewards, trajectory.current_player
    )
    np.testing.assert_array_equal(mask, expected_mask)
    np.testing.assert_array_equal(np.where(expected_mask, target, 0), expected_target)
    assert expected_mask.any()
    if name != "resign_all":  # (where every position's game ends at once)
        assert not expected_mask.all(), "the games in progress at the end have no target yet"


def test_reply_targets_are_the_policy_target_of_the_next_position_of_the_same_game(run):
    """The opponent-reply target (KataGo's auxiliary policy) of a position is the search policy of the position
    that followed it in its game; none (zeros) after the game's last move or at the trajectory's last step."""
    name, trajectory = run[0], run[4]
    reply = np.asarray(reply_targets(trajectory))
    steps, num_games = trajectory.terminated.shape
    for t in range(steps):
        for b in range(num_games):
            follows = t + 1 < steps and not trajectory.terminated[t, b]
            expected = trajectory.policy_target[t + 1, b] if follows else np.zeros_like(reply[t, b])
            np.testing.assert_array_equal(reply[t, b], expected, err_msg=f"step {t}, game {b}")
            if follows:  # the next position's player is the opponent
                assert trajectory.current_player[t + 1, b] != trajectory.current_player[t, b]
    assert np.any(reply.sum(-1) == 0)
    if name != "resign_all":  # (where every game ends at its first position)
        assert np.any(reply.sum(-1) > 0)


def test_policy_surprise_is_the_kl_of_the_search_policy_from_the_networks_prior(run, tiny_config):
    """Each position's policy surprise is KL(search policy || the network's prior over the legal moves) (KataGo's
    surprise weighting reads it), recomputed here in numpy from the recorded observations."""
    _name, config, _initial, _final, trajectory = run
    parts = make_components(config)
    observation = trajectory.observation.reshape(-1, *trajectory.observation.shape[2:])
    logits, _ = jax.jit(inference_fn(parts.network))(network_variables(tiny_config), observation)
    legal = observation.sum(axis=-1).reshape(len(observation), -1) == 0  # tic-tac-toe: the empty cells
    logits = np.where(legal, np.asarray(logits, np.float64), -np.inf)
    top = logits.max(-1, keepdims=True)
    log_prior = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))
    target = trajectory.policy_target.reshape(len(observation), -1).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.where(target > 0, target * (np.log(target) - log_prior), 0.0).sum(-1)
    np.testing.assert_allclose(trajectory.policy_surprise.reshape(-1), expected, rtol=1e-4, atol=1e-5)
    assert np.all(expected >= -1e-6) and np.any(expected > 1e-3)  # the search moves away from the prior


def test_policy_surprise_of_hand_made_policies():
    """KL(target || softmax(logits)): 0 where the target is the prior or all zeros (a fast search's); masked
    (lowest-float) logits of moves the target leaves at 0 add nothing."""
    low = np.finfo(np.float32).min
    logits = jnp.array([[0.0, 0.0, low], [0.0, np.log(3.0), low], [1.0, 2.0, 3.0]])
    target = jnp.array([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 0.0]])
    expected = [0.0, 0.5 * np.log(0.5 / 0.25) + 0.5 * np.log(0.5 / 0.75), 0.0]
    np.testing.assert_allclose(policy_surprise(target, logits), expected, atol=1e-6)


def test_openings_put_stones_on_the_board(run):
    _name, config, _initial, _, trajectory = run
    if config.selfplay.opening_moves == 0:
        assert np.all(trajectory.move_number[0] == 0) and np.all(stones(trajectory)[0] == 0)
        return
    first = trajectory.move_number[0]
    assert np.all(first <= config.selfplay.opening_moves)
    assert np.any(first > 0), "some of the 8 games should start after a random opening"
    assert np.all(stones(trajectory)[0][first > 0] > 0)
    restarted = trajectory.move_number[1:][trajectory.terminated[:-1]]
    assert restarted.size > 0 and np.all(restarted <= config.selfplay.opening_moves)


def test_resignation(run):
    name, _config, initial, final, trajectory = run
    done, resigned = trajectory.terminated, trajectory.resigned
    if name == "no_resign_with_openings":
        assert not resigned.any() and not trajectory.would_have_resigned.any()
    elif name == "resign_all":
        # The chosen move's value never reaches 0.99 (it averages in the network's value), so every mover resigns.
        assert np.all(trajectory.action_value < 0.99)
        assert resigned.all() and done.all()
        np.testing.assert_array_equal(trajectory.move_number, 0)
        mover = trajectory.current_player
        np.testing.assert_array_equal(np.take_along_axis(trajectory.rewards, mover[..., None], -1)[..., 0], -1.0)
        targets = compute_value_targets(trajectory)
        target, mask = targets.value_target, targets.value_mask
        assert np.all(mask) and np.all(np.asarray(target) == -1.0)  # the resigning mover lost
        assert not trajectory.would_have_resigned.any()  # no game had resignation disabled
    else:  # resign_disabled
        assert np.asarray(initial.resign_disabled).all() and np.asarray(final.resign_disabled).all()
        assert np.all(trajectory.action_value[~done] < 0.99)  # only a winning move is worth 1
        assert not resigned.any()
        # Both players fell below the threshold in every game (all started in this scan), so every finished
        # game records that both would have resigned; those who did not lose are false positives.
        np.testing.assert_array_equal(trajectory.would_have_resigned, np.repeat(done[..., None], 2, axis=-1))
        expected_false_positive = trajectory.would_have_resigned & (trajectory.rewards > -1)
        np.testing.assert_array_equal(trajectory.false_positive, expected_false_positive)
        assert trajectory.false_positive.any()


def test_games_carry_over_between_calls(tiny_config):
    config, _, middle, _ = played("no_resign_with_openings", tiny_config)
    play = compiled_selfplay(config)  # compiled by that run
    _, second = play(jax.random.key(3), network_variables(tiny_config), middle)
    np.testing.assert_array_equal(second.move_number[0], middle.move_number)
    observe = jax.jit(jax.vmap(make_components(config).game.observe))
    np.testing.assert_array_equal(second.observation[0], observe(middle.game_state))
    assert np.any(np.asarray(middle.move_number) > 0)  # some games were in progress


# --------------------------------------------------------------------------------------------------------------
# store_positions: no position is thrown away


@pytest.mark.parametrize("num_steps, capacity", [(3, 4096), (5, 64)])
def test_positions_of_games_that_span_calls_get_their_outcome(tiny_config, num_steps, capacity):
    """Self-play in calls of 3 (or 5) moves, each stored at once, against one long trajectory's value targets:
    every position of a finished game is in replay with the outcome for its player to move, the others wait; with
    a ring too small to hold a game's positions until it ends, the overwritten ones are counted as lost."""
    config = dataclasses.replace(tiny_config, selfplay=dataclasses.replace(
        tiny_config.selfplay, num_steps=num_steps, opening_moves=2))
    parts = make_components(config)
    play = compiled_selfplay(config)
    store = jax.jit(functools.partial(store_positions, max_length=parts.game.max_length))
    state = init_selfplay(jax.random.key(4), parts.game, **init_options(config.selfplay))
    buffer = replay.init_replay(parts.game, capacity)
    trajectories, added, lost = [], 0, 0
    for call in range(6):
        pending = state.pending
        state, trajectory = play(jax.random.key(10 + call), network_variables(tiny_config), state)
        buffer, counts = store(buffer, trajectory, pending)
        trajectories.append(jax.device_get(trajectory))
        added, lost = added + int(counts["positions_added"]), lost + int(counts["positions_lost"])
    whole = jax.tree.map(lambda *xs: np.concatenate(xs), *trajectories)  # [6 T, B]
    target, mask = reference_value_targets(whole.terminated, whole.rewards, whole.current_player)
    num_games = config.selfplay.num_games
    # Ring index of each position: every call appends its T * B positions in time-major order.
    index = np.arange(whole.terminated.size).reshape(whole.terminated.shape) % capacity
    newest = whole.terminated.size - capacity  # positions before this one were overwritten
    held = np.arange(whole.terminated.size).reshape(whole.terminated.shape) >= newest
    ready = np.asarray(buffer.ready)[index]
    np.testing.assert_array_equal(ready[held], mask[held])
    np.testing.assert_array_equal(np.asarray(buffer.data.value_target)[index][held & mask], target[held & mask])
    np.testing.assert_array_equal(np.asarray(buffer.data.observation)[index][held], whole.observation[held])
    np.testing.assert_array_equal(np.asarray(buffer.num_ready), np.sum(mask & held))
    # Positions still waiting are those of the games in progress.
    assert int(np.asarray(state.pending).sum()) == np.sum(~mask)
    assert mask.any() and not mask.all()
    # Every position of every finished game was added, or lost: overwritten in the ring before its game ended.
    per_call = num_steps * num_games
    expected_lost = 0
    for b in range(num_games):
        start = 0
        for t in np.flatnonzero(whole.terminated[:, b]):
            end_call = t // num_steps
            expected_lost += sum(s // num_steps < end_call and s * num_games + b < (end_call + 1) * per_call - capacity
                                 for s in range(start, t + 1))
            start = t + 1
    assert (lost, added) == (expected_lost, mask.sum() - expected_lost)
    assert (lost > 0) == (capacity < num_games * (num_steps + parts.game.max_length))


def play_and_store(tiny_config, num_calls: int = 4, **store_options):
    """Self-play in calls of 3 moves, each stored at once (`store_positions` with `store_options`) into a ring of
    4096: the buffer, and each call's trajectory (on the host) with its counts."""
    config = dataclasses.replace(tiny_config, selfplay=dataclasses.replace(tiny_config.selfplay, num_steps=3))
    parts = make_components(config)
    store = jax.jit(functools.partial(store_positions, max_length=parts.game.max_length, **store_options))
    state = init_selfplay(jax.random.key(4), parts.game, **init_options(config.selfplay))
    buffer = replay.init_replay(parts.game, 4096)
    calls = []
    for call in range(num_calls):
        pending = state.pending
        state, trajectory = compiled_selfplay(config)(jax.random.key(10 + call), network_variables(tiny_config), state)
        buffer, counts = store(buffer, trajectory, pending)
        calls.append((jax.device_get(trajectory), counts))
    return buffer, calls


def test_dropping_unfinished_games_keeps_only_positions_of_games_that_ended(tiny_config):
    """keep_unfinished=False: what a call's trajectory alone can label goes in, in order; the rest is dropped."""
    buffer, calls = play_and_store(tiny_config, keep_unfinished=False)
    expected_targets = []
    for trajectory, counts in calls:
        target, mask = reference_value_targets(trajectory.terminated, trajectory.rewards, trajectory.current_player)
        expected_targets += target.reshape(-1)[mask.reshape(-1)].tolist()
        assert int(counts["positions_lost"]) == np.sum(~mask) and int(counts["positions_added"]) == np.sum(mask)
    size = len(expected_targets)
    assert int(buffer.size) == int(buffer.num_ready) == size > 0
    np.testing.assert_array_equal(np.asarray(buffer.data.value_target)[:size], expected_targets)


def random_search(variables, key, states, move_number, kept=None) -> SearchOutput:
    """A search that plays a uniformly random legal move (cheap to compile), with it as the policy target."""
    del variables, move_number, kept
    legal = states.legal_action_mask
    action = jax.random.categorical(key, jnp.where(legal, 0.0, -jnp.inf)).astype(jnp.int32)
    zeros = jnp.zeros(action.shape, jnp.float32)
    return SearchOutput(
        action=action, policy_target=jax.nn.one_hot(action, legal.shape[-1]), root_value=zeros, action_value=zeros,
        network_value=zeros, network_logits=jnp.zeros(legal.shape, jnp.float32),
        visit_counts=jnp.zeros(legal.shape, jnp.int32), action_values=jnp.zeros(legal.shape, jnp.float32))


def test_switching_keep_unfinished_on_at_a_resume_settles_only_positions_it_stored(tiny_config):
    """Self-play without keep_unfinished stores only finished games and counts nothing as pending, so a run resumed
    with keep_unfinished (the same games going on) neither overwrites a stored row nor makes an unwritten one
    ready: what it stores afterwards matches the value targets of its own trajectories, as a fresh run's."""
    game = make_components(tiny_config).game
    buffer = replay.init_replay(game, 4096)
    state = init_selfplay(jax.random.key(4), game, **init_options(tiny_config.selfplay))
    def play_and_store(key, state, buffer, *, keep):
        config = dataclasses.replace(tiny_config.selfplay, num_steps=3, keep_unfinished=keep)
        next_state, trajectory = run_selfplay(key, {}, state, game=game, search_fn=random_search,
                                              **selfplay_options(config))
        stored, _ = store_positions(buffer, trajectory, state.pending, game.max_length, keep_unfinished=keep)
        return next_state, stored, trajectory

    step = {keep: jax.jit(functools.partial(play_and_store, keep=keep)) for keep in (False, True)}
    after = []  # the trajectories played with keep_unfinished on
    for call, keep in enumerate([False, False, True, True]):
        if keep and not after:  # the switch: what the run stored without keep_unfinished
            before = jax.device_get(buffer)
            assert not np.any(np.asarray(state.pending)) and np.any(np.asarray(state.move_number) > 0)
        state, buffer, trajectory = step[keep](jax.random.key(10 + call), state, buffer)
        if keep:
            after.append(jax.device_get(trajectory))
    stored = int(before.next_index)
    assert 0 < stored == int(before.num_ready)
    np.testing.assert_array_equal(np.asarray(buffer.data.value_target)[:stored], before.data.value_target[:stored])
    np.testing.assert_array_equal(np.asarray(buffer.ready)[:stored], True)
    whole = jax.tree.map(lambda *xs: np.concatenate(xs), *after)  # [2 T, B], stored in time-major order
    target, mask = reference_value_targets(whole.terminated, whole.rewards, whole.current_player)
    end = stored + mask.size
    np.testing.assert_array_equal(np.asarray(buffer.ready)[stored:end], mask.reshape(-1))
    np.testing.assert_array_equal(np.asarray(buffer.data.value_target)[stored:end][mask.reshape(-1)], target[mask])
    assert not np.any(np.asarray(buffer.ready)[end:])  # never written: never ready


@pytest.mark.parametrize("keep_unfinished", [True, False])
def test_stored_positions_carry_their_reply_targets(tiny_config, keep_unfinished):
    """A buffer made with reply_targets=True receives each stored position's reply target beside its policy
    target: the rows of the positions stored, in order."""
    config = dataclasses.replace(tiny_config, selfplay=dataclasses.replace(tiny_config.selfplay, num_steps=3))
    parts = make_components(config)
    store = jax.jit(functools.partial(store_positions, max_length=parts.game.max_length,
                                      keep_unfinished=keep_unfinished))
    state = init_selfplay(jax.random.key(4), parts.game, **init_options(config.selfplay))
    buffer = replay.init_replay(parts.game, 4096, reply_targets=True)
    expected_policy, expected_reply = [], []
    for call in range(3):
        pending = state.pending
        state, trajectory = compiled_selfplay(config)(jax.random.key(10 + call), network_variables(tiny_config), state)
        buffer, _ = store(buffer, trajectory, pending)
        stored = np.ones(trajectory.terminated.shape, bool)
        if not keep_unfinished:
            stored = np.asarray(compute_value_targets(trajectory).value_mask)
        expected_policy.append(np.asarray(trajectory.policy_target)[stored])
        expected_reply.append(np.asarray(reply_targets(trajectory))[stored])
    size = int(buffer.size)
    np.testing.assert_array_equal(np.asarray(buffer.data.policy_target)[:size], np.concatenate(expected_policy))
    np.testing.assert_array_equal(np.asarray(buffer.data.reply_target)[:size], np.concatenate(expected_reply))
    assert np.any(np.asarray(buffer.data.reply_target)[:size].sum(-1) > 0)


@pytest.mark.parametrize("keep_unfinished", [True, False])
def test_value_target_mix_blends_the_outcome_with_the_search_value_of_the_move_played(tiny_config, keep_unfinished):
    """value_target_mix m: each ready position's target is (1 - m) x its game's outcome + m x the search's value
    of the move played there, both for its player to move; also for games that end in a later call (keep)."""
    mix = 0.25
    buffer, calls = play_and_store(tiny_config, keep_unfinished=keep_unfinished, value_target_mix=mix)
    trajectories = [trajectory for trajectory, _ in calls]
    whole = jax.tree.map(lambda *xs: np.concatenate(xs), *trajectories)  # [4 T, B]
    if keep_unfinished:  # the ring holds every position in time-major order
        outcome, mask = reference_value_targets(whole.terminated, whole.rewards, whole.current_player)
        search_value = whole.action_value.reshape(-1)
    else:  # each call stores the positions its own trajectory labels, in order
        labelled = [reference_value_targets(t.terminated, t.rewards, t.current_player) for t in trajectories]
        outcome = np.concatenate([z.reshape(-1)[m.reshape(-1)] for z, m in labelled])
        search_value = np.concatenate([t.action_value.reshape(-1)[m.reshape(-1)]
                                       for t, (_, m) in zip(trajectories, labelled, strict=True)])
        mask = np.ones_like(outcome, bool)
    outcome, mask = outcome.reshape(-1), mask.reshape(-1)
    size = outcome.size
    stored = np.asarray(buffer.data.value_target)[:size]
    np.testing.assert_array_equal(np.asarray(buffer.ready)[:size], mask)
    np.testing.assert_allclose(stored[mask], (1 - mix) * outcome[mask] + mix * search_value[mask], atol=1e-6)
    # The search's values differ from the outcomes, so the blend changed the targets, and differ in sign by player.
    assert np.abs(search_value[mask] - outcome[mask]).max() > 0.1 and mask.sum() > 10


def reference_lambda_returns(terminated, rewards, current_player, action_value, lam):
    """Plain-Python TD(lambda) over the search values, game by game, walking each finished game back from its end
    with the returns per player id: H = (1 - lam) x (q for the mover, -q for the other) + lam x (r + H after)."""
    steps, batch = terminated.shape
    target = np.zeros((steps, batch), np.float32)
    for b in range(batch):
        start = 0
        for t in range(steps):
            if terminated[t, b]:
                later = np.zeros(2)
                for s in range(t, start - 1, -1):
                    value = np.array([1.0, -1.0] if current_player[s, b] == 0 else [-1.0, 1.0]) * action_value[s, b]
                    later = (1 - lam) * value + lam * (rewards[s, b] + (later if s < t else 0.0))
                    target[s, b] = later[current_player[s, b]]
                start = t + 1
    return target


@pytest.mark.parametrize("keep_unfinished", [True, False])
def test_value_target_lambda_blends_the_outcome_with_the_search_values_lambda_returns(tiny_config, keep_unfinished):
    """value_target_lambda lam: the search's share of each ready position's target is the lambda-return of the
    search values from there to its game's end, for its player to move (the reference walks each game back per
    player id, so a sign slip between the two players fails it); with keep_unfinished across calls too, over the
    positions that waited in replay. lam = 1 leaves the outcome alone."""
    mix, lam = 0.5, 0.75
    trajectories, stored, mask = {}, {}, {}
    for each in (lam, 1.0):
        buffer, calls = play_and_store(tiny_config, keep_unfinished=keep_unfinished, value_target_mix=mix,
                                       value_target_lambda=each)
        trajectories[each] = [trajectory for trajectory, _ in calls]
        stored[each] = np.asarray(buffer.data.value_target)
        mask[each] = np.asarray(buffer.ready)
    trajectories = trajectories[lam]  # the same games for both: the targets do not change the play
    fields = ("terminated", "rewards", "current_player", "action_value")
    if keep_unfinished:  # the ring holds every position in time-major order
        whole = jax.tree.map(lambda *xs: np.concatenate(xs), *trajectories)  # [4 T, B]
        outcome, ended = reference_value_targets(whole.terminated, whole.rewards, whole.current_player)
        returns = reference_lambda_returns(*(getattr(whole, name) for name in fields), lam)
        outcome, ended, returns = outcome.reshape(-1), ended.reshape(-1), returns.reshape(-1)
    else:  # each call stores the positions its own trajectory labels, in order
        parts = []
        for t in trajectories:
            z, m = reference_value_targets(t.terminated, t.rewards, t.current_player)
            h = reference_lambda_returns(*(getattr(t, name) for name in fields), lam)
            parts.append((z[m], h[m]))
        outcome = np.concatenate([z for z, _ in parts])
        returns = np.concatenate([h for _, h in parts])
        ended = np.ones_like(outcome, bool)
    size = outcome.size
    for each in (lam, 1.0):
        np.testing.assert_array_equal(mask[each][:size], ended)
    np.testing.assert_allclose(stored[lam][:size][ended], (1 - mix) * outcome[ended] + mix * returns[ended], atol=1e-5)
    np.testing.assert_allclose(stored[1.0][:size][ended], outcome[ended], atol=1e-6)
    # The lambda-returns differ from both the outcome and the move's own search value: the option changed something.
    search_value = (np.concatenate([t.action_value.reshape(-1) for t in trajectories]) if keep_unfinished else None)
    assert np.abs(returns[ended] - outcome[ended]).max() > 0.05 and ended.sum() > 10
    if search_value is not None:
        assert np.abs(returns[ended] - search_value[ended]).max() > 0.05


# --------------------------------------------------------------------------------------------------------------
# Playout-cap randomisation


def stub_search(root_value: float, first: bool):
    """A search that plays the first (or last) legal move, with a one-hot policy target on it and `root_value`
    as every value it reports: which search made a step is readable from the trajectory."""

    def search(variables, key, states, move_number, kept=None):
        del variables, key, move_number, kept
        legal = states.legal_action_mask
        num_actions = legal.shape[-1]
        action = (jnp.argmax(legal, axis=-1) if first else num_actions - 1 - jnp.argmax(legal[:, ::-1], axis=-1))
        action = action.astype(jnp.int32)
        value = jnp.full(action.shape, root_value, jnp.float32)
        return SearchOutput(
            action=action, policy_target=jax.nn.one_hot(action, num_actions), root_value=value, action_value=value,
            network_value=value, network_logits=jnp.zeros(legal.shape, jnp.float32),
            visit_counts=jnp.zeros(legal.shape, jnp.int32),
            action_values=jnp.zeros(legal.shape, jnp.float32))

    return search


def test_playout_caps_search_some_steps_fast_and_drop_their_policy_targets(tiny_config):
    config = dataclasses.replace(tiny_config.selfplay, num_steps=40, full_search_fraction=0.5,
                                 fast_search_simulations=2)
    game = make_components(tiny_config).game
    play = jax.jit(functools.partial(run_selfplay, game=game, search_fn=stub_search(0.5, True),
                                     **selfplay_options(config), fast_search_fn=stub_search(-0.5, False)))
    games_state = init_selfplay(jax.random.key(5), game, **init_options(config))
    _, trajectory = jax.device_get(play(jax.random.key(4), {}, games_state))
    full = trajectory.root_value == 0.5  # [T, B]: the full search made this move
    assert np.all(full | (trajectory.root_value == -0.5))
    # One draw per step for the whole batch, about half of them full.
    np.testing.assert_array_equal(full, np.repeat(full[:, :1], full.shape[1], axis=1))
    assert 8 <= full[:, 0].sum() <= 32
    # A full step's positions keep their policy target, a fast step's have none (zeros).
    np.testing.assert_allclose(trajectory.policy_target[full].sum(-1), 1.0)
    np.testing.assert_array_equal(trajectory.policy_target[~full], 0.0)
    with pytest.raises(ValueError, match="needs a fast_search_fn"):
        run_selfplay(jax.random.key(4), {}, init_selfplay(jax.random.key(5), game, **init_options(config)), game=game,
                     search_fn=stub_search(0.5, True), **selfplay_options(config))


def test_start_search_searches_the_games_nearest_their_start_deeper(tiny_config):
    """start_search_games k: at every step exactly the k games with the fewest moves played get the start search
    (readable from the root value its stub reports), the others the usual one: the outputs of the two searches go
    back to their own games."""
    num_start = 5
    config = dataclasses.replace(tiny_config.selfplay, num_steps=12, opening_moves=3, start_search_games=num_start)
    game = make_components(tiny_config).game
    play = jax.jit(functools.partial(run_selfplay, game=game, search_fn=stub_search(-0.5, False),
                                     **selfplay_options(config), start_search_fn=stub_search(0.5, True)))
    games_state = init_selfplay(jax.random.key(5), game, **init_options(config))
    _, trajectory = jax.device_get(play(jax.random.key(4), {}, games_state))
    deep = trajectory.root_value == 0.5  # [T, B]
    assert np.all(deep | (trajectory.root_value == -0.5))
    np.testing.assert_array_equal(deep.sum(axis=1), num_start)
    moves = trajectory.move_number
    for step in range(config.num_steps):
        assert moves[step][deep[step]].max() <= moves[step][~deep[step]].min()
    assert len(np.unique(moves)) > 3  # games at several stages: the ordering was put to the test
    with pytest.raises(ValueError, match="needs a start_search_fn"):
        run_selfplay(jax.random.key(4), {}, init_selfplay(jax.random.key(5), game, **init_options(config)), game=game,
                     search_fn=stub_search(0.5, True), **selfplay_options(config))


def test_openings_count_the_moves_actually_played():
    # Tic-tac-toe openings of 8 random moves: many draw a move that would end the game (a line after 5 or more
    # stones), which is skipped; the count returned, and new_games's move numbers, must be the stones on the board.
    game = games.make("tic_tac_toe")
    keys = jax.random.split(jax.random.key(0), 512)
    states = jax.vmap(game.init)(keys)
    opening = jax.jit(jax.vmap(lambda k, s: random_opening(k, game, s, jnp.int32(8), 8)))
    opened, played = opening(keys, states)

    def on_board(states) -> np.ndarray:
        return np.asarray(jax.vmap(game.observe)(states)).sum(axis=(1, 2, 3)).astype(int)

    np.testing.assert_array_equal(played, on_board(opened))
    assert not np.any(opened.terminated)
    assert np.any(played == 8) and np.any(played < 8), "some openings should skip a game-ending move"
    fresh, move_number = jax.jit(lambda key: new_games(key, game, num_games=512, opening_moves=8))(
        jax.random.key(1))
    np.testing.assert_array_equal(move_number, on_board(fresh))
    np.testing.assert_array_equal(fresh.current_player, move_number % 2)
