"""Lights Out on 3 x 3, written as a puzzle of your own: the worked example of the guide's "A puzzle of your own".

Nine lights, some on. Pressing a cell toggles it and its up to four neighbours (up, down, left, right); the puzzle
is solved when every light is off. One player; every press pays -1, so the return from a position is minus the
presses it takes; an episode ends when the lights are all off or after MAX_MOVES presses (then unsolved, having
paid -MAX_MOVES in all): `return_bounds` (-MAX_MOVES, 0). Actions 0 .. 8, the cell pressed (row * 3 + col).
Starts: one of the 511 patterns with a light on, uniformly.

The puzzle brings its own exact judge (`yardstick`): the fewest presses from each of the 512 patterns, by a
breadth-first search from the dark board in plain numpy (every pattern on 3 x 3 can be solved, in 9 presses at
most), with which training's evaluation and `azjax eval` report the share of episodes solved and solved in the
fewest presses. From the repository root::

    azjax check examples/lights_out.py:make_lights_out
    azjax train --game examples/lights_out.py:make_lights_out --out runs/lights_out --seconds 120
    azjax eval runs/lights_out random --games 1000
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from azjax import games

SIZE, MAX_MOVES = 3, 20
CELLS = SIZE * SIZE


def _press_masks() -> np.ndarray:
    """bool [9, 9]: the lights each press toggles (the cell and its neighbours)."""
    masks = np.zeros((CELLS, CELLS), bool)
    for cell in range(CELLS):
        row, col = divmod(cell, SIZE)
        for dr, dc in ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)):
            if 0 <= row + dr < SIZE and 0 <= col + dc < SIZE:
                masks[cell, (row + dr) * SIZE + col + dc] = True
    return masks


PRESSES = _press_masks()


class LightsOutState(games.State):
    """The common `State` fields, plus:

    Attributes:
      lights: [9] bool, which lights are on (row-major).
      num_moves: [] int32, the presses made.
    """

    lights: jax.Array
    num_moves: jax.Array


def _state_of(lights: jax.Array, num_moves: jax.Array, reward: jax.Array) -> LightsOutState:
    over = ~jnp.any(lights) | (num_moves >= MAX_MOVES)
    return LightsOutState(current_player=jnp.int32(0), legal_action_mask=jnp.full(CELLS, ~over),
                          terminated=over, rewards=jnp.stack([reward, jnp.float32(0.0)]), lights=lights,
                          num_moves=num_moves)


def _init(key: jax.Array) -> LightsOutState:
    pattern = jax.random.randint(key, (), 1, 2 ** CELLS)  # never 0, the dark board
    lights = (pattern >> jnp.arange(CELLS)) & 1 == 1
    return _state_of(lights, jnp.int32(0), jnp.float32(0.0))


def _step(state: LightsOutState, action: jax.Array) -> LightsOutState:
    action = jnp.asarray(action, jnp.int32)
    lights = state.lights ^ jnp.asarray(PRESSES)[jnp.clip(action, 0, CELLS - 1)]
    pressed = _state_of(lights, state.num_moves + 1, jnp.float32(-1.0))
    # An illegal press ends the episode at the lowest return, -MAX_MOVES: the presses so far paid -1 each.
    return games.resolve_step(state, pressed, action,
                              illegal_reward=(state.num_moves - MAX_MOVES).astype(jnp.float32))


def _observe(state: LightsOutState) -> jax.Array:
    lights = state.lights.astype(jnp.float32).reshape(SIZE, SIZE, 1)
    spent = jnp.full((SIZE, SIZE, 1), state.num_moves / MAX_MOVES, jnp.float32)  # the budget used
    return jnp.concatenate([lights, spent], axis=-1)


def _render(state: LightsOutState) -> str:
    lights = np.asarray(state.lights).reshape(SIZE, SIZE)
    rows = [" ".join("#" if on else "." for on in row) for row in lights]
    return "\n".join([*rows, f"presses {int(state.num_moves)} of {MAX_MOVES}"])


@functools.cache
def fewest_presses_table() -> np.ndarray:
    """int [512]: the fewest presses that turn each pattern (bit i = light i) dark, by breadth-first search."""
    press_bits = np.array([sum(1 << i for i in np.flatnonzero(mask)) for mask in PRESSES])
    table = np.full(2 ** CELLS, -1, np.int64)
    table[0], frontier, depth = 0, np.array([0]), 0
    while len(frontier):
        depth += 1
        reached = np.unique((frontier[:, None] ^ press_bits[None, :]).ravel())
        frontier = reached[table[reached] < 0]
        table[frontier] = depth
    return table


def _fewest_moves(states: LightsOutState) -> np.ndarray:
    """int [B]: the fewest presses from each state of a batch (host-side, numpy)."""
    patterns = np.asarray(states.lights, np.int64) @ (1 << np.arange(CELLS))
    return fewest_presses_table()[patterns]


def make_lights_out() -> games.Game:
    """3 x 3 Lights Out (see the module docstring), judged by its exact fewest presses."""
    return games.Game(
        name="lights_out",
        num_actions=CELLS,
        observation_shape=(SIZE, SIZE, 2),
        max_length=MAX_MOVES,
        init=_init,
        step=_step,
        observe=_observe,
        render=_render,
        action_to_string=lambda action: f"r{int(action) // SIZE + 1}c{int(action) % SIZE + 1}",
        string_to_action=_string_to_action,
        num_players=1,
        return_bounds=(-float(MAX_MOVES), 0.0),
        yardstick=games.Yardstick(is_solved=lambda state: ~jnp.any(state.lights), fewest_moves=_fewest_moves),
    )


def _string_to_action(text: str) -> int:
    word = text.strip().lower()
    if len(word) == 4 and word[0] == "r" and word[2] == "c" and word[1] in "123" and word[3] in "123":
        return (int(word[1]) - 1) * SIZE + int(word[3]) - 1
    raise ValueError(f"{text!r} is not a press: name the cell as r<row>c<col>, rows and columns 1 to 3 (e.g. r2c3)")
