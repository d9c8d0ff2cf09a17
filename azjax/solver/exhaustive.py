"""An exact solver for small games: every reachable position with its value under perfect play.

Used to judge whether a trained agent plays perfectly ("its top move is optimal in >= 97% of positions") and as
a perfect opponent in evaluations. Generic over the `Game` protocol: it only calls `init` and `step`.

    solution = solve(make("tic_tac_toe"))            # 5478 states, 4520 of them non-terminal
    accuracy = policy_accuracy(solution, choose)      # choose: states [B] -> actions [B]
    agent = perfect_agent(solution)                   # (key, states [B]) -> actions [B], jittable

Perspective. Every value here is for the *player to move* in the position it belongs to (the state's
`current_player`): +1 a win, 0 a draw, -1 a loss under perfect play by both sides. Rewards of the protocol are
indexed by player id, so the value of an action for the mover `p` is

    q(s, a) = child.rewards[p] + (0                 if child.terminated
                                  + value(child)    if child.current_player == p   (the mover moves again)
                                  - value(child)    otherwise)                     (zero-sum: the opponent's gain)

and `value(s) = max_a q(s, a)` over legal actions (negamax). A terminal state's value is what the last step
paid to the player named by its own `current_player` field, `rewards[current_player]`; for tic-tac-toe, whose
`current_player` passes to the loser after a winning move, that is -1 after a win and 0 after a draw. (Only
`q`, not the terminal `values` entry, feeds back into the search, so a game that does not advance
`current_player` on its final move is still solved correctly.)

Requirements on the game: deterministic (`init` is called once, with a fixed key), finite, and acyclic (no
position can recur); `solve` raises a ValueError otherwise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from azjax.games.base import Game, State

_OPTIMAL_TOLERANCE = 1e-6  # values are sums of +-1/0 rewards, so any tolerance below 1 separates them


class Solution(struct.PyTreeNode):
    """Every position reachable from a game's start, solved. A pytree: it can be passed through `jax.jit`.

    N = num_states, A = num_actions, L = the length of a state's encoding (all leaves of a State, flattened).
    Index 0 is the start position; states are in breadth-first order (nondecreasing `depth`).

    Attributes:
      states: State [N], the reachable positions stacked along a leading axis.
      terminal: bool [N], the game is over (same as `states.terminated`).
      depth: int32 [N], the fewest moves from the start that reach the position.
      values: float32 [N], the game-theoretic value for the player to move (`states.current_player`): +1 win,
        0 draw, -1 loss. For terminal states, `states.rewards[current_player]` (see the module docstring).
      action_values: float32 [N, A], q(s, a): the value for the player to move in s of playing a, then perfect
        play by both sides; -inf for illegal actions (every action of a terminal state).
      optimal_actions: bool [N, A], legal actions whose q equals `values`: those that keep the best outcome
        the position allows. All False for terminal states.
      children: int32 [N, A], the index of the position that action a leads to; -1 for illegal actions.
      search_keys: int32 [N, L], the states' encodings in lexicographic order, for `lookup`.
      search_index: int32 [N], the index into `states` of each row of `search_keys`.
      num_states: N.
      num_nonterminal: the number of non-terminal states (those where a player has a decision).
    """

    states: State
    terminal: jax.Array  # [N] bool
    depth: jax.Array  # [N] int32
    values: jax.Array  # [N] float32, for the player to move
    action_values: jax.Array  # [N, A] float32, for the player to move; -inf where illegal
    optimal_actions: jax.Array  # [N, A] bool
    children: jax.Array  # [N, A] int32, -1 where illegal
    search_keys: jax.Array  # [N, L] int32, sorted lexicographically
    search_index: jax.Array  # [N] int32
    num_states: int = struct.field(pytree_node=False)
    num_nonterminal: int = struct.field(pytree_node=False)


# --------------------------------------------------------------------------------------------------------------
# State encodings: every leaf of a batched State flattened into one int32 row, identical on host and device.


def encode_states(states: State) -> jax.Array:
    """A batch of states as int32 rows [B, L]: two states are equal iff their rows are.

    Every leaf is flattened per state and converted to int32: integers and booleans by value, floats (as float32)
    by their bits with -0.0 folded into +0.0, PRNG keys by their key data.
    """
    columns = []
    for leaf in jax.tree.leaves(states):
        leaf = jnp.asarray(leaf)
        if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            leaf = leaf.astype(jnp.float32)
            leaf = jax.lax.bitcast_convert_type(jnp.where(leaf == 0, jnp.float32(0), leaf), jnp.int32)
        columns.append(leaf.reshape(leaf.shape[0], -1).astype(jnp.int32))
    return jnp.concatenate(columns, axis=1)


def _expand(step: Callable[[State, jax.Array], State], states: State, actions: jax.Array) -> tuple[State, jax.Array]:
    """Steps a batch of (state, action) pairs [B]; returns the children [B] and their encodings [B, L]."""
    children = jax.vmap(step)(states, actions)
    return children, encode_states(children)


# --------------------------------------------------------------------------------------------------------------
# solve: breadth-first enumeration, then backward induction.


def _take(states: State, index: np.ndarray | int) -> State:
    return jax.tree.map(lambda x: x[index], states)


_Edges = list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # per depth: parent index, action, child index [E]


def _enumerate(game: Game, *, max_states: int, batch_size: int) -> tuple[State, np.ndarray, np.ndarray, _Edges]:
    """Breadth-first search from the start. Returns, as host arrays in breadth-first order: the states [N], their
    encodings [N, L], their depths [N], and the edges."""
    expand = jax.jit(functools.partial(_expand, game.step))
    root = jax.device_get(jax.tree.map(lambda x: jnp.asarray(x)[None], game.init(jax.random.key(0))))
    root_key = np.asarray(jax.jit(encode_states)(root))
    index_of = {root_key[0].tobytes(): 0}
    chunks, keys, depths = [root], [root_key], [np.zeros(1, np.int32)]
    edges: _Edges = []
    frontier, frontier_index, depth = root, np.zeros(1, np.int64), 0
    while True:
        legal = np.asarray(frontier.legal_action_mask) & ~np.asarray(frontier.terminated)[:, None]
        parent, action = np.nonzero(legal)
        if parent.size == 0:
            break
        depth += 1
        child_states, child_keys = [], []
        for start in range(0, parent.size, batch_size):
            rows = np.arange(start, start + batch_size).clip(max=parent.size - 1)  # pad to one compiled shape
            stepped, encoded = jax.device_get(expand(_take(frontier, parent[rows]), jnp.asarray(action[rows])))
            keep = min(batch_size, parent.size - start)
            child_states.append(_take(stepped, np.arange(keep)))
            child_keys.append(encoded[:keep])
        stepped = jax.tree.map(lambda *xs: np.concatenate(xs), *child_states)
        encoded = np.concatenate(child_keys)
        unique_keys, first, inverse = np.unique(encoded, axis=0, return_index=True, return_inverse=True)
        num_known = len(index_of)
        unique_index = np.array(
            [index_of.setdefault(key.tobytes(), len(index_of)) for key in unique_keys], np.int64
        )
        new = np.flatnonzero(unique_index >= num_known)  # first seen at this depth, in index order
        if len(index_of) > max_states:
            raise ValueError(
                f"{game.name} has more than max_states={max_states} reachable states ({len(index_of)} found "
                f"within {depth} moves of the start); the exact solver is for small games. Raise max_states "
                "if the host has the memory for it."
            )
        edges.append((frontier_index[parent], action, unique_index[inverse.reshape(-1)]))
        frontier = _take(stepped, first[new])
        frontier_index = unique_index[new]
        chunks.append(frontier)
        keys.append(unique_keys[new])
        depths.append(np.full(len(new), depth, np.int32))
    states = jax.tree.map(lambda *xs: np.concatenate(xs), *chunks)
    return states, np.concatenate(keys), np.concatenate(depths), edges


def _backward_induction(game: Game, states: State, children: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Negamax over the DAG of positions. Returns values [N] and action values [N, A] (float64, -inf where
    illegal), both for the player to move; see the module docstring for the signs."""
    num_states = children.shape[0]
    player = np.asarray(states.current_player).astype(np.int64)
    rewards = np.asarray(states.rewards, np.float64)  # [N, 2], by player id
    terminal = np.asarray(states.terminated)
    legal = children >= 0
    stuck = ~terminal & ~legal.any(axis=1)
    if stuck.any():
        raise ValueError(
            f"{game.name}: a non-terminal state has no legal action:\n"
            f"{game.render(_take(states, int(np.argmax(stuck))))}"
        )
    values = np.where(terminal, rewards[np.arange(num_states), player], np.nan)
    action_values = np.full(children.shape, -np.inf)
    solved = terminal.copy()
    while not solved.all():
        ready = np.flatnonzero(~solved & np.all(~legal | solved[children], axis=1))
        if ready.size == 0:
            raise ValueError(
                f"{game.name}: the positions form a cycle (a position can recur), so backward induction cannot "
                "solve the game; the solver handles only games whose positions never repeat."
            )
        child = children[ready]  # [R, A]
        mover = player[ready][:, None]
        future = np.where(terminal[child], 0.0, values[child])
        future = np.where(player[child] == mover, future, -future)
        q = np.take_along_axis(rewards[child], mover[..., None], axis=-1)[..., 0] + future
        action_values[ready] = np.where(legal[ready], q, -np.inf)
        values[ready] = action_values[ready].max(axis=1)
        solved[ready] = True
    return values, action_values


