"""Agents behind one batched interface, from a uniformly random player to a trained AlphaZero network.

Every agent here is a `Bot`: a name and a pure, jittable `analyse(key, states [B]) -> Analysis`, whose `action`
is the move it plays; `bot.act(key, states) -> actions [B]` is the interface the arena uses
(`evaluation.AgentFn`). The analysis also says what the agent thinks: its move distribution, its value of the
position and, where it has them, its value of each move, so that `azjax play` can show them.

    random_bot()                       uniformly random legal moves
    onestep_bot(game)                  takes a win in one, else avoids moves that allow a loss in one, else random
    uct_bot(game, num_simulations)     plain Monte-Carlo tree search (UCT) with random rollouts, no network
    perfect_bot(game)                  random among the optimal moves (small games; Connect Four by alpha-beta)
    greedy_bot(agent)                  a trained network's top move, no search
    alphazero_bot(agent, ...)          a trained network with mctx search (Gumbel or PUCT); with tree reuse (by
                                       default for PUCT) it keeps its search tree from move to move (`Bot.memory`)
    make_bot("mcts:200", game)         any of them from a command-line spec (see `make_bot`)

Perspective: every value is for the player to move in the position analysed (+1 win, -1 loss); NaN where the
agent has no estimate. Terminal states may appear in a batch (finished games of a match); the agents return some
action for them, which the arena ignores.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from azjax import pretrained, tree_reuse
from azjax import solver as solver_lib
from azjax.agent import Agent, load_agent
from azjax.config import SearchConfig
from azjax.games import BoardState, Game, State, lookahead
from azjax.games import names as game_names
from azjax.networks import inference_fn
from azjax.search import SearchOutput, evaluate_states, make_search_fn

# UCB1's sqrt(2 ln N / n) assumes rewards in [0, 1]; our Q-values span [-1, 1], twice as wide, where UCB1's
# equivalent constant is 2 sqrt(2). sqrt(2) explores half as much as that; it stays, as recorded baselines
# (mcts:N) were measured with it.
UCT_EXPLORATION = math.sqrt(2.0)
PERFECT_MAX_STATES = 20_000  # the perfect player solves the game at once; beyond this many positions it refuses
CONNECT_FOUR_MAX_SECONDS = 60.0  # Connect Four's perfect player gives up on a position after this long
CONNECT_FOUR_PERFECT_MIN_STONES = 10  # from this many stones on, a move takes about a second on average


class Analysis(struct.PyTreeNode):
    """What an agent makes of a batch of B positions; every value is for the player to move there."""

    action: jax.Array  # [B] int32, the move the agent plays
    policy: jax.Array  # [B, A] float32, its distribution over moves (visit shares, network policy, ...)
    value: jax.Array  # [B] float32, its value of the position in [-1, 1]; NaN if it has no estimate
    action_values: jax.Array  # [B, A] float32, its value of each legal move; NaN where it has none
    visits: jax.Array | None = None  # [B, A] int32, a search's simulations per move (what decided its move), or None


@dataclasses.dataclass(frozen=True, eq=False)
class Memory:
    """What a bot carries from one move to the next in each game (a search tree), for the players that keep it:
    the arena and `azjax play` hold one per game, let the bot update it when it moves, and `follow` every move
    played in the game, the opponent's too. All three are pure and un-jitted."""

    init: Callable[[State], Any]  # states [N] -> the memory of N games, nothing remembered yet
    analyse: Callable[[jax.Array, State, Any], tuple[Analysis, Any]]  # (key, states [B], memory [B]) -> the
    #   analysis and the memory after it, about the same positions
    follow: Callable[[Any, jax.Array, jax.Array], Any]  # (memory [N], actions [N], moved [N] bool) -> the memory
    #   about the positions after `actions` where `moved` (the others unchanged)


