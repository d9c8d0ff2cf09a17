"""games.lookahead and the agents built on it (onestep, greedy, the arena's openings), against a brute-force
reference that steps every action of every state at once, on random positions of several games; and onestep's
peak memory on Brandub, the game whose 1176 actions made the brute force ask for 209 GB."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny import jit_optimised

from azjax import bots, games, openings
from azjax.games import Game, State, lookahead, random_opening

NUM_POSITIONS = 48


@functools.partial(jit_optimised, static_argnums=(0, 2))
def random_positions(game: Game, seed: int, num_positions: int = NUM_POSITIONS) -> State:
    """Positions after 0 to max_length random moves (never terminal), then in every third one more move, one that
    ends the game where there is one: a mix of openings, middle games with threats, and finished games."""
    key = jax.random.key(seed)
    length_key, opening_key, init_key = jax.random.split(key, 3)
    max_moves = min(game.max_length, 60)
    lengths = jax.random.randint(length_key, (num_positions,), 0, max_moves + 1)
    states = jax.vmap(game.init)(jax.random.split(init_key, num_positions))
    opening = jax.vmap(functools.partial(random_opening, game=game, max_moves=max_moves))
    states, _ = opening(jax.random.split(opening_key, num_positions), state=states, num_moves=lengths)
    ending = states.legal_action_mask & step_every_action(game, states).terminated
    last = jnp.argmax(jnp.where(ending.any(-1, keepdims=True), ending, states.legal_action_mask), axis=-1)
    stepped = jax.vmap(game.step)(states, last.astype(jnp.int32))
    third = (jnp.arange(num_positions) % 3 == 0)
    return jax.tree.map(lambda new, old: jnp.where(third.reshape(-1, *[1] * (new.ndim - 1)), new, old),
                        stepped, states)


def step_every_action(game: Game, states: State) -> State:
    """The brute force: [B, A] states, every action of every state (illegal ones included)."""
    return jax.vmap(jax.vmap(game.step, in_axes=(None, 0)), in_axes=(0, None))(
        states, jnp.arange(game.num_actions))


# The brute force compiled (a test's own call; random_positions traces step_every_action inside its program).
every_action = jit_optimised(step_every_action, static_argnums=0)
every_reply = jit_optimised(lambda game, states: jax.vmap(functools.partial(step_every_action, game))(states),
                            static_argnums=0)


def reward_of(states: State, player: jax.Array) -> jax.Array:
    return jnp.take_along_axis(states.rewards, player[..., None], axis=-1)[..., 0]


@functools.cache
def game_named(name: str) -> Game:
    return games.make(name)


@pytest.mark.parametrize("name", ["tic_tac_toe", "connect_four", pytest.param("othello6", marks=pytest.mark.slow)])
def test_map_legal_moves_matches_stepping_every_action(name):
    game = game_named(name)
    states = random_positions(game, seed=len(name))
    assert bool(states.terminated.any()) and bool((~states.terminated).any())

    def features(children: State, actions: jax.Array) -> jax.Array:  # depends on the child and the action
        observed = jax.vmap(jax.vmap(game.observe))(children)
        return jnp.sum(observed, axis=tuple(range(2, observed.ndim))) + 1000.0 * children.terminated + actions

    # A chunk that divides no game's actions, so that the last chunk of each state is partly padding.
    got = np.asarray(jit_optimised(functools.partial(lookahead.map_legal_moves, game, fn=features, fill=jnp.nan,
                                                     chunk=4))(states))
    children = every_action(game, states)
    want = np.asarray(features(children, jnp.broadcast_to(jnp.arange(game.num_actions), children.terminated.shape)))
    legal = np.asarray(states.legal_action_mask)
    np.testing.assert_allclose(got[legal], want[legal], rtol=1e-6)
    assert np.isnan(got[~legal]).all()


@pytest.mark.parametrize("name", ["connect_four", pytest.param("othello6", marks=pytest.mark.slow), "gomoku9"])
def test_onestep_matches_the_brute_force(name):
    """onestep's values of every move and its choice, against every move and every reply stepped at once."""
    game = game_named(name)
    states = random_positions(game, seed=7 + len(name))
    mover = states.current_player
    legal = states.legal_action_mask
    children = every_action(game, states)  # [B, A]
    won = legal & children.terminated & (reward_of(children, jnp.broadcast_to(mover[:, None], legal.shape)) > 0)
    replies = every_reply(game, children)  # [B, A, A]
    loss = children.legal_action_mask & (reward_of(replies, jnp.broadcast_to(mover[:, None, None],
                                                                             replies.terminated.shape)) < 0)
    allows_loss = legal & loss.any(-1)
    want = np.where(won, 1.0, np.where(allows_loss, -1.0, np.nan))

    analysis = jit_optimised(bots.onestep_bot(game).analyse)(jax.random.key(0), states)
    np.testing.assert_array_equal(np.asarray(analysis.action_values), want)
    action = np.asarray(analysis.action)
    rows = np.arange(len(action))
    live = ~np.asarray(states.terminated)
    has_win, has_safe = np.asarray(won).any(-1), np.asarray(legal & ~allows_loss).any(-1)
    assert np.asarray(legal)[rows, action][live].all()
    assert np.asarray(won)[rows, action][live & has_win].all()
    assert (~np.asarray(allows_loss)[rows, action])[live & ~has_win & has_safe].all()
    np.testing.assert_array_equal(np.asarray(analysis.value)[live & has_win], 1.0)
    # The brute force found wins and losses to check in these positions, not only quiet moves.
    assert np.asarray(won).any() and np.asarray(allows_loss).any()


def test_non_ending_moves_matches_the_brute_force():
    game = game_named("connect_four")
    states = random_positions(game, seed=3)
    children = every_action(game, states)
    want = states.legal_action_mask & ~children.terminated
    np.testing.assert_array_equal(np.asarray(openings.non_ending_moves(game, states)), np.asarray(want))
    assert bool((states.legal_action_mask & children.terminated).any())  # some legal move did end a game


def state_bytes(game: Game) -> int:
    shapes = jax.eval_shape(game.init, jax.random.key(0))
    return sum(math.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(shapes))


@pytest.mark.slow  # Brandub's 1176 actions one by one; the default suite keeps the smaller games
def test_onestep_on_brandub_within_bounded_memory():
    """XLA's memory analysis of the compiled onestep: within what B * A states take (one full look ahead), where
    stepping every move and every reply at once asked for B * A * A states (26 GB for 8 positions)."""
    game = game_named("brandub")
    num_states = 32
    states = random_positions(game, seed=11, num_positions=num_states)
    compiled = jit_optimised(bots.onestep_bot(game).analyse).lower(jax.random.key(0), states).compile()
    bound = num_states * game.num_actions * state_bytes(game)
    peak = compiled.memory_analysis().temp_size_in_bytes
    assert 0 < peak <= bound, (peak, bound)
    analysis = compiled(jax.random.key(0), states)
    live = ~np.asarray(states.terminated)
    assert np.asarray(states.legal_action_mask)[np.arange(num_states), np.asarray(analysis.action)][live].all()