def solve(game: Game, *, max_states: int = 200_000, batch_size: int = 4096) -> Solution:
    """Enumerates every position reachable from `game.init` and solves it by backward induction.

    The search runs on the host, stepping all legal actions of a whole breadth-first layer at once through the
    game's own `jax.jit(jax.vmap(game.step))` (in batches of `batch_size`, padded to one compiled shape), and
    deduplicating positions by all leaves of their state pytrees.

    Args:
      game: a deterministic, finite, acyclic game (see the module docstring).
      max_states: give up beyond this many reachable positions.
      batch_size: (state, action) pairs per call of the stepping function.
    Returns:
      The `Solution`; every value in it is for the player to move.
    Raises:
      ValueError: more than `max_states` positions, a position that can recur, or a non-terminal state without
        a legal action.
    """
    states, keys, depths, edges = _enumerate(game, max_states=max_states, batch_size=batch_size)
    num_states = len(depths)
    children = np.full((num_states, game.num_actions), -1, np.int64)
    for parent, action, child in edges:
        children[parent, action] = child
    values, action_values = _backward_induction(game, states, children)
    optimal = (children >= 0) & (action_values >= values[:, None] - _OPTIMAL_TOLERANCE)
    order = np.lexsort(keys.T[::-1])  # lexicographic, column 0 most significant, as `_less` compares
    terminal = np.asarray(states.terminated)
    return Solution(
        states=jax.tree.map(jnp.asarray, states),
        terminal=jnp.asarray(terminal),
        depth=jnp.asarray(depths, jnp.int32),
        values=jnp.asarray(values, jnp.float32),
        action_values=jnp.asarray(action_values, jnp.float32),
        optimal_actions=jnp.asarray(optimal),
        children=jnp.asarray(children, jnp.int32),
        search_keys=jnp.asarray(keys[order], jnp.int32),
        search_index=jnp.asarray(order, jnp.int32),
        num_states=num_states,
        num_nonterminal=int(num_states - terminal.sum()),
    )