@dataclasses.dataclass(frozen=True, eq=False)
class Bot:
    """A named agent. `analyse` is pure and un-jitted; callers jit it (or the match around it). A bot with a
    `memory` (tree reuse) plays better when its caller keeps that memory (`Memory`); `analyse` alone plays as
    if every position were new.

    Bots compare and hash by identity, so a bot can be a static argument of `jax.jit`.
    """

    name: str
    analyse: Callable[[jax.Array, State], Analysis]
    memory: Memory | None = None

    def act(self, key: jax.Array, states: State) -> jax.Array:
        """The agent's moves [B] int32 for a batch of states (the `evaluation.AgentFn` interface)."""
        return self.analyse(key, states).action


def _uniform_policy(mask: jax.Array) -> jax.Array:
    """Uniform over the True entries of a bool mask [B, A]; all zero where a row is all False."""
    mask = mask.astype(jnp.float32)
    return mask / jnp.maximum(mask.sum(axis=-1, keepdims=True), 1.0)


def _sample(key: jax.Array, mask: jax.Array) -> jax.Array:
    """A uniformly random True entry of each row of a bool mask [B, A] (0 for an all-False row)."""
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


def _sample_by_rank(key: jax.Array, mask: jax.Array) -> jax.Array:
    """`_sample`'s distribution (a uniformly random True entry of each row of `mask` [B, A], 0 for an all-False
    row) from one random number a row instead of one an entry: the k-th True entry, k uniform below the row's
    count. Random rollouts take it: in Brandub (1176 actions) `_sample` cost more than the game's step, and the
    rollouts run 3x faster with this (experiments/results/bench_uct_cpu.txt)."""
    count = jnp.sum(mask, axis=-1, dtype=jnp.int32)
    rank = jnp.floor(jax.random.uniform(key, count.shape) * count).astype(jnp.int32)
    rank = jnp.minimum(rank, jnp.maximum(count - 1, 0))  # u x count may round up to count in float32
    return jnp.argmax(jnp.cumsum(mask, axis=-1, dtype=jnp.int32) > rank[:, None], axis=-1).astype(jnp.int32)


def _unknown(shape: tuple[int, ...]) -> jax.Array:
    return jnp.full(shape, jnp.nan, jnp.float32)


def _mover_reward(states: State, mover: jax.Array) -> jax.Array:
    """rewards[mover] of a batch: float32 [B] (rewards [B, 2], mover [B] player ids)."""
    return _reward_of(states, mover)


def _reward_of(states: State, player: jax.Array) -> jax.Array:
    """What `player` (int32, the shape of the batch, e.g. [B, C]) got on the step to each state: float32, that
    shape (states.rewards [..., 2])."""
    return jnp.take_along_axis(states.rewards, player[..., None], axis=-1)[..., 0]


# --------------------------------------------------------------------------------------------------------------
# Uniformly random


def random_analysis(key: jax.Array, states: State) -> Analysis:
    """A uniformly random legal move per state; no value estimate."""
    mask = states.legal_action_mask
    return Analysis(
        action=_sample(key, mask),
        policy=_uniform_policy(mask),
        value=_unknown(mask.shape[:1]),
        action_values=_unknown(mask.shape),
    )


def random_bot() -> Bot:
    """The uniformly random player ("random"), the anchor (Elo 0) of rating tables."""
    return Bot("random", random_analysis)


# --------------------------------------------------------------------------------------------------------------
# One-ply tactics


