"""UCT: plain Monte-Carlo tree search with uniformly random rollouts and no network, the "mcts:N" baseline.

    bot = uct_bot(game, 200)                              # "mcts:200": 200 simulations a move
    analysis = jax.jit(bot.analyse)(key, states)          # states [B] -> Analysis [B]

B trees are searched at once, each held as [B, nodes, ...] arrays (`_UctTree`) preallocated for one node per
simulation. Every value is for the player to move at its node. Imports the games and the agent protocol alone.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from flax import struct

from azjax.bots import Analysis, Bot, reward_of, sample_uniform
from azjax.games import Game, State

# UCB1's exploration constant c. UCB1's sqrt(2 ln N / n) is written for rewards in [0, 1]; our Q-values span
# [-1, 1], twice as wide, where its equivalent constant is 2 sqrt(2), so sqrt(2) explores half as much. It stays
# sqrt(2) because the recorded baselines (mcts:N) were measured with it.
UCT_EXPLORATION = math.sqrt(2.0)


class _Rollout(struct.PyTreeNode):
    states: State  # [B]
    returns: jax.Array  # [B, 2] float32, rewards summed per player id
    num_steps: jax.Array  # [] int32


def rollout_values(key: jax.Array, game: Game, states: State, *,
                   sample: Callable[[jax.Array, jax.Array], jax.Array] | None = None) -> jax.Array:
    """Plays uniformly random moves from each state to the end: float32 [B], the outcome for the player to move
    in each starting state (0 for a terminal one). A `lax.while_loop` that stops when every game has ended.
    `sample(key, legal [B, A]) -> moves [B]` draws the moves (default `bots.sample_uniform`)."""
    sample = sample or sample_uniform

    def unfinished(rollout: _Rollout) -> jax.Array:
        return jnp.any(~rollout.states.terminated) & (rollout.num_steps < game.max_length)

    def play(rollout: _Rollout) -> _Rollout:
        actions = sample(jax.random.fold_in(key, rollout.num_steps), rollout.states.legal_action_mask)
        states = jax.vmap(game.step)(rollout.states, actions)  # terminal states are absorbing and pay nothing
        return _Rollout(states, rollout.returns + states.rewards, rollout.num_steps + 1)

    start = _Rollout(states, jnp.zeros_like(states.rewards), jnp.int32(0))
    end = jax.lax.while_loop(unfinished, play, start)
    return jnp.take_along_axis(end.returns, states.current_player[:, None], axis=1)[:, 0]


class _UctTree(struct.PyTreeNode):
    """B search trees of up to N nodes each (node 0 the root); a node is a position reached by a move."""

    states: State  # [B, N]: each node's game state
    children: jax.Array  # [B, N, A] int32: the node a move leads to, -1 before it is expanded
    visits: jax.Array  # [B, N] float32
    value_sum: jax.Array  # [B, N] float32: the values backed up through the node, for its player to move
    reward: jax.Array  # [B, N] float32: what the move into the node paid the player who made it
    discount: jax.Array  # [B, N] float32: -1 where the turn passed with that move, +1 where it did not, 0 at the end


def _children_stats(tree: _UctTree, rows: jax.Array, node: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The visits [B, A] of each move's node from `node` [B] and its value Q [B, A] for the player to move at
    `node` (0 for a move not expanded)."""
    child = tree.children[rows, node]  # [B, A]
    index = jnp.maximum(child, 0)
    expanded = child >= 0
    visits = jnp.where(expanded, jnp.take_along_axis(tree.visits, index, axis=1), 0.0)
    value = jnp.take_along_axis(tree.value_sum, index, axis=1) / jnp.maximum(visits, 1.0)
    q = jnp.take_along_axis(tree.reward, index, axis=1) + jnp.take_along_axis(tree.discount, index, axis=1) * value
    return visits, jnp.where(expanded, q, 0.0)


def _ucb1_actions(key: jax.Array, tree: _UctTree, rows: jax.Array, node: jax.Array, exploration: float
                  ) -> jax.Array:
    """UCB1 at `node` [B] of each tree: every legal move once (in random order), then the largest
    Q + c * sqrt(ln N / n), N the visits of the node's moves; ties broken at random. Legal moves come from the
    node's own game state."""
    visits, q = _children_stats(tree, rows, node)
    legal = tree.states.legal_action_mask[rows, node]  # [B, A]
    parent_visits = jnp.maximum(jnp.sum(visits, axis=-1, keepdims=True), 1.0)
    ucb = q + exploration * jnp.sqrt(jnp.log(parent_visits) / jnp.maximum(visits, 1.0))
    noise = jax.random.uniform(key, visits.shape)
    score = jnp.where(visits > 0, ucb + 1e-6 * noise, 1e6 + noise)
    return jnp.argmax(jnp.where(legal, score, -jnp.inf), axis=-1).astype(jnp.int32)


