"""Dice race, written as a game of your own with chance: the worked example of the guide's "A game with chance".

Two players race from square 0 to square GOAL. On a turn the player to move either steps 1 square, for sure, or
throws a die whose six faces read 0, 1, 1, 2, 2, 3 and moves that many squares. The first to reach GOAL wins (+1,
the other -1); the turn passes after every move; a game still running after MAX_MOVES moves is drawn.

Chance: after every move, one of 4 outcomes, the squares moved: after a throw 0, 1, 2 or 3 with probabilities 1/6,
1/3, 1/3, 1/6; after a step all the weight on outcome 1. From the repository root::

    azjax check examples/dice_race.py:make_dice_race
    azjax train --game examples/dice_race.py:make_dice_race --out runs/dice_race --seconds 60
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from azjax import games

GOAL, MAX_MOVES = 10, 40
STEP, THROW = 0, 1
ACTIONS = ("step", "throw")
DIE = (0, 1, 1, 2, 2, 3)  # the die's faces: the squares a throw moves
THROW_PROBABILITIES = tuple(np.bincount(DIE) / len(DIE))  # outcome c = c squares: 1/6, 1/3, 1/3, 1/6


class DiceRaceState(games.State):
    """The common `State` fields, plus:

    Attributes:
      positions: [2] int32, each player's square (by player id), 0 to GOAL.
      last_move: [] int32, the squares the last move went (0 at the start).
      num_moves: [] int32, the moves played.
      chance_key: [2] uint32, the key `step` throws the die with (`chance_game_steps` advances it).
    """

    positions: jax.Array
    last_move: jax.Array
    num_moves: jax.Array
    chance_key: jax.Array


def _init(key: jax.Array) -> DiceRaceState:
    return DiceRaceState(current_player=jnp.int32(0), legal_action_mask=jnp.ones(2, jnp.bool_),
                         terminated=jnp.bool_(False), rewards=jnp.zeros(2, jnp.float32),
                         positions=jnp.zeros(2, jnp.int32), last_move=jnp.int32(0), num_moves=jnp.int32(0),
                         chance_key=games.chance_key_data(key))


def _chance_outcomes(state: DiceRaceState, action: jax.Array) -> jax.Array:
    """float32 [4]: the exact probability of moving 0, 1, 2 or 3 squares after `action`."""
    del state  # the same die everywhere
    return jnp.where(action == THROW, jnp.array(THROW_PROBABILITIES, jnp.float32),
                     jax.nn.one_hot(1, 4, dtype=jnp.float32))  # a step: no chance, 1 square for sure


def _transition(state: DiceRaceState, action: jax.Array, outcome: jax.Array) -> DiceRaceState:
    """The move `action` followed by `outcome`; `resolve_step` adds finished games and illegal moves."""
    action = jnp.asarray(action, jnp.int32)
    mover = state.current_player
    squares = jnp.where(action == THROW, outcome, 1)
    positions = jnp.minimum(state.positions.at[mover].add(squares), GOAL)
    won = positions[mover] == GOAL
    over = won | (state.num_moves + 1 >= MAX_MOVES)
    new_state = state.replace(
        current_player=1 - mover,  # the turn passes after every move, whatever the die says
        legal_action_mask=jnp.full(2, ~over),
        terminated=over,
        rewards=jnp.where(won, jnp.where(jnp.arange(2) == mover, 1.0, -1.0), 0.0).astype(jnp.float32),
        positions=positions, last_move=squares, num_moves=state.num_moves + 1)
    return games.resolve_step(state, new_state, action)


def _observe(state: DiceRaceState) -> jax.Array:
    """float32 [2 * GOAL + 1]: thermometers of the mover's and the opponent's squares, then the moves left."""
    mover = state.current_player
    mine, theirs = state.positions[mover], state.positions[1 - mover]
    squares = jnp.arange(GOAL)
    left = (MAX_MOVES - state.num_moves) / MAX_MOVES
    return jnp.concatenate([squares < mine, squares < theirs, left[None]]).astype(jnp.float32)


def _render(state: DiceRaceState) -> str:
    x, o = (int(p) for p in np.asarray(state.positions))
    rewards = np.asarray(state.rewards)
    head = ("X won" if rewards[0] > 0 else "O won" if rewards[1] > 0 else "drawn") if bool(state.terminated) else \
        f"{'XO'[int(state.current_player)]} to move"
    return (f"dice race to {GOAL}, {head}\nX {x}  O {o}  last move {int(state.last_move)}  "
            f"moves {int(state.num_moves)}")


def make_dice_race() -> games.Game:
    """Dice race to GOAL; see the module docstring."""
    step, step_outcome = games.chance_game_steps(_chance_outcomes, _transition)
    return games.Game(
        name="dice_race", num_actions=2, observation_shape=(2 * GOAL + 1,), max_length=MAX_MOVES,
        init=_init, step=step, observe=_observe, render=_render,
        action_to_string=lambda action: ACTIONS[int(action)],
        string_to_action=lambda text: ACTIONS.index(text.strip().lower()),
        num_chance_outcomes=4, chance_outcomes=_chance_outcomes, step_outcome=step_outcome)