def onestep_analysis(key: jax.Array, states: State, *, game: Game) -> Analysis:
    """Takes a win in one if there is one; otherwise plays a random move after which the opponent cannot win at
    once (which blocks a single threat); with no such move (a double threat), a random legal move.

    Looks at every legal move and every legal reply through `game.step`, so it works for any game, in bounded
    memory (`games.lookahead`: 8 moves by 8 replies at a time, B * 64 states at the peak, not B * A * A); the work
    is B times the most legal moves in the batch times the most legal replies.
    `value` is +1 with a win in one, -1 when every move allows a loss in one, NaN otherwise; `action_values` is
    +1 for winning moves, -1 for moves that allow a loss in one, NaN for the rest (all for the player to move).
    """
    mover = states.current_player  # [B]
    legal = states.legal_action_mask  # [B, A]

    def move_value(children: State, actions: jax.Array) -> jax.Array:
        """+1 a win for the mover, -1 a move after which some legal reply makes the mover lose, NaN else."""
        movers = jnp.broadcast_to(mover[:, None], actions.shape)  # [B, C]
        won = children.terminated & (_reward_of(children, movers) > 0)

        def loses(replies: State, reply_actions: jax.Array) -> jax.Array:  # replies [B * C, R]
            return _reward_of(replies, movers.reshape(-1, 1)) < 0

        allows_loss = lookahead.map_legal_moves(game, lookahead.flatten(children), loses, fill=False).any(-1)
        return jnp.where(won, 1.0, jnp.where(allows_loss.reshape(actions.shape), -1.0, jnp.nan))

    action_values = lookahead.map_legal_moves(game, states, move_value, fill=jnp.nan)  # [B, A]
    wins, allows_loss = action_values == 1.0, action_values == -1.0
    safe = legal & ~allows_loss
    has_win, has_safe = wins.any(-1, keepdims=True), safe.any(-1, keepdims=True)
    choice = jnp.where(has_win, wins, jnp.where(has_safe, safe, legal))
    value = jnp.where(has_win[:, 0], 1.0, jnp.where(has_safe[:, 0], jnp.nan, -1.0))
    return Analysis(
        action=_sample(key, choice),
        policy=_uniform_policy(choice),
        value=value.astype(jnp.float32),
        action_values=action_values.astype(jnp.float32),
    )


def onestep_bot(game: Game) -> Bot:
    """The one-ply tactical player ("onestep"): wins in one, blocks a loss in one, else random."""
    return Bot("onestep", functools.partial(onestep_analysis, game=game))


# --------------------------------------------------------------------------------------------------------------
# UCT: Monte-Carlo tree search with random rollouts


class _Rollout(struct.PyTreeNode):
    states: State  # [B]
    returns: jax.Array  # [B, 2] float32, rewards summed per player id
    num_steps: jax.Array  # [] int32


