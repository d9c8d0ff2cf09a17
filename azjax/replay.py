"""The on-device replay buffer: a fixed-capacity ring buffer pytree with add and sample.

Sampling applies a random board symmetry of the game to each position (observation and policy target together),
so the network sees every orientation of what self-play produced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games import Game


@struct.dataclass
class Batch:
    """Training positions; every array is [N, ...]."""

    observation: jax.Array  # [N, *obs] float32, from the side to move
    policy_target: jax.Array  # [N, A] float32
    value_target: jax.Array  # [N] float32, the game's outcome for the player to move


@struct.dataclass
class ReplayBuffer:
    """A ring buffer of `capacity` positions; the oldest are overwritten first."""

    data: Batch  # [capacity, ...]
    next_index: jax.Array  # [] int32, where the next position goes
    size: jax.Array  # [] int32, positions held (<= capacity)

    @property
    def capacity(self) -> int:
        return self.data.value_target.shape[0]


def init_replay(game: Game, capacity: int) -> ReplayBuffer:
    """An empty buffer for `game`'s observations and actions."""
    data = Batch(
        observation=jnp.zeros((capacity, *game.observation_shape), jnp.float32),
        policy_target=jnp.zeros((capacity, game.num_actions), jnp.float32),
        value_target=jnp.zeros((capacity,), jnp.float32),
    )
    return ReplayBuffer(data=data, next_index=jnp.int32(0), size=jnp.int32(0))


def add(buffer: ReplayBuffer, items: Batch, valid: jax.Array) -> ReplayBuffer:
    """Appends the `valid` rows of `items` ([M, ...], valid bool [M]) in order, overwriting the oldest.

    Invalid rows are skipped without a host round-trip: valid rows get consecutive ring positions, invalid rows
    an out-of-range index that the scatter drops. If more than `capacity` rows are valid, the last ones win.
    """
    capacity = buffer.capacity
    num_valid = jnp.sum(valid, dtype=jnp.int32)
    rank = jnp.cumsum(valid, dtype=jnp.int32) - 1
    # Only the last `capacity` valid rows can survive; dropping the others keeps the scatter free of collisions.
    keep = valid & (rank >= num_valid - capacity)
    index = jnp.where(keep, (buffer.next_index + rank) % capacity, capacity)
    data = jax.tree.map(lambda old, new: old.at[index].set(new, mode="drop"), buffer.data, items)
    return ReplayBuffer(
        data=data,
        next_index=(buffer.next_index + num_valid) % capacity,
        size=jnp.minimum(buffer.size + num_valid, capacity),
    )


def sample(key: jax.Array, buffer: ReplayBuffer, batch_size: int, game: Game, *, augment: bool = True) -> Batch:
    """`batch_size` positions drawn uniformly (with replacement) from the filled part of the buffer.

    With `augment`, each position is transformed by one of the game's symmetries or the identity, uniformly.
    Sampling from an empty buffer returns zeros; callers train only once positions were added.
    """
    index_key, symmetry_key = jax.random.split(key)
    index = jax.random.randint(index_key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    batch = jax.tree.map(lambda x: x[index], buffer.data)
    if augment and game.symmetries:
        batch = augment_batch(symmetry_key, batch, game)
    return batch


def augment_batch(key: jax.Array, batch: Batch, game: Game) -> Batch:
    """Applies to each position a uniformly chosen element of {identity} + `game.symmetries`."""
    num_choices = len(game.symmetries) + 1
    choice = jax.random.randint(key, (batch.value_target.shape[0],), 0, num_choices)
    transforms = [lambda obs: obs] + [sym.transform for sym in game.symmetries]
    observation = jax.vmap(lambda c, obs: jax.lax.switch(c, transforms, obs))(choice, batch.observation)
    identity = tuple(range(game.num_actions))
    action_index = jnp.asarray(np.array([identity] + [sym.action_index for sym in game.symmetries]))
    policy_target = jnp.take_along_axis(batch.policy_target, action_index[choice], axis=-1)
    return batch.replace(observation=observation, policy_target=policy_target)
