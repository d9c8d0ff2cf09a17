"""Connect Four: 7 columns x 6 rows; action = column 0..6; the stone drops to the lowest empty cell.

Four in a row (horizontal, vertical or diagonal) wins; a full board is a draw. The board is row-major with row 0
at the top; `render` numbers rows 1..6 from the bottom, as people do. Observation: float32 [6, 7, 2], the mover's
stones then the opponent's. The only board symmetry is the left-right mirror.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from azjax.games import boards, drawing
from azjax.games.base import Game, Symmetry, resolve_step

HEIGHT, WIDTH = 6, 7
_WINDOWS = boards.line_windows(HEIGHT, WIDTH, 4)


def _legal_columns(board: jax.Array) -> jax.Array:
    return board[:WIDTH] == boards.EMPTY  # a column is open while its top cell is empty


def _init(key: jax.Array) -> boards.BoardState:
    del key  # deterministic start
    board = jnp.zeros(HEIGHT * WIDTH, jnp.int8)
    return boards.BoardState(
        current_player=jnp.int32(0),
        legal_action_mask=_legal_columns(board),
        terminated=jnp.bool_(False),
        rewards=jnp.zeros(2, jnp.float32),
        board=board,
    )


def _step(state: boards.BoardState, action: jax.Array) -> boards.BoardState:
    action = jnp.asarray(action, jnp.int32)
    column = jnp.clip(action, 0, WIDTH - 1)
    num_empty = jnp.sum(state.board.reshape(HEIGHT, WIDTH)[:, column] == boards.EMPTY)
    cell = jnp.maximum(num_empty - 1, 0) * WIDTH + column  # the lowest empty cell (full columns are illegal)
    return resolve_step(state, boards.place_stone(state, cell, _WINDOWS, _legal_columns), action)


def _from_ascii(text: str) -> boards.BoardState:
    board = boards.parse_board(text, HEIGHT, WIDTH)
    grid = board.reshape(HEIGHT, WIDTH)
    for col in range(WIDTH):
        filled = grid[:, col] != boards.EMPTY
        # Stones rest on the bottom or on other stones: once a cell is filled, every cell below it is.
        if any(filled[r] and not filled[r + 1] for r in range(HEIGHT - 1)):
            raise ValueError(f"column {boards.COLUMN_LETTERS[col]} has a stone floating above an empty cell")
    return boards.state_from_board(board, _WINDOWS, _legal_columns)


def _string_to_action(text: str) -> int:
    text = text.strip().lower()
    if len(text) == 1 and text in boards.COLUMN_LETTERS[:WIDTH]:
        return boards.COLUMN_LETTERS.index(text)
    if text.isdecimal() and 1 <= int(text) <= WIDTH:
        return int(text) - 1
    raise ValueError(f"cannot read {text!r} as a move: write a column letter a-g (or its number 1-7)")


def make_connect_four() -> Game:
    """Connect Four; see the module docstring."""
    return Game(
        name="connect_four",
        num_actions=WIDTH,
        observation_shape=(HEIGHT, WIDTH, 2),
        max_length=HEIGHT * WIDTH,
        init=_init,
        step=_step,
        observe=lambda s: boards.stone_planes(s.board, s.current_player, HEIGHT, WIDTH),
        render=lambda s: boards.render_state(s, HEIGHT, WIDTH, bottom_up=True),
        symmetries=(Symmetry("flip_lr", lambda obs: obs[:, ::-1], tuple(reversed(range(WIDTH)))),),
        from_ascii=_from_ascii,
        action_to_string=lambda a: boards.COLUMN_LETTERS[int(a)],
        string_to_action=_string_to_action,
        draw=functools.partial(drawing.draw_connect_four, height=HEIGHT, width=WIDTH),
    )