# --------------------------------------------------------------------------------------------------------------
# Jittable queries.


def _less(a: jax.Array, b: jax.Array) -> jax.Array:
    """Lexicographic a < b over the last axis of int32 rows [..., L]."""
    differs = a != b
    first = jnp.argmax(differs, axis=-1)[..., None]
    a_first = jnp.take_along_axis(a, first, axis=-1)[..., 0]
    b_first = jnp.take_along_axis(b, first, axis=-1)[..., 0]
    return jnp.any(differs, axis=-1) & (a_first < b_first)


def lookup(solution: Solution, states: State) -> jax.Array:
    """The index in `solution.states` of each state of a batch, or -1 for a state not in the table.

    Jittable: a binary search over the sorted encodings, O(B L log N).

    Args:
      solution: from `solve`.
      states: State [B], a batch with the same pytree structure as the game's states.
    Returns:
      int32 [B].
    """
    structure, expected = jax.tree.structure(states), jax.tree.structure(solution.states)
    if structure != expected:  # type: ignore[operator]  # jaxlib's PyTreeDef stub lacks __eq__
        raise ValueError(f"states of structure {structure} do not match the solution's {expected}")
    leaves = zip(jax.tree.leaves(states), jax.tree.leaves(solution.states), strict=True)
    shapes = [(np.shape(leaf), np.shape(table)[1:]) for leaf, table in leaves]
    batched = all(len(shape) == len(table_shape) + 1 and shape[1:] == table_shape for shape, table_shape in shapes)
    if not batched or len({shape[0] for shape, _ in shapes}) != 1:
        raise ValueError(
            f"lookup takes a batch of states [B] (leading axis B on every leaf); got leaves of shapes "
            f"{[shape for shape, _ in shapes]} for states of shapes {[table_shape for _, table_shape in shapes]}"
        )
    queries = encode_states(states)  # [B, L]
    keys = solution.search_keys  # [N, L]
    num_states = keys.shape[0]
    lo = jnp.zeros(queries.shape[0], jnp.int32)
    hi = jnp.full(queries.shape[0], num_states, jnp.int32)

    def halve(_, bounds):
        lo, hi = bounds
        mid = (lo + hi) // 2
        right = _less(keys[jnp.minimum(mid, num_states - 1)], queries)
        active = lo < hi
        return jnp.where(active & right, mid + 1, lo), jnp.where(active & ~right, mid, hi)

    lo, _ = jax.lax.fori_loop(0, num_states.bit_length(), halve, (lo, hi))
    row = jnp.minimum(lo, num_states - 1)
    found = (lo < num_states) & jnp.all(keys[row] == queries, axis=-1)
    return jnp.where(found, solution.search_index[row], -1)


