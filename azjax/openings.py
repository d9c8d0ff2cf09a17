"""Openings: the moves a match's games start after, distinct where the game has enough, and hashes of positions.

Each pair of games of a match (`arena.run_games`) starts after `opening_moves` moves played by `opening_agent`
(default: uniformly random), so that deterministic agents do not replay one game. The openings of a match are
distinct wherever the game has enough of them: `OPENING_CANDIDATES` times as many are played as needed and repeats
are dropped first. Openings are told apart by the position they reach (every leaf of the game's state), not by
their moves: two move orders that reach one position are one opening (tic-tac-toe has 72 openings of 2 moves and
252 of 3, Connect Four 49 of 2; with more pairs than openings some must repeat). An opening move of
`opening_agent` that would end the game is replaced by a uniformly random move that does not (`non_ending_moves`),
so the default random openings are uniformly random among the moves that keep the game going; only where every
legal move ends the game does an opening stop shorter. With an exact solution at hand, `opening_agent` can be the
perfect player, whose moves are random among optimal ones: the openings then vary but never decide the game.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from azjax.bots import AgentFn, random_agent
from azjax.games import Game, State, lookahead
from azjax.matches import expand_to, record_moves
from azjax.solver import encode_states

OPENING_CANDIDATES = 4  # openings played per pair of games, among which distinct ones are chosen


def play_opening(
    key: jax.Array, game: Game, states: State, num_moves: jax.Array, max_moves: int, agent: AgentFn = random_agent
) -> State:
    """Lets `agent` play `num_moves` (int32 [B], each at most the static `max_moves`) moves from each state.

    A move of `agent` that would end the game is replaced by a uniformly random move that does not
    (`non_ending_moves`), so a non-terminal state stays non-terminal; where every legal move would end it, the
    opening stops there, shorter. Batched.
    """
    return _opening(key, game, states, num_moves, max_moves, agent)[0]


def non_ending_moves(game: Game, states: State) -> jax.Array:
    """bool [B, A]: the legal moves of each state after which the game goes on (none for a terminal state).

    Steps every legal move of every state a few at a time (`games.lookahead`), so that a game with many actions
    does not hold B * A states at once. Batched, jittable; the one rule for the openings of the arena and of
    `azjax play`.
    """
    return states.legal_action_mask & ~lookahead.ending_moves(game, states)


def _opening(
    key: jax.Array, game: Game, states: State, num_moves: jax.Array, max_moves: int, agent: AgentFn
) -> tuple[State, jax.Array]:
    """`play_opening`, also returning the moves played in each game: int32 [B, max_moves], in order, -1 after."""

    def body(i: int, carry: tuple[State, jax.Array]) -> tuple[State, jax.Array]:
        states, moves = carry
        agent_key, instead_key = jax.random.split(jax.random.fold_in(key, i))
        wanted = (i < num_moves) & ~states.terminated
        actions = agent(agent_key, states)
        moved = jax.vmap(game.step)(states, actions)
        # Stepping every action costs A steps per state: only when some move would end a game.
        actions, moved = jax.lax.cond(
            jnp.any(wanted & moved.terminated),
            functools.partial(_instead_of_ending, instead_key, game),
            lambda states, actions, moved: (actions, moved),
            states, actions, moved,
        )
        play = wanted & ~moved.terminated  # still terminal: every legal move ends the game
        states = jax.tree.map(lambda new, old: jnp.where(expand_to(play, new), new, old), moved, states)
        return states, record_moves(moves, actions, play)

    return jax.lax.fori_loop(0, max_moves, body, (states, jnp.full((*num_moves.shape, max_moves), -1, jnp.int32)))


def _instead_of_ending(key: jax.Array, game: Game, states: State, actions: jax.Array, moved: State
                       ) -> tuple[jax.Array, State]:
    """`actions` [B], where one ended its game (`moved`, the states after them) a uniformly random move that does
    not instead; and the states after the moves chosen. Where every legal move ends the game, the replacement
    ends it too (the caller does not play it)."""
    keep_going = non_ending_moves(game, states)
    other = jax.random.categorical(key, jnp.where(keep_going, 0.0, -jnp.inf)).astype(jnp.int32)
    chosen = jnp.where(moved.terminated, other, actions)
    return chosen, jax.vmap(game.step)(states, chosen)


def distinct_openings(key: jax.Array, game: Game, num_openings: int, num_moves: int, agent: AgentFn
                      ) -> tuple[State, jax.Array]:
    """`num_openings` openings of `num_moves` moves from the game's start: the states they reach [num_openings]
    and their moves int32 [num_openings, num_moves] (-1 after an opening that stopped shorter). Distinct in the
    position they reach where the game has enough: OPENING_CANDIDATES times as many are played, and the first copy
    of each position comes before any repeat (in a random order)."""
    init_key, opening_key, order_key = jax.random.split(key, 3)
    num_candidates = OPENING_CANDIDATES * num_openings
    states = jax.vmap(game.init)(jax.random.split(init_key, num_candidates))
    states, moves = _opening(opening_key, game, states, jnp.full(num_candidates, num_moves, jnp.int32), num_moves,
                             agent)
    rows = encode_states(states)  # [C, L]: equal iff the states are
    hashes = _row_hashes(rows)
    by_hash = jnp.lexsort((hashes[:, 1], hashes[:, 0]))  # copies are neighbours (rows too long to sort by)
    repeat = jnp.zeros(num_candidates, bool).at[by_hash[1:]].set(
        jnp.all(rows[by_hash[1:]] == rows[by_hash[:-1]], axis=1))
    chosen = jnp.lexsort((jax.random.uniform(order_key, (num_candidates,)), repeat))[:num_openings]
    return jax.tree.map(lambda x: x[chosen], states), moves[chosen]


def state_hashes(states: State) -> jax.Array:
    """uint32 [B, 2]: a 64-bit hash of each state of a batch, over every leaf (`solver.encode_states`). Equal
    states hash alike; two different ones collide with a chance of the order of 2^-64. Jittable, the same on
    every device (so games from several devices compare)."""
    return _row_hashes(encode_states(states))


def _row_hashes(rows: jax.Array) -> jax.Array:
    """uint32 [B, 2]: two 32-bit hashes of each int32 row [B, L], each a sum of mixed (value, column) pairs."""
    values = jax.lax.bitcast_convert_type(rows, jnp.uint32)
    columns = jnp.arange(rows.shape[1], dtype=jnp.uint32)
    return jnp.stack([jnp.sum(_mix(values ^ _mix(columns * jnp.uint32(2) + jnp.uint32(seed))), axis=1,
                              dtype=jnp.uint32)
                      for seed in (0x9E3779B9, 0x7F4A7C15)], axis=1)


def _mix(x: jax.Array) -> jax.Array:
    """MurmurHash3's 32-bit finalizer: every input bit moves about half the output bits."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)