class _Descent(struct.PyTreeNode):
    node: jax.Array  # [B] int32, where each descent stands
    depth: jax.Array  # [B] int32, its depth (the root's is 0)
    path: jax.Array  # [B, D] int32, the nodes from the root (entries beyond `depth` are stale)
    action: jax.Array  # [B] int32, the move chosen at `node`
    active: jax.Array  # [B] bool, still descending


def _simulate(key: jax.Array, tree: _UctTree, index: jax.Array, *, game: Game, exploration: float) -> _UctTree:
    """One simulation in each tree: descend by UCB1 to a move not yet expanded (or to a game's end), add its node
    (`index`, the same in every tree) valued by one random rollout, and back the value up the path."""
    select_key, rollout_key = jax.random.split(key)
    depth_limit = game.max_length + 2  # a path from the root meets a game's end within max_length moves
    leaf = _descend(select_key, tree, depth_limit=depth_limit, exploration=exploration)
    tree, path, length, value = _expand(rollout_key, tree, leaf, index, game=game)
    return _back_up(tree, path, length, value)


def _descend(key: jax.Array, tree: _UctTree, *, depth_limit: int, exploration: float) -> _Descent:
    """From each root, UCB1's move at every node until a move not yet expanded or a game's end: where each descent
    stopped, its path [B, depth_limit] and the move chosen there."""
    num_trees = tree.visits.shape[0]
    rows = jnp.arange(num_trees)

    def descending(descent: _Descent) -> jax.Array:
        return jnp.any(descent.active)

    def down(descent: _Descent) -> _Descent:
        at_end = tree.states.terminated[rows, descent.node]
        action = _ucb1_actions(jax.random.fold_in(key, jnp.max(descent.depth)), tree, rows, descent.node,
                               exploration)
        child = tree.children[rows, descent.node, action]
        moving = descent.active & ~at_end & (child >= 0)
        depth = descent.depth + moving
        path = descent.path.at[rows, jnp.where(moving, depth, depth_limit)].set(child, mode="drop")
        return _Descent(jnp.where(moving, child, descent.node), depth, path,
                        jnp.where(descent.active, action, descent.action), moving)

    start = _Descent(jnp.zeros(num_trees, jnp.int32), jnp.zeros(num_trees, jnp.int32),
                     jnp.zeros((num_trees, depth_limit), jnp.int32), jnp.zeros(num_trees, jnp.int32),
                     jnp.ones(num_trees, bool))
    return jax.lax.while_loop(descending, down, start)


def _expand(key: jax.Array, tree: _UctTree, leaf: _Descent, index: jax.Array, *, game: Game
            ) -> tuple[_UctTree, jax.Array, jax.Array, jax.Array]:
    """Adds the node of the move chosen at each leaf (`index`, the same in every tree) with its rollout's value,
    unless the leaf ended its game (it is revisited as it is). Returns the tree, the path [B, D] with the new node,
    its length [B] (the depth of the new node or the revisited end) and the value [B] to back up, for the player
    to move there (0 at a game's end)."""
    num_trees, num_nodes = tree.visits.shape
    rows = jnp.arange(num_trees)
    parent_states = jax.tree.map(lambda x: x[rows, leaf.node], tree.states)
    expand = ~parent_states.terminated
    mover = parent_states.current_player
    states = jax.vmap(game.step)(parent_states, leaf.action)
    ended = states.terminated
    value = jnp.where(ended | ~expand, 0.0, rollout_values(key, game, states))
    new = jnp.where(expand, index, num_nodes)  # out of range where nothing is added: dropped
    tree = tree.replace(
        states=jax.tree.map(lambda whole, x: whole.at[rows, new].set(x, mode="drop"), tree.states, states),
        children=tree.children.at[rows, jnp.where(expand, leaf.node, num_nodes), leaf.action].set(index, mode="drop"),
        reward=tree.reward.at[rows, new].set(reward_of(states, mover), mode="drop"),
        discount=tree.discount.at[rows, new].set(
            jnp.where(ended, 0.0, jnp.where(states.current_player == mover, 1.0, -1.0)), mode="drop"),
    )
    length = leaf.depth + expand
    depth_limit = leaf.path.shape[1]
    path = leaf.path.at[rows, jnp.where(expand, length, depth_limit)].set(index, mode="drop")
    return tree, path, length, value


