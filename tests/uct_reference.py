"""The UCT player as azjax wrote it first, with mctx's generic `mctx.search` (kept as a reference for
`azjax.uct.uct_analysis`, which does the same search with a backup whose cost does not grow with the tree).

Under `vmap`, mctx's backup is a `while_loop` whose every step selects between the old and the new tree arrays
(B x num_simulations x A each), so a simulation costs more as the tree grows; the two implementations make the same
choices by the same rules (UCB1 with every legal move tried once first, one node added per simulation valued by one
random rollout, the most visited move played), with other random numbers.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx

from azjax.bots import Analysis, reward_of, sample_uniform
from azjax.games import Game, State
from azjax.uct import UCT_EXPLORATION, rollout_values


def _uct_recurrent_fn(
    params: None, key: jax.Array, action: jax.Array, states: State, *, game: Game
) -> tuple[mctx.RecurrentFnOutput, State]:
    """Steps the game; the new node's value is one random rollout, for the player to move there."""
    del params
    mover = states.current_player
    next_states = jax.vmap(game.step)(states, action)
    terminal = next_states.terminated
    # Values are for the player to move, so they flip sign when the turn passes (and not when it stays).
    same_mover = next_states.current_player == mover
    output = mctx.RecurrentFnOutput(
        reward=reward_of(next_states, mover),
        discount=jnp.where(terminal, 0.0, jnp.where(same_mover, 1.0, -1.0)),
        prior_logits=jnp.zeros(next_states.legal_action_mask.shape, jnp.float32),
        value=jnp.where(terminal, 0.0, rollout_values(key, game, next_states)),
    )
    return output, next_states


def _ucb1_action(
    key: jax.Array, tree: mctx.Tree, node_index: jax.Array, depth: jax.Array | int, *, exploration: float
) -> jax.Array:
    """UCB1 at one node of an unbatched tree: every legal move once (in random order), then the largest
    Q + c * sqrt(ln N / n). The legal moves come from the node's own game state (the tree's embedding)."""
    del depth
    legal = tree.embeddings.legal_action_mask[node_index]  # [A]
    visits = tree.children_visits[node_index].astype(jnp.float32)  # [A]
    q = tree.qvalues(node_index)  # [A], for the player to move at the node
    parent_visits = jnp.maximum(jnp.sum(visits), 1.0)
    ucb = q + exploration * jnp.sqrt(jnp.log(parent_visits) / jnp.maximum(visits, 1.0))
    noise = jax.random.uniform(key, visits.shape)
    score = jnp.where(visits > 0, ucb + 1e-6 * noise, 1e6 + noise)
    return jnp.argmax(jnp.where(legal, score, -jnp.inf)).astype(jnp.int32)


def mctx_uct_analysis(
    key: jax.Array, states: State, *, game: Game, num_simulations: int, exploration: float = UCT_EXPLORATION
) -> Analysis:
    """Plain UCT (Kocsis and Szepesvari 2006): UCB1 selection, one node added per simulation, valued by one
    uniformly random rollout; the move played is the most visited at the root (ties broken at random).

    Written with mctx's generic `mctx.search` and our own UCB1 selection (mctx's policies are PUCT or Gumbel,
    which need a prior); the rollout runs inside the recurrent function. Jittable and batched over B. A simulation
    costs more as the tree grows: mctx's backup is a `while_loop` under `vmap`, and each of its steps selects
    between old and new tree arrays of size B x num_simulations x A (jax-ml/jax#8192, google-deepmind/mctx#107):
    experiments/benchmarks/results/bench_uct-cpu-2026-11-27.txt (Connect Four, B = 100: 35 us a simulation and position
    at 200 simulations, 172 us at 1600; azjax's own search 7.6 and 11.6 us).
    `policy` is the root's visit shares, `value` the mean of the root's rollouts, `action_values` the root's
    Q-values (NaN for unvisited moves).
    """
    root_key, search_key, tie_key = jax.random.split(key, 3)
    legal = states.legal_action_mask
    root = mctx.RootFnOutput(
        prior_logits=jnp.zeros(legal.shape, jnp.float32),
        value=jnp.where(states.terminated, 0.0, rollout_values(root_key, game, states)),
        embedding=states,
    )
    select = functools.partial(_ucb1_action, exploration=exploration)
    tree = mctx.search(
        params=None,
        rng_key=search_key,
        root=root,
        recurrent_fn=functools.partial(_uct_recurrent_fn, game=game),
        root_action_selection_fn=lambda k, t, i: select(k, t, i, 0),
        interior_action_selection_fn=select,
        num_simulations=num_simulations,
        max_depth=game.max_length,
        invalid_actions=~legal,
    )
    summary = tree.summary()
    visits = summary.visit_counts  # [B, A]
    most = legal & (visits == jnp.max(jnp.where(legal, visits, -1.0), axis=-1, keepdims=True))
    return Analysis(
        action=sample_uniform(tie_key, most),
        policy=visits / jnp.maximum(visits.sum(-1, keepdims=True), 1.0),
        value=summary.value,
        action_values=jnp.where(legal & (visits > 0), summary.qvalues, jnp.nan),
    )


