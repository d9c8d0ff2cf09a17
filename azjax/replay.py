"""The on-device replay buffer: a fixed-capacity ring buffer pytree with add, settle and sample.

A position's value target is for its player to move: its game's outcome (+1 win, 0 draw, -1 loss) or, with
`TrainConfig.value_target_mix` m > 0 (the CPU presets), (1 - m) x that outcome + m x the search's value of the move
played there (with `TrainConfig.value_target_lambda`, the lambda-return of the search values from there on).
Self-play (`selfplay.store_positions`) stores a position either once its game has ended, ready, or, with
`SelfPlayConfig.keep_unfinished`, as it is played: it then waits in the buffer, not ready, until `settle` writes its
value target. Only ready positions are sampled. Sampling applies a random board symmetry of the game
to each position (observation and policy target together), so the network sees every orientation of what
self-play produced.

For Reanalyse (`TrainConfig.reanalyse_positions`), the buffer also keeps what searching a position again needs
(`Replayable`: its game state, move number and game's outcome): `draw_ready` picks positions to search again and
`refresh` writes the new search's targets back (`training.reanalyse`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games import Game, State


class Batch(struct.PyTreeNode):
    """Training positions; every array is [N, ...]."""

    observation: jax.Array
    """[N, *obs] float32, from the side to move."""
    policy_target: jax.Array
    """[N, A] float32, the search's policy at the position."""
    value_target: jax.Array
    """[N] float32, for the player to move: the game's outcome, or with train.value_target_mix m > 0, (1 - m) x the
    outcome + m x the search's value of the move played (see the module docstring)."""
    reply_target: jax.Array | None = None
    """With train.reply_policy_weight > 0: [N, A] float32, the policy target of the position that followed (the
    opponent's reply; zeros where there is none: the game's last move, or a fast search's); else None."""
    surprise: jax.Array | None = None
    """With train.policy_surprise_weight > 0: [N] float32, KL(policy target || the network's prior) when the position
    was played (`selfplay.policy_surprise`), which weights how often it is sampled; else None (and None in the
    batches `sample` draws)."""
    outcome: jax.Array | None = None
    """With network.value_head "wdl": [N] float32, the game's outcome for the player to move (+1 win, 0 draw, -1 loss),
    unblended, from which and `value_target` the loss rebuilds the win/draw/loss target (`wdl_target`); else None."""


class Replayable(struct.PyTreeNode):
    """What Reanalyse keeps of each position to search it again; every array is [N, ...]."""

    state: State  # [N] the game states
    move_number: jax.Array  # [N] int32, moves played in the position's game before it
    outcome: jax.Array  # [N] float32, its game's outcome for its player to move (+1 win, 0 draw, -1 loss), unblended;
    #   meaningless until the position is ready


class ReplayBuffer(struct.PyTreeNode):
    """A ring buffer of `capacity` positions; the oldest are overwritten first."""

    data: Batch
    """The positions, every array [capacity, ...]."""
    player: jax.Array
    """[capacity] int32, the player to move at each position (whose side its value target takes)."""
    ready: jax.Array
    """[capacity] bool, the position's value target is known (its game ended); only these are sampled."""
    next_index: jax.Array
    """[] int32, where the next position goes."""
    size: jax.Array
    """[] int32, rows written so far, capped at capacity: the positions held, ready or not. The library never reads it
    (sampling and the "replay_size" metric use `num_ready`; tests do); it stays as part of the checkpoint format."""
    replayable: Replayable | None = None
    """With Reanalyse (init_replay(..., state_like=...)): [capacity] what searching each position again needs; else
    None."""

    @property
    def capacity(self) -> int:
        return self.data.value_target.shape[0]

    @property
    def num_ready(self) -> jax.Array:
        """[] int32, the positions that can be sampled."""
        return jnp.sum(self.ready, dtype=jnp.int32)