def optimal_action_mask(solution: Solution, states: State) -> jax.Array:
    """The optimal actions of each state of a batch (for the player to move): bool [B, A].

    All False for a terminal state and for a state not in the table (see `lookup`). Jittable.
    """
    index = lookup(solution, states)
    return jnp.where((index >= 0)[:, None], solution.optimal_actions[jnp.maximum(index, 0)], False)


def perfect_agent(solution: Solution) -> Callable[[jax.Array, State], jax.Array]:
    """A perfect player: `(key, states [B]) -> actions int32 [B]`, uniformly random among optimal actions.

    The returned function is pure and jittable. For a state not in the table (unreachable from the start) it
    falls back to a uniformly random legal action; for a terminal state (absorbing, so the action does not
    matter) it returns 0.
    """
    return functools.partial(_perfect_actions, solution)


def _perfect_actions(solution: Solution, key: jax.Array, states: State) -> jax.Array:
    index = lookup(solution, states)
    known = (index >= 0)[:, None]
    mask = jnp.where(known, solution.optimal_actions[jnp.maximum(index, 0)], states.legal_action_mask)
    logits = jnp.where(mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def policy_accuracy(
    solution: Solution, choose_actions: Callable[[State], jax.Array], *, batch_size: int = 1024
) -> float:
    """The fraction of reachable non-terminal positions in which `choose_actions` picks an optimal action.

    Each position counts once (not weighted by how often play reaches it). Runs on the host, feeding the
    positions in batches of exactly `batch_size` (the last one padded), so a jitted `choose_actions` compiles
    once.

    Args:
      solution: from `solve`.
      choose_actions: states [B] -> actions [B] (int), the move the agent would play in each position.
      batch_size: B.
    Returns:
      A float in [0, 1]; an action that is illegal or out of range counts as not optimal.
    """
    positions = np.flatnonzero(~np.asarray(solution.terminal))
    if positions.size == 0:
        raise ValueError("the solution has no non-terminal position to judge")
    num_actions = solution.optimal_actions.shape[1]
    hits = 0
    for start in range(0, positions.size, batch_size):
        chunk = positions[start : start + batch_size]
        padded = np.resize(chunk, batch_size)  # repeats the chunk to fill the batch
        actions = np.asarray(choose_actions(_take(solution.states, padded)))[: chunk.size]
        actions = actions.astype(np.int64)
        in_range = (actions >= 0) & (actions < num_actions)
        optimal = np.asarray(solution.optimal_actions)[chunk, np.clip(actions, 0, num_actions - 1)]
        hits += int(np.sum(in_range & optimal))
    return hits / positions.size