def _back_up(tree: _UctTree, path: jax.Array, length: jax.Array, value: jax.Array) -> _UctTree:
    """Adds a visit and the value for its player to move to every node of each path [B, D] down to its leaf (depth
    `length` [B], whose value is `value` [B]).

    The value at depth k is reward + discount x the value at depth k + 1 (of the node below), from the leaf's
    value up; an associative scan composes those affine steps over the whole path at once."""
    num_trees, num_nodes = tree.visits.shape
    rows = jnp.arange(num_trees)
    depth_limit = path.shape[1]
    below = jnp.concatenate([path[:, 1:], path[:, :1]], axis=1)  # the node one step further down the path
    on_path = jnp.arange(depth_limit)[None, :] < length[:, None]  # [B, D]: the steps above the leaf
    scale = jnp.where(on_path, jnp.take_along_axis(tree.discount, below, axis=1), 1.0)
    shift = jnp.where(on_path, jnp.take_along_axis(tree.reward, below, axis=1), 0.0)

    def compose(deeper: tuple[jax.Array, jax.Array], shallower: tuple[jax.Array, jax.Array]
                ) -> tuple[jax.Array, jax.Array]:
        (a_deep, b_deep), (a_up, b_up) = deeper, shallower
        return a_up + b_up * a_deep, b_up * b_deep

    offset, factor = jax.lax.associative_scan(compose, (shift, scale), reverse=True, axis=1)
    backed = offset + factor * value[:, None]  # [B, D]: the value for the player to move at each depth
    counted = jnp.arange(depth_limit)[None, :] <= length[:, None]
    nodes = jnp.where(counted, path, num_nodes)
    return tree.replace(
        visits=tree.visits.at[rows[:, None], nodes].add(1.0, mode="drop"),
        value_sum=tree.value_sum.at[rows[:, None], nodes].add(backed, mode="drop"),
    )


def uct_analysis(
    key: jax.Array, states: State, *, game: Game, num_simulations: int, exploration: float = UCT_EXPLORATION
) -> Analysis:
    """Plain UCT (Kocsis and Szepesvari 2006): UCB1 selection, one node added per simulation, valued by one
    uniformly random rollout; the move played is the most visited at the root (ties broken at random).

    Written for batches of B trees held as [B, nodes, ...] arrays: a simulation descends with a `while_loop` that
    carries only the B paths, writes the new node, and backs its value up the whole path in one associative scan
    and one scatter, none of which copies the tree. mctx's generic search (tests/uct_reference.py does the
    same search with it; tests/test_bots.py checks that the two search alike) rewrites its B x nodes x A arrays at
    every step of its vmapped backup, so that its simulations cost more as the tree grows
    (`python experiments/benchmarks/bench_uct.py` times the two side by side). Jittable and batched over B. Memory: one
    game state and A int32 child indices per node, B x (num_simulations + 1) nodes.

    `policy` is the root's visit shares, `value` the mean of the root's backed-up values (its first rollout
    included), `action_values` the root's Q-values (NaN for unvisited moves); all for the player to move.
    """
    root_key, search_key, tie_key = jax.random.split(key, 3)
    num_trees, num_nodes = states.terminated.shape[0], num_simulations + 1
    legal = states.legal_action_mask
    root_value = jnp.where(states.terminated, 0.0, rollout_values(root_key, game, states))
    tree = _UctTree(
        states=jax.tree.map(lambda x: jnp.zeros((num_trees, num_nodes, *x.shape[1:]), x.dtype).at[:, 0].set(x),
                            states),
        children=jnp.full((num_trees, num_nodes, legal.shape[-1]), -1, jnp.int32),
        visits=jnp.zeros((num_trees, num_nodes), jnp.float32).at[:, 0].set(1.0),
        value_sum=jnp.zeros((num_trees, num_nodes), jnp.float32).at[:, 0].set(root_value),
        reward=jnp.zeros((num_trees, num_nodes), jnp.float32),
        discount=jnp.zeros((num_trees, num_nodes), jnp.float32),
    )
    simulate = functools.partial(_simulate, game=game, exploration=exploration)
    tree = jax.lax.fori_loop(
        1, num_nodes, lambda i, t: simulate(jax.random.fold_in(search_key, i), t, i), tree)
    rows = jnp.arange(num_trees)
    visits, q = _children_stats(tree, rows, jnp.zeros(num_trees, jnp.int32))
    most = legal & (visits == jnp.max(jnp.where(legal, visits, -1.0), axis=-1, keepdims=True))
    return Analysis(
        action=sample_uniform(tie_key, most),
        policy=visits / jnp.maximum(visits.sum(-1, keepdims=True), 1.0),
        value=tree.value_sum[:, 0] / tree.visits[:, 0],
        action_values=jnp.where(legal & (visits > 0), q, jnp.nan),
    )


def uct_bot(game: Game, num_simulations: int, *, exploration: float = UCT_EXPLORATION) -> Bot:
    """Classic Monte-Carlo tree search with random rollouts and no network ("mcts:N"), N simulations a move."""
    if num_simulations < 1:
        raise ValueError(f"mcts needs at least 1 simulation, got {num_simulations}")
    analyse = functools.partial(uct_analysis, game=game, num_simulations=num_simulations, exploration=exploration)
    return Bot(f"mcts:{num_simulations}", analyse)