def init_replay(game: Game, capacity: int, *, reply_targets: bool = False, surprise: bool = False,
                outcomes: bool = False, state_like: State | None = None) -> ReplayBuffer:
    """An empty buffer for `game`'s observations and actions; with `reply_targets`, room for each position's
    opponent-reply policy target too (`Batch.reply_target`: another [capacity, A] floats), with `surprise` for
    its policy surprise (`Batch.surprise`: [capacity] floats), with `outcomes` for its game's unblended outcome
    (`Batch.outcome`: [capacity] floats, for a win/draw/loss value head), and with `state_like` (one unbatched game
    state) for
    what Reanalyse needs of each position (`ReplayBuffer.replayable`: its state, move number and outcome)."""
    data = Batch(
        observation=jnp.zeros((capacity, *game.observation_shape), jnp.float32),
        policy_target=jnp.zeros((capacity, game.num_actions), jnp.float32),
        value_target=jnp.zeros((capacity,), jnp.float32),
        reply_target=jnp.zeros((capacity, game.num_actions), jnp.float32) if reply_targets else None,
        surprise=jnp.zeros((capacity,), jnp.float32) if surprise else None,
        outcome=jnp.zeros((capacity,), jnp.float32) if outcomes else None,
    )
    replayable = None
    if state_like is not None:
        replayable = Replayable(state=jax.tree.map(lambda x: jnp.broadcast_to(x, (capacity, *x.shape)), state_like),
                                move_number=jnp.zeros((capacity,), jnp.int32),
                                outcome=jnp.zeros((capacity,), jnp.float32))
    return ReplayBuffer(data=data, player=jnp.zeros(capacity, jnp.int32), ready=jnp.zeros(capacity, bool),
                        next_index=jnp.int32(0), size=jnp.int32(0), replayable=replayable)


def add(
    buffer: ReplayBuffer, items: Batch, valid: jax.Array, *, player: jax.Array | None = None,
    ready: jax.Array | None = None, replayable: Replayable | None = None,
) -> ReplayBuffer:
    """Appends the `valid` rows of `items` ([M, ...], valid bool [M]) in order, overwriting the oldest.

    `player` (int32 [M], default 0) is each row's player to move; `ready` (bool [M], default all) says which rows
    already hold their value target; the others wait for `settle`. A buffer made with `state_like` (Reanalyse)
    needs each row's `replayable` ([M]; the outcome of the rows not ready is written by `settle`).

    Invalid rows are skipped without a host round-trip: valid rows get consecutive ring positions, invalid rows
    an out-of-range index that the scatter drops. If more than `capacity` rows are valid, the last ones win.
    """
    capacity = buffer.capacity
    num_valid = jnp.sum(valid, dtype=jnp.int32)
    rank = jnp.cumsum(valid, dtype=jnp.int32) - 1
    # Only the last `capacity` valid rows can survive; dropping the others keeps the scatter free of collisions.
    keep = valid & (rank >= num_valid - capacity)
    index = jnp.where(keep, (buffer.next_index + rank) % capacity, capacity)
    player = jnp.zeros(valid.shape, jnp.int32) if player is None else player.astype(jnp.int32)
    ready = jnp.ones(valid.shape, bool) if ready is None else ready
    if (buffer.replayable is None) != (replayable is None):
        raise ValueError("a buffer made with state_like takes each row's `replayable`, and only such a buffer does")
    data, player, ready, replayable = jax.tree.map(
        lambda old, new: old.at[index].set(new, mode="drop"),
        (buffer.data, buffer.player, buffer.ready, buffer.replayable), (items, player, ready, replayable),
    )
    return ReplayBuffer(
        data=data,
        player=player,
        ready=ready,
        next_index=(buffer.next_index + num_valid) % capacity,
        size=jnp.minimum(buffer.size + num_valid, capacity),
        replayable=replayable,
    )


def blend(outcome: jax.Array, search_share: jax.Array, mix: float) -> jax.Array:
    """A value target, for the position's player to move: (1 - mix) x its game's outcome + mix x the search's share
    (`TrainConfig.value_target_mix`); the outcome alone with mix 0."""
    return (1.0 - mix) * outcome + mix * search_share if mix else outcome


