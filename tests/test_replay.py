"""The replay ring buffer: masked in-order insertion, wrap-around, sampling, and symmetry augmentation.

Rows are tagged with an id (the value target, and every observation entry) so that where each row went can be
read back.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import games, replay
from azjax.replay import Batch


@pytest.fixture(scope="module")
def game() -> games.Game:
    return games.make("tic_tac_toe")


def tagged_rows(ids) -> Batch:
    """Rows whose observation entries and value target all equal the row's id; the policy is one-hot at id % 9."""
    ids = np.asarray(ids, np.float32)
    return Batch(
        observation=jnp.asarray(np.broadcast_to(ids[:, None, None, None], (len(ids), 3, 3, 2)).copy()),
        policy_target=jax.nn.one_hot(ids.astype(int) % 9, 9),
        value_target=jnp.asarray(ids),
    )


# One compilation of `add` (and of `sample`) for all shapes used here; the buffer's capacity is a static shape.
add = jax.jit(replay.add)


def held_ids(buffer: replay.ReplayBuffer) -> np.ndarray:
    return np.asarray(buffer.data.value_target)


def oldest_first(buffer: replay.ReplayBuffer) -> list[float]:
    """The held ids from the oldest to the newest (a full buffer's oldest row is at next_index)."""
    ids = held_ids(buffer)
    size, start = int(buffer.size), int(buffer.next_index)
    if size < buffer.capacity:
        return ids[:size].tolist()
    return np.roll(ids, -start).tolist()


def test_empty_buffer(game):
    buffer = replay.init_replay(game, 8)
    assert buffer.capacity == 8 and int(buffer.size) == 0 and int(buffer.next_index) == 0
    assert buffer.data.observation.shape == (8, 3, 3, 2) and buffer.data.policy_target.shape == (8, 9)


def test_add_writes_only_valid_rows_in_order(game):
    buffer = replay.init_replay(game, 8)
    buffer = add(buffer, tagged_rows([1, 2, 3, 4, 5, 6]), jnp.array([1, 0, 1, 1, 0, 1], bool))
    assert int(buffer.size) == 4 and int(buffer.next_index) == 4
    np.testing.assert_array_equal(held_ids(buffer), [1, 3, 4, 6, 0, 0, 0, 0])
    # Every field of a row moves together.
    np.testing.assert_array_equal(buffer.data.observation[:4, 1, 2, 1], [1, 3, 4, 6])
    np.testing.assert_array_equal(np.argmax(buffer.data.policy_target[:4], axis=-1), [1, 3, 4, 6])
    np.testing.assert_array_equal(buffer.data.policy_target[4:], 0.0)


def test_add_with_no_valid_rows_changes_nothing(game):
    buffer = add(replay.init_replay(game, 4), tagged_rows([1, 2]), jnp.array([True, True]))
    after = add(buffer, tagged_rows([7, 8, 9]), jnp.zeros(3, bool))
    assert int(after.size) == 2 and int(after.next_index) == 2
    np.testing.assert_array_equal(held_ids(after), held_ids(buffer))


def test_add_wraps_around_and_overwrites_the_oldest(game):
    buffer = replay.init_replay(game, 5)
    buffer = add(buffer, tagged_rows([1, 2, 3]), jnp.ones(3, bool))
    buffer = add(buffer, tagged_rows([4, 5, 6, 7]), jnp.ones(4, bool))
    assert int(buffer.size) == 5 and int(buffer.next_index) == 2
    np.testing.assert_array_equal(held_ids(buffer), [6, 7, 3, 4, 5])
    assert oldest_first(buffer) == [3, 4, 5, 6, 7]


def test_add_more_valid_rows_than_capacity_keeps_the_newest(game):
    buffer = add(replay.init_replay(game, 4), tagged_rows([1]), jnp.ones(1, bool))
    ids = [10, 11, 12, 13, 14, 15, 16, 17, 18]
    valid = np.array([1, 1, 0, 1, 1, 1, 0, 1, 1], bool)  # 7 valid rows for 4 places
    buffer = add(buffer, tagged_rows(ids), jnp.asarray(valid))
    newest = [i for i, v in zip(ids, valid, strict=True) if v][-4:]
    assert int(buffer.size) == 4 and int(buffer.next_index) == (1 + 7) % 4
    assert oldest_first(buffer) == newest
    assert sorted(held_ids(buffer).tolist()) == sorted(newest)


def test_many_small_adds_match_a_python_ring(game):
    capacity = 7
    buffer = replay.init_replay(game, capacity)
    python_ring: list[float] = []
    rng = np.random.default_rng(0)
    next_id = 1
    for _ in range(6):
        valid = rng.random(5) < 0.6
        ids = list(range(next_id, next_id + 5))
        next_id += 5
        buffer = add(buffer, tagged_rows(ids), jnp.asarray(valid))
        python_ring = (python_ring + [i for i, v in zip(ids, valid, strict=True) if v])[-capacity:]
        assert int(buffer.size) == len(python_ring)
        assert oldest_first(buffer) == python_ring


