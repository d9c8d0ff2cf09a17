"""Looking one move ahead in bounded memory: a function of every legal move's successor, for a batch of states.

Stepping every action of every state at once holds B * A states, and looking two moves ahead that way holds
B * A * A: for Brandub (A = 1176) that is ~3 GB per position, more than any machine has for a batch. Here the
legal moves of each state are taken `chunk` at a time in a `lax.while_loop` that runs only as long as some state
of the batch has legal moves left, so the peak is B * chunk successor states (B * chunk^2 two moves ahead) and
the work is B times the largest number of legal moves in the batch (not A), rounded up to whole chunks.
Jittable; batched over B explicitly.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from azjax.games.base import Game, State

# Moves stepped at once per state: larger chunks waste steps rounding each state's moves up to whole chunks and
# grow the peak memory (measured on Brandub:
# experiments/studies/presets/results/).
CHUNK = 8


def map_legal_moves(
    game: Game,
    states: State,
    fn: Callable[[State, jax.Array], jax.Array],
    *,
    fill: float | bool,
    chunk: int | None = None,
) -> jax.Array:
    """`fn` of the state after each legal move of each state: [B, A], `fill` where a move is illegal.

    Args:
      game: the game.
      states: a batch of B states (terminal ones have no legal moves: their row is all `fill`).
      fn: (children [B, C], actions [B, C] int32) -> [B, C] values, where children[b, i] is the state after
        actions[b, i] in states[b]. Columns past a state's last legal move hold some other action's successor;
        their values are dropped.
      fill: the value of illegal moves; its type is the result's (bool, or a float for float32).
      chunk: the C moves per state stepped at once (default `CHUNK`, at most A); the peak is B * C states.
    Returns:
      [B, A]: fn's value for each legal move, `fill` elsewhere.
    """
    legal = states.legal_action_mask  # [B, A]
    num_states, num_actions = legal.shape
    chunk = min(chunk or CHUNK, num_actions)
    num_chunks = -(-num_actions // chunk)
    # Each row's legal actions first, in increasing order; padded to whole chunks.
    order = jnp.argsort(~legal, axis=-1, stable=True).astype(jnp.int32)
    order = jnp.pad(order, ((0, 0), (0, num_chunks * chunk - num_actions)))
    counts = jnp.sum(legal, axis=-1)  # [B]
    needed = -(-jnp.max(counts, initial=0) // chunk)  # chunks until every state's legal moves are done
    result = jnp.full((num_states, num_actions), fill)
    rows = jnp.arange(num_states)[:, None]
    step_each = jax.vmap(jax.vmap(game.step, in_axes=(None, 0)))  # states [B], actions [B, C] -> [B, C]

    def body(carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        index, result = carry
        actions = jax.lax.dynamic_slice_in_dim(order, index * chunk, chunk, axis=1)  # [B, C]
        real = index * chunk + jnp.arange(chunk) < counts[:, None]
        values = fn(step_each(states, actions), actions).astype(result.dtype)
        columns = jnp.where(real, actions, num_actions)  # out of bounds: dropped
        return index + 1, result.at[rows, columns].set(values, mode="drop")

    return jax.lax.while_loop(lambda carry: carry[0] < needed, body, (jnp.int32(0), result))[1]


def flatten(states: State) -> State:
    """A [B, C] batch of states (`map_legal_moves`'s children) as a flat batch of B * C, row-major."""
    batch = states.current_player.shape
    return jax.tree.map(lambda x: x.reshape(math.prod(batch), *x.shape[len(batch):]), states)


def ending_moves(game: Game, states: State, *, chunk: int | None = None) -> jax.Array:
    """bool [B, A]: the legal moves after which the game is over (won, lost or drawn)."""
    return map_legal_moves(game, states, lambda children, actions: children.terminated, fill=False, chunk=chunk)