def wdl_target(value_target: jax.Array, outcome: jax.Array, mix: float) -> jax.Array:
    """The win/draw/loss target float32 [N, 3] (for the player to move) of positions whose value target is
    `value_target` ([N], `blend`'s with this `mix`) and whose game's outcome is `outcome` ([N], unblended):
    (1 - mix) x the outcome as one-hot + mix x the search's share s (read back from the blend) as the distribution
    with mean s and nothing on the opposite result (s > 0: win s, draw 1 - s). Its P(win) - P(loss) is the value
    target."""
    one_hot = jnp.stack([outcome > 0.5, jnp.abs(outcome) <= 0.5, outcome < -0.5], axis=-1).astype(jnp.float32)
    if not mix:
        return one_hot
    share = jnp.clip((value_target - (1.0 - mix) * outcome) / mix, -1.0, 1.0)
    spread = jnp.stack([jnp.maximum(share, 0.0), 1.0 - jnp.abs(share), jnp.maximum(-share, 0.0)], axis=-1)
    return (1.0 - mix) * one_hot + mix * spread


def settle(buffer: ReplayBuffer, index: jax.Array, outcome: jax.Array, valid: jax.Array, *,
           mix: float = 0.0, search_share: jax.Array | None = None) -> ReplayBuffer:
    """Gives the positions at `index` (int32 [M], where `valid` bool [M]) their game's outcome `outcome`
    (float32 [M, 2], per player id: +1 win, 0 draw, -1 loss) as value target, from the side of each position's
    player to move, and makes them ready to be sampled (a buffer that keeps outcomes, `Batch.outcome`, takes the
    unblended one there too).

    With `mix` > 0 the target is (1 - mix) x outcome + mix x the value the position holds while it waits (the
    search's value of the move played there, for the same player: `selfplay.store_positions` puts it there), or
    with `search_share` (float32 [M], for each position's player to move) mix x that instead: the search values'
    lambda-returns with `TrainConfig.value_target_lambda`."""
    outcome_target = jnp.take_along_axis(outcome, buffer.player[index][:, None], axis=1)[:, 0]
    share = buffer.data.value_target[index] if search_share is None else search_share
    target = blend(outcome_target, share, mix)
    index = jnp.where(valid, index, buffer.capacity)  # out of range: dropped
    replayable = buffer.replayable
    if replayable is not None:
        replayable = replayable.replace(outcome=replayable.outcome.at[index].set(outcome_target, mode="drop"))
    data = buffer.data.replace(value_target=buffer.data.value_target.at[index].set(target, mode="drop"))
    if data.outcome is not None:
        data = data.replace(outcome=data.outcome.at[index].set(outcome_target, mode="drop"))
    return buffer.replace(
        data=data,
        ready=buffer.ready.at[index].set(True, mode="drop"),
        replayable=replayable,
    )


def draw_ready(key: jax.Array, buffer: ReplayBuffer, count: int, *, max_moves: int | None = None
               ) -> tuple[jax.Array, jax.Array]:
    """`count` distinct rows drawn uniformly from the ready positions (Reanalyse's), with `max_moves` from those
    with at most that many moves played in their game (a buffer made with `state_like`). Returns the rows (int32
    [count]) and whether each is such a position (bool [count]): all of them once `count` are; before that the draw
    fills up with rows that are not, which callers leave alone."""
    eligible = buffer.ready
    if max_moves is not None:
        if buffer.replayable is None:
            raise ValueError("max_moves needs a buffer made with init_replay(..., state_like=...)")
        eligible = eligible & (buffer.replayable.move_number <= max_moves)
    rows = jax.random.choice(key, buffer.capacity, (count,), replace=False, p=eligible.astype(jnp.float32))
    # choice normalises p; with no row eligible at all its p is NaN and the rows arbitrary: `valid` says so.
    rows = jnp.clip(rows, 0, buffer.capacity - 1).astype(jnp.int32)
    return rows, eligible[rows]