def rollout_values(key: jax.Array, game: Game, states: State, *,
                   sample: Callable[[jax.Array, jax.Array], jax.Array] | None = None) -> jax.Array:
    """Plays uniformly random moves from each state to the end: float32 [B], the outcome for the player to move
    in each starting state (0 for a terminal one). A `lax.while_loop` that stops when every game has ended.
    `sample(key, legal [B, A]) -> moves [B]` draws the moves (default `_sample_by_rank`)."""
    sample = sample or _sample_by_rank

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
    num_trees, num_nodes = tree.visits.shape
    rows = jnp.arange(num_trees)
    depth_limit = game.max_length + 2  # a path from the root meets a game's end within max_length moves

    def descending(descent: _Descent) -> jax.Array:
        return jnp.any(descent.active)

    def down(descent: _Descent) -> _Descent:
        at_end = tree.states.terminated[rows, descent.node]
        action = _ucb1_actions(jax.random.fold_in(select_key, jnp.max(descent.depth)), tree, rows, descent.node,
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
    leaf = jax.lax.while_loop(descending, down, start)

    # Expand: the move chosen at the last node, unless that node ended its game (it is revisited as it is).
    parent_states = jax.tree.map(lambda x: x[rows, leaf.node], tree.states)
    expand = ~parent_states.terminated
    mover = parent_states.current_player
    states = jax.vmap(game.step)(parent_states, leaf.action)
    ended = states.terminated
    value = jnp.where(ended | ~expand, 0.0, rollout_values(rollout_key, game, states))
    new = jnp.where(expand, index, num_nodes)  # out of range where nothing is added: dropped
    tree = tree.replace(
        states=jax.tree.map(lambda whole, x: whole.at[rows, new].set(x, mode="drop"), tree.states, states),
        children=tree.children.at[rows, jnp.where(expand, leaf.node, num_nodes), leaf.action].set(index, mode="drop"),
        reward=tree.reward.at[rows, new].set(_mover_reward(states, mover), mode="drop"),
        discount=tree.discount.at[rows, new].set(
            jnp.where(ended, 0.0, jnp.where(states.current_player == mover, 1.0, -1.0)), mode="drop"),
    )
    length = leaf.depth + expand  # the leaf's depth: the new node, or the revisited end
    path = leaf.path.at[rows, jnp.where(expand, length, depth_limit)].set(index, mode="drop")

    # Back up: the value at depth k is reward + discount x the value at depth k + 1 (of the node below), from the
    # leaf's value up; an associative scan composes those affine steps over the whole path at once.
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
    and one scatter, none of which copies the tree. mctx's generic search, which this function used before
    (experiments/uct_reference.py keeps it; tests/test_bots.py checks that the two search alike), rewrites its
    B x nodes x A arrays at every step of its vmapped backup, so that its simulations cost more as the tree grows
    (`python experiments/bench_uct.py` times the two side by side). Jittable and batched over B. Memory: one game
    state and A int32 child indices per node, B x (num_simulations + 1) nodes.

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
        action=_sample(tie_key, most),
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


# --------------------------------------------------------------------------------------------------------------
# Perfect play from an exact solution


def perfect_analysis(key: jax.Array, states: State, *, solution: solver_lib.Solution) -> Analysis:
    """Random among the optimal moves; the exact values. A state outside the table gets a random legal move."""
    index = solver_lib.lookup(solution, states)
    known = index >= 0
    row = jnp.maximum(index, 0)
    choice = jnp.where(known[:, None], solution.optimal_actions[row], states.legal_action_mask)
    action_values = jnp.where(known[:, None] & states.legal_action_mask, solution.action_values[row], jnp.nan)
    return Analysis(
        action=_sample(key, choice),
        policy=_uniform_policy(choice),
        value=jnp.where(known, solution.values[row], jnp.nan),
        action_values=action_values,
    )


def connect_four_perfect_analysis(key: jax.Array, states: BoardState, *, max_seconds: float | None) -> Analysis:
    """Connect Four's perfect player: each move's outcome and the exact scores of the best ones from the alpha-beta
    solver (on the host, through `jax.pure_callback`), then uniformly random among the best-scored moves (the
    fastest win, the slowest loss, any drawing move). Values are outcomes for the player to move: +1 win, 0 draw,
    -1 loss."""
    legal = states.legal_action_mask
    shape = jax.ShapeDtypeStruct(legal.shape, jnp.int8)
    outcomes, scores = jax.pure_callback(
        functools.partial(_connect_four_best_moves, max_seconds=max_seconds),
        (shape, shape),
        states.board, states.current_player, states.terminated,
        vmap_method="broadcast_all",
    )
    scores = jnp.where(legal, scores.astype(jnp.int32), -1000)  # ILLEGAL (-128) marks moves of a worse outcome
    best = legal & (scores == scores.max(axis=-1, keepdims=True))
    outcomes = jnp.where(legal, outcomes.astype(jnp.float32), jnp.nan)
    return Analysis(
        action=_sample(key, best),
        policy=_uniform_policy(best),
        value=jnp.where(states.terminated, jnp.nan, jnp.max(jnp.where(legal, outcomes, -1.0), axis=-1)),
        action_values=outcomes,
    )


_connect_four_solvers: dict = {}  # one per time limit, made at first use (~80 MB each)


def _connect_four_best_moves(boards, players, terminated, *, max_seconds: float | None):
    """Host side of `connect_four_perfect_analysis`: outcomes and best scores, int8 [B, 7] each (see
    `connect_four.Solver.best_moves_bits`); zeros for terminal states."""
    import numpy as np

    from azjax.solver import connect_four

    solver = _connect_four_solvers.get(max_seconds)
    if solver is None:
        solver = _connect_four_solvers[max_seconds] = connect_four.Solver(max_seconds=max_seconds)
    boards, players, terminated = np.asarray(boards), np.asarray(players), np.asarray(terminated)
    outcomes = np.zeros((len(boards), connect_four.WIDTH), np.int8)
    scores = np.zeros((len(boards), connect_four.WIDTH), np.int8)
    for row in np.flatnonzero(~terminated):
        position = connect_four.encode_board(boards[row], int(players[row]))
        outcomes[row], scores[row] = solver.best_moves_bits(*position)
    return outcomes, scores


@contextlib.contextmanager
def solve_timeouts_raised() -> Iterator[None]:
    """Raises a `connect_four.SolveTimeout` that Connect Four's perfect player hit inside a jitted computation
    (where `jax.pure_callback` hands it on as `jax.errors.JaxRuntimeError`) as `SolveTimeout` again, with the
    solver's message and what to do; any other error passes unchanged. Wrap the call and the fetch of its
    results: an error of an asynchronous computation may surface at either."""
    try:
        yield
    except jax.errors.JaxRuntimeError as error:
        text = str(error)
        if "SolveTimeout" not in text:
            raise
        from azjax.solver.connect_four import SolveTimeout

        said = [line.split("SolveTimeout:", 1)[1].strip() for line in text.splitlines() if "SolveTimeout:" in line]
        raise SolveTimeout(
            f"Connect Four's perfect player gave up on a position: {said[-1] if said else 'it took too long'}. "
            f"Start its games after openings of {CONNECT_FOUR_PERFECT_MIN_STONES} or more moves "
            f"(--opening-moves {CONNECT_FOUR_PERFECT_MIN_STONES})"
        ) from None


def perfect_bot(
    game: Game, solution: solver_lib.Solution | None = None, *, max_states: int = PERFECT_MAX_STATES,
    max_seconds: float | None = CONNECT_FOUR_MAX_SECONDS,
) -> Bot:
    """A perfect player ("perfect"), uniformly random among optimal moves: from `solver.solve(game)` for a small
    game (tic-tac-toe), from the alpha-beta solver for Connect Four.

    Connect Four's costs on one CPU core (experiments/results/bench_solver_cpu.txt): a move from 10 random stones
    takes 0.9 s on average (median 0.4 s, up to ~9 s), from 8 stones 2.2 s (up to ~11 s), from 15 on
    milliseconds; the first moves take minutes. A position that takes longer than `max_seconds` stops the match:
    the solver raises `connect_four.SolveTimeout` inside `jax.pure_callback`, which reaches a jitted caller as
    `jax.errors.JaxRuntimeError` (its message holds the SolveTimeout's); `arena.play`, `arena.round_robin`,
    `evaluation.head_to_head` and `play.play_game` raise it as `SolveTimeout` again (`solve_timeouts_raised`).
    Start games from openings of `CONNECT_FOUR_PERFECT_MIN_STONES` or more moves (`--opening-moves 10`).

    Raises:
      ValueError: the game is too large to solve exactly here (more than `max_states` positions), or cannot be
        solved (see `solver.solve`).
    """
    if game.name == "connect_four":
        return Bot("perfect", functools.partial(connect_four_perfect_analysis, max_seconds=max_seconds))
    if solution is None:
        try:
            solution = solver_lib.solve(game, max_states=max_states)
        except ValueError as error:
            reason = str(error).split(";")[0].replace(f"max_states={max_states}", str(max_states))
            raise ValueError(
                f"the perfect player solves the game exactly, which is out of reach for {game.name} ({reason}); "
                "it is for small games such as tic_tac_toe"
            ) from None
    return Bot("perfect", functools.partial(perfect_analysis, solution=solution))


# --------------------------------------------------------------------------------------------------------------
# Trained networks


def greedy_analysis(variables: dict, key: jax.Array, states: State, *, agent: Agent) -> Analysis:
    """The network's top move; its policy and value, and each move's value as minus the network's value of the
    position after it (for a game where the turn passes; a terminal child is worth its reward)."""
    del key
    apply_fn = inference_fn(agent.network)
    game = agent.game
    logits, value = evaluate_states(apply_fn, variables, game, states)
    legal = states.legal_action_mask
    mover = states.current_player

    def value_after(children: State, actions: jax.Array) -> jax.Array:  # [B, C], for the player to move
        _, child_value = evaluate_states(apply_fn, variables, game, lookahead.flatten(children))
        reward = jnp.take_along_axis(children.rewards, mover[:, None, None], axis=2)[..., 0]
        sign = jnp.where(children.current_player == mover[:, None], 1.0, -1.0)
        return reward + jnp.where(children.terminated, 0.0, sign * child_value.reshape(actions.shape))

    # The legal moves' successors a few at a time (`games.lookahead`): Brandub has 1176 actions.
    move_value = lookahead.map_legal_moves(game, states, value_after, fill=jnp.nan)  # [B, A]
    return Analysis(
        action=jnp.argmax(logits, axis=-1).astype(jnp.int32),
        policy=jnp.where(legal, jax.nn.softmax(logits, axis=-1), 0.0),
        value=value.astype(jnp.float32),
        action_values=jnp.where(legal, move_value, jnp.nan).astype(jnp.float32),
    )


def alphazero_analysis(variables: dict, key: jax.Array, states: State, *, search_fn: Callable) -> Analysis:
    """The search's move, its improved policy (visit shares for PUCT), its value of the position, and each
    visited move's value and visits. The move is the most visited (Gumbel MuZero: the best of the moves that
    survived sequential halving, which have the most visits), not always the improved policy's first.

    The value of the position is the search's value (Q) of the move it plays, as resignation reads it: the root
    value averages in every simulation, and Gumbel MuZero's sequential halving spends many on moves it then
    drops (on tic-tac-toe's solved positions the root value's sign named the outcome in 61.6% of positions, the
    network's own value in 95.4%)."""
    return _analysis_of(search_fn(variables, key, states, jnp.zeros(states.current_player.shape, jnp.int32)))


def _analysis_of(output: SearchOutput) -> Analysis:
    return Analysis(
        action=output.action,
        policy=output.policy_target,
        value=jnp.where(jnp.isfinite(output.action_value), output.action_value, output.root_value),
        action_values=output.action_values,
        visits=output.visit_counts,
    )


def _search_memory(variables: dict, search_fn: Callable, game: Game, config: SearchConfig) -> Memory:
    """Tree reuse for a bot: its memory is a `tree_reuse.KeptTree` per game, rooted at the game's position."""

    def analyse(key: jax.Array, states: State, kept: tree_reuse.KeptTree) -> tuple[Analysis, tree_reuse.KeptTree]:
        output = search_fn(variables, key, states, jnp.zeros(states.current_player.shape, jnp.int32), kept)
        return _analysis_of(output), output.tree

    return Memory(
        init=lambda states: tree_reuse.empty(states, game.num_actions, config.capacity, config.num_simulations),
        analyse=analyse,
        follow=tree_reuse.follow,
    )


def alphazero_search_config(agent: Agent, *, num_simulations: int | None = None, policy: str | None = None,
                            reuse_tree: bool = False, tree_capacity: int | None = None) -> SearchConfig:
    """The agent's deterministic search config (no root noise, no temperature) with optional simulations, policy
    ("gumbel" or "puct") and tree reuse overrides (`tree_capacity` None: the default for the simulations)."""
    config = agent.search_config(num_simulations=num_simulations, deterministic=True)
    if policy is not None:
        if policy not in ("gumbel", "puct"):
            raise ValueError(f"search policy must be 'gumbel' or 'puct', got {policy!r}")
        config = dataclasses.replace(config, policy=policy)
    return dataclasses.replace(config, reuse_tree=reuse_tree, tree_capacity=tree_capacity)


def greedy_bot(agent: Agent, name: str = "greedy") -> Bot:
    """A trained network playing its top move without search."""
    return Bot(name, functools.partial(greedy_analysis, agent.variables, agent=agent))


def alphazero_bot(
    agent: Agent, *, num_simulations: int | None = None, policy: str | None = None, reuse_tree: bool | None = None,
    tree_capacity: int | None = None, name: str = "az",
) -> Bot:
    """A trained network with mctx search: the run's search config (or `policy`, "gumbel" or "puct"), with
    `num_simulations` (default: the run's) and no root noise, so it plays its best move. With `reuse_tree` (None:
    with PUCT, where it won at equal time; not with Gumbel MuZero, where it did not gain: README, "Tree reuse") it
    keeps its search tree between moves (in the arena and `azjax play`, which keep its `memory`), following its
    opponent's moves too, and continues it with `num_simulations` new simulations per move, in a tree of
    `tree_capacity` nodes (default `SearchConfig.capacity`'s)."""
    if reuse_tree is None:
        reuse_tree = (policy or agent.config.search.policy) == "puct"
    config = alphazero_search_config(agent, num_simulations=num_simulations, policy=policy, reuse_tree=reuse_tree,
                                     tree_capacity=tree_capacity)
    search_fn = make_search_fn(agent.game, inference_fn(agent.network), config)
    memory = _search_memory(agent.variables, search_fn, agent.game, config) if reuse_tree else None
    return Bot(name, functools.partial(alphazero_analysis, agent.variables, search_fn=search_fn), memory)


# --------------------------------------------------------------------------------------------------------------
# Command-line specs

SPEC_HELP = (
    "random, onestep, mcts:N (UCT with N simulations), perfect (small games such as tic_tac_toe), "
    "greedy:RUN_DIR (the network, no search), az:RUN_DIR[:SIMS][:reuse|:fresh] or just RUN_DIR (the network with "
    "search; :reuse keeps its search tree from move to move, :fresh does not; default: reuse with PUCT only); "
    "RUN_DIR is a run directory, an export, or pretrained:GAME (the agent shipped for GAME; `azjax pretrained` "
    "lists them), and a game's name alone means its shipped agent"
)
TREE_SUFFIXES = {":reuse": True, ":fresh": False}  # az:RUN[:SIMS]<suffix>: tree reuse on or off


class SpecError(ValueError):
    """An agent spec cannot be read or used; the message is one line that says why."""


def _positive_int(text: str, spec: str) -> int:
    if not text.isdecimal() or int(text) < 1:
        raise SpecError(f"agent {spec!r}: {text!r} is not a whole number of simulations >= 1")
    return int(text)


def _load(run_dir: str, spec: str) -> Agent:
    from azjax import checkpointing

    if not run_dir:
        raise SpecError(f"agent {spec!r}: no run directory given")
    shipped = shipped_game(run_dir)
    if shipped is not None:
        run_dir = pretrained.PREFIX + shipped
    try:
        return load_agent(run_dir)
    except checkpointing.CheckpointError as error:
        raise SpecError(f"agent {spec!r}: {error}") from None


def make_bot(
    spec: str,
    game: Game | None,
    *,
    num_simulations: int | None = None,
    policy: str | None = None,
    solution: solver_lib.Solution | None = None,
) -> Bot:
    """A bot from a command-line spec (see `SPEC_HELP`); the bot's name is the spec.

    Args:
      spec: e.g. "random", "mcts:200", "az:runs/ttt:64", "az:runs/ttt:64:reuse", "az:runs/ttt:fresh", "runs/ttt".
      game: the game to play; None to take it from a run directory (then `spec` must name one).
      num_simulations: simulations for a trained agent whose spec gives none (default: the run's).
      policy: "gumbel" or "puct" for a trained agent's search (default: the run's).
      solution: a ready solution for "perfect" (else it is solved here).
    Raises:
      SpecError: a malformed spec, a missing run directory, a run of another game, or an impossible agent.
    """
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    name = bot_name(spec)
    if spec in ("random", "onestep", "perfect") or kind == "mcts":
        if game is None:
            raise SpecError(f"agent {spec!r}: which game? (give --game)")
        if spec == "random":
            return random_bot()
        if spec == "onestep":
            return onestep_bot(game)
        if spec == "perfect":
            try:
                return perfect_bot(game, solution)
            except ValueError as error:
                raise SpecError(f"agent 'perfect': {error}") from None
        return dataclasses.replace(uct_bot(game, _positive_int(rest, spec)), name=spec)
    if kind == "greedy":
        agent = _load(rest, spec)
        bot = greedy_bot(agent, name=name)
    elif kind == "az":
        reuse, run_dir = _tree_suffix(rest)
        sims = num_simulations
        head, _, tail = run_dir.rpartition(":")
        if head and tail.isdecimal():
            run_dir, sims = head, _positive_int(tail, spec)
        agent = _load(run_dir, spec)
        bot = alphazero_bot(agent, num_simulations=sims, policy=policy, reuse_tree=reuse, name=name)
    elif shipped_game(spec) is not None or Path(spec).is_dir() or _looks_like_a_path(spec):
        agent = _load(spec, spec)  # a path that does not exist says so (not that it is no agent name)
        bot = alphazero_bot(agent, num_simulations=num_simulations, policy=policy, name=name)
    else:
        raise SpecError(f"cannot read agent {spec!r}: it is no agent name and no directory; expected {SPEC_HELP}")
    if game is not None and agent.game.name != game.name:
        raise SpecError(f"agent {spec!r} was trained on {agent.game.name}, not {game.name}")
    return bot


def shipped_game(spec: str) -> str | None:
    """The game whose shipped agent `spec` names: "pretrained:GAME", or a registered game's name where no directory
    of that name exists; None for any other spec. (Whether an agent ships for that game is checked on loading.)"""
    if pretrained.is_pretrained(spec):
        return spec.removeprefix(pretrained.PREFIX)
    if spec in game_names() and not Path(spec).exists():
        return spec
    return None


def bot_name(spec: str) -> str:
    """The name the bot of `spec` goes by: the spec, with a game's name (which loads that game's shipped agent)
    written as the agent it loads: "connect_four" -> "pretrained:connect_four", "greedy:connect_four" ->
    "greedy:pretrained:connect_four", "az:connect_four:64" -> "az:pretrained:connect_four:64"."""
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind == "greedy":
        return f"greedy:{_shipped_name(rest)}"
    if kind == "az":
        _, run_dir = _tree_suffix(rest)
        suffix = rest.removeprefix(run_dir)
        head, _, tail = run_dir.rpartition(":")
        if head and tail.isdecimal():
            run_dir, suffix = head, f":{tail}{suffix}"
        return f"az:{_shipped_name(run_dir)}{suffix}"
    return _shipped_name(spec)


def _shipped_name(run_dir: str) -> str:
    shipped = shipped_game(run_dir)
    return run_dir if shipped is None else pretrained.PREFIX + shipped


def _looks_like_a_path(spec: str) -> bool:
    """A spec that can only mean a directory: it has a path separator or starts like a path (., ~)."""
    return "/" in spec or os.sep in spec or spec.startswith((".", "~"))


def _tree_suffix(rest: str) -> tuple[bool | None, str]:
    """An az spec's tree-reuse suffix (True, False, or None: none given) and the rest without it."""
    for suffix, reuse in TREE_SUFFIXES.items():
        if rest.endswith(suffix):
            return reuse, rest.removesuffix(suffix)
    return None, rest


def game_of_spec(spec: str) -> str | None:
    """The game a spec's run directory was trained on, or None for a spec without one (reads config.json only)."""
    from azjax import checkpointing, rundir

    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind in ("greedy", "az"):
        rest = _tree_suffix(rest)[1] if kind == "az" else rest
        head, _, tail = rest.rpartition(":")
        run_dir = head if head and tail.isdecimal() and kind == "az" else rest
    elif spec not in ("random", "onestep", "perfect") and kind != "mcts" and (
            Path(spec).is_dir() or shipped_game(spec) is not None):
        run_dir = spec
    else:
        return None
    if not run_dir:
        return None
    shipped = shipped_game(run_dir)
    if shipped is not None:
        if shipped not in pretrained.names():
            raise SpecError(f"agent {spec!r}: {pretrained.missing_message(shipped)}")
        return shipped
    try:
        if (Path(run_dir) / rundir.CONFIG_FILE).is_file():
            return rundir.read_config(Path(run_dir)).game
        return checkpointing.restore_config(Path(run_dir)).game  # e.g. RUN/checkpoints/<iteration>
    except checkpointing.CheckpointError as error:
        raise SpecError(f"agent {spec!r}: {error}") from None