@functools.partial(jax.jit, static_argnames=("batch_size", "game", "augment"))
def sample(key, buffer, *, batch_size, game, augment):
    return replay.sample(key, buffer, batch_size, game, augment=augment)


@pytest.mark.parametrize("augment", [False, True])
def test_sample_returns_only_filled_rows(game, augment):
    buffer = add(replay.init_replay(game, 64), tagged_rows([1, 2, 3, 4, 5]), jnp.ones(5, bool))
    batch = sample(jax.random.key(0), buffer, batch_size=256, game=game, augment=augment)
    values = np.asarray(batch.value_target)
    assert batch.observation.shape == (256, 3, 3, 2) and batch.policy_target.shape == (256, 9)
    assert set(values.tolist()) == {1, 2, 3, 4, 5}  # all filled rows, and nothing else (no empty row's 0)
    # Observations stay with their rows (a constant board is unchanged by any symmetry).
    np.testing.assert_array_equal(batch.observation, np.broadcast_to(values[:, None, None, None], (256, 3, 3, 2)))
    np.testing.assert_allclose(np.asarray(batch.policy_target).sum(axis=-1), 1.0)


def test_sample_after_wrap_around_sees_only_the_held_rows(game):
    buffer = add(replay.init_replay(game, 4), tagged_rows(list(range(1, 11))), jnp.ones(10, bool))
    batch = sample(jax.random.key(1), buffer, batch_size=256, game=game, augment=False)
    assert set(np.asarray(batch.value_target).tolist()) == {7, 8, 9, 10}


# --------------------------------------------------------------------------------------------------------------
# Augmentation: the same symmetry for observation and policy