def refresh(buffer: ReplayBuffer, rows: jax.Array, valid: jax.Array, policy_target: jax.Array,
            search_value: jax.Array, *, mix: float = 0.0, surprise: jax.Array | None = None) -> ReplayBuffer:
    """Reanalyse's write-back: the positions at `rows` (int32 [M], where `valid` bool [M]; a buffer made with
    `state_like`) take a new search's `policy_target` ([M, A]) and, with `mix` > 0, the value target (1 - mix) x
    their game's outcome + mix x `search_value` ([M], the new search's value of its move, for the position's player
    to move); with `mix` 0 the value target stays the outcome. A buffer that keeps policy surprise takes `surprise`
    ([M], the new search's) too. Other rows are untouched."""
    if buffer.replayable is None:
        raise ValueError("refresh needs a buffer made with init_replay(..., state_like=...)")
    index = jnp.where(valid, rows, buffer.capacity)  # out of range: dropped
    value_target = blend(buffer.replayable.outcome[rows], search_value, mix)
    data = buffer.data.replace(
        policy_target=buffer.data.policy_target.at[index].set(policy_target, mode="drop"),
        value_target=buffer.data.value_target.at[index].set(value_target, mode="drop"),
    )
    if buffer.data.surprise is not None:
        if surprise is None:
            raise ValueError("this buffer keeps policy surprise: refresh needs the new search's `surprise`")
        data = data.replace(surprise=buffer.data.surprise.at[index].set(surprise, mode="drop"))
    return buffer.replace(data=data)


def sample(key: jax.Array, buffer: ReplayBuffer, batch_size: int, game: Game, *, augment: bool = True,
           surprise_weight: float = 0.0) -> Batch:
    """`batch_size` positions drawn (with replacement) from the ready ones: uniformly, or with `surprise_weight`
    w > 0 (a buffer made with `surprise=True`) as KataGo weights them by policy surprise: a ready position i is
    drawn with probability proportional to (1 - w) + w x surprise_i / (the mean surprise of the ready positions),
    so a share w of the draws goes by surprise and 1 - w uniformly.

    With `augment`, each position is transformed by one of the game's symmetries or the identity, uniformly.
    With no position ready the rows are meaningless: callers train only once enough are (`num_ready`).
    """
    index_key, symmetry_key = jax.random.split(key)
    if surprise_weight:
        if buffer.data.surprise is None:
            raise ValueError("surprise_weight > 0 needs a buffer made with init_replay(..., surprise=True)")
        ready = buffer.ready.astype(jnp.float32)
        mean = jnp.sum(ready * buffer.data.surprise) / jnp.maximum(buffer.num_ready, 1)
        relative = buffer.data.surprise / jnp.maximum(mean, 1e-6)
        weight = ready * ((1.0 - surprise_weight) + surprise_weight * relative)
        index = jax.random.choice(index_key, buffer.capacity, (batch_size,), p=weight)  # choice normalises p
    else:
        ready_before = jnp.cumsum(buffer.ready, dtype=jnp.int32)  # the n-th ready position: where this reaches n
        rank = jax.random.randint(index_key, (batch_size,), 1, jnp.maximum(buffer.num_ready, 1) + 1)
        index = jnp.minimum(jnp.searchsorted(ready_before, rank), buffer.capacity - 1)
    # The surprise only chose the rows: the SGD batch leaves it out.
    batch = jax.tree.map(lambda x: x[index], buffer.data.replace(surprise=None))
    if augment and game.symmetries:
        batch = augment_batch(symmetry_key, batch, game)
    return batch


def augment_batch(key: jax.Array, batch: Batch, game: Game) -> Batch:
    """Applies to each position a uniformly chosen element of {identity} + `game.symmetries` (to its observation
    and its policy targets alike)."""
    num_choices = len(game.symmetries) + 1
    choice = jax.random.randint(key, (batch.value_target.shape[0],), 0, num_choices)
    transforms = [lambda obs: obs] + [sym.transform for sym in game.symmetries]
    observation = jax.vmap(lambda c, obs: jax.lax.switch(c, transforms, obs))(choice, batch.observation)
    identity = tuple(range(game.num_actions))
    action_index = jnp.asarray(np.array([identity] + [sym.action_index for sym in game.symmetries]))
    permute = lambda policy: jnp.take_along_axis(policy, action_index[choice], axis=-1)  # noqa: E731
    reply_target = None if batch.reply_target is None else permute(batch.reply_target)
    return batch.replace(observation=observation, policy_target=permute(batch.policy_target),
                         reply_target=reply_target)