def marked_positions(height: int, width: int, num_actions: int, action_of_cell) -> tuple[Batch, np.ndarray]:
    """One position per (cell, other cell): own stone on `cell`, opponent stone on `other`; the policy puts 0.7 on
    the action of `cell` and 0.3 on the action of `other` (where they differ). Returns the batch and the cells."""
    cells = [(c, o) for c in range(height * width) for o in range(height * width) if o != c]
    cells = [pair for pair in cells if action_of_cell(pair[0]) != action_of_cell(pair[1])]
    observation = np.zeros((len(cells), height, width, 2), np.float32)
    policy = np.zeros((len(cells), num_actions), np.float32)
    for i, (c, o) in enumerate(cells):
        observation[i, c // width, c % width, 0] = 1
        observation[i, o // width, o % width, 1] = 1
        policy[i, action_of_cell(c)] = 0.7
        policy[i, action_of_cell(o)] = 0.3
    batch = Batch(jnp.asarray(observation), jnp.asarray(policy), jnp.arange(len(cells), dtype=jnp.float32))
    return batch, np.asarray(cells)


def test_surprise_weighted_sampling_follows_katago_weights(game):
    """With surprise_weight w, a ready row i is drawn with probability proportional to (1 - w) + w x its surprise
    over the ready rows' mean surprise; rows still waiting for their outcome are never drawn, whatever their
    surprise. Rows: ids 1-4 ready with surprise 0, 1, 3, 0 (mean 1), id 5 waiting with surprise 50."""
    rows = tagged_rows([1, 2, 3, 4, 5]).replace(surprise=jnp.array([0.0, 1.0, 3.0, 0.0, 50.0]))
    ready = jnp.array([True, True, True, True, False])
    buffer = add(replay.init_replay(game, 8, surprise=True), rows, jnp.ones(5, bool), ready=ready)
    draws = 40_000
    batch = jax.jit(functools.partial(replay.sample, batch_size=draws, game=game, augment=False,
                                      surprise_weight=0.5))(jax.random.key(3), buffer)
    counts = np.bincount(np.asarray(batch.value_target).astype(int), minlength=6)
    expected = np.array([0.5, 1.0, 2.0, 0.5]) / 4.0  # 0.5 + 0.5 x (0, 1, 3, 0)
    assert counts[0] == 0 and counts[5] == 0  # no empty row, no waiting row
    np.testing.assert_allclose(counts[1:5] / draws, expected, atol=0.01)
    assert batch.surprise is None  # it chose the rows; the SGD batch does not carry it
    # The same buffer with w = 0 draws uniformly.
    uniform = sample(jax.random.key(3), buffer, batch_size=draws, game=game, augment=False)
    np.testing.assert_allclose(np.bincount(np.asarray(uniform.value_target).astype(int), minlength=6)[1:5] / draws,
                               0.25, atol=0.01)
    with pytest.raises(ValueError, match="surprise=True"):
        replay.sample(jax.random.key(0), add(replay.init_replay(game, 8), tagged_rows([1]), jnp.ones(1, bool)), 4,
                      game, surprise_weight=0.5)


def test_augment_moves_the_reply_target_with_the_policy_target():
    """The opponent-reply target is a policy over the same actions: one symmetry moves both. Rows whose reply
    target equals their policy target keep them equal; the targets are not all symmetric, so a missed permutation
    would show."""
    game = games.make("connect_four")
    rng = np.random.default_rng(0)
    policy = jnp.asarray(rng.dirichlet(np.ones(game.num_actions), 64).astype(np.float32))
    batch = Batch(jnp.zeros((64, *game.observation_shape)), policy, jnp.zeros(64), reply_target=policy)
    out = jax.jit(replay.augment_batch, static_argnums=2)(jax.random.key(0), batch, game)
    np.testing.assert_array_equal(out.reply_target, out.policy_target)
    mirrored = np.all(np.asarray(out.policy_target) == np.asarray(policy)[:, ::-1], axis=-1)
    assert 0 < mirrored.sum() < 64  # some rows were mirrored, some not


@pytest.mark.parametrize(("game_name", "num_transforms"), [("tic_tac_toe", 8), ("connect_four", 2)])
def test_augment_applies_the_same_symmetry_to_observation_and_policy(game_name, num_transforms):
    game = games.make(game_name)
    height, width, _ = game.observation_shape
    action_of_cell = (lambda c: c) if game_name == "tic_tac_toe" else (lambda c: c % width)
    batch, cells = marked_positions(height, width, game.num_actions, action_of_cell)
    out = jax.jit(replay.augment_batch, static_argnums=2)(jax.random.key(0), batch, game)
    observation, policy = np.asarray(out.observation), np.asarray(out.policy_target)
    np.testing.assert_array_equal(out.value_target, batch.value_target)
    moved_own = observation[..., 0].reshape(len(cells), -1).argmax(-1)
    moved_other = observation[..., 1].reshape(len(cells), -1).argmax(-1)
    assert np.all(observation.sum(axis=(1, 2, 3)) == 2)  # a permutation of the board: still two stones
    rows = np.arange(len(cells))
    own_action = np.array([action_of_cell(c) for c in moved_own])
    other_action = np.array([action_of_cell(c) for c in moved_other])
    np.testing.assert_array_equal(policy.argmax(-1), own_action)  # the policy's peak sits on the moved stone
    np.testing.assert_allclose(policy[rows, own_action], 0.7)
    np.testing.assert_allclose(policy[rows, other_action], 0.3)
    np.testing.assert_allclose(policy.sum(-1), 1.0)
    # Each row was moved by one of the game's symmetries (or the identity), and all of them were drawn.
    cell_maps = {"identity": np.arange(height * width)}
    for symmetry in game.symmetries:
        boards = np.eye(height * width, dtype=np.float32).reshape(height * width, height, width)
        cell_maps[symmetry.name] = np.array([np.asarray(symmetry.transform(b)).argmax() for b in boards])
    used = set()
    for (own, other), own_to, other_to in zip(cells, moved_own, moved_other, strict=True):
        names = [n for n, m in cell_maps.items() if m[own] == own_to and m[other] == other_to]
        assert names, (own, other, own_to, other_to)
        if len(names) == 1:
            used.add(names[0])
    assert len(cell_maps) == num_transforms and used == set(cell_maps)


@pytest.mark.parametrize("mix", [0.0, 0.5, 0.8])
def test_the_wdl_target_is_a_distribution_whose_win_minus_loss_is_the_value_target(mix):
    """For the player to move: the game's outcome as one-hot, blended with the search's share spread over the win,
    draw and loss it lies between; P(win) - P(loss) gives back the blended value target."""
    rng = np.random.default_rng(0)
    outcome = rng.integers(-1, 2, 500).astype(np.float32)
    share = rng.uniform(-1, 1, 500).astype(np.float32)
    value_target = replay.blend(jnp.asarray(outcome), jnp.asarray(share), mix)
    target = np.asarray(replay.wdl_target(value_target, jnp.asarray(outcome), mix))
    assert target.shape == (500, 3) and np.all(target >= 0)
    np.testing.assert_allclose(target.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(target[:, 0] - target[:, 2], value_target, atol=1e-5)
    if not mix:
        np.testing.assert_array_equal(target, np.eye(3)[(1 - outcome).astype(int)])  # win, draw, loss
    else:  # a won game whose search said -0.5: mostly a win, the rest spread between draw and loss
        np.testing.assert_allclose(replay.wdl_target(jnp.asarray([(1 - mix) - 0.5 * mix]), jnp.asarray([1.0]), mix),
                                   [[(1 - mix), mix * 0.5, mix * 0.5]], atol=1e-6)
