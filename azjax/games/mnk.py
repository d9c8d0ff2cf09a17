"""k-in-a-row games on an H x W board (m,n,k-games): tic-tac-toe is (3, 3, 3), Gomoku is (15, 15, 5).

Action = row * W + col, row 0 at the top. Players alternately place a stone on an empty cell; the first to make
an unbroken line of k stones (row, column or diagonal) wins; a full board is a draw. Observation: float32
[H, W, 2], the mover's stones then the opponent's.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from azjax.games import boards
from azjax.games.base import Game, board_symmetries, resolve_step


def _legal_cells(board: jax.Array) -> jax.Array:
    return board == boards.EMPTY


def _init(key: jax.Array, *, height: int, width: int) -> boards.BoardState:
    del key  # deterministic start
    board = jnp.zeros(height * width, jnp.int8)
    return boards.BoardState(
        current_player=jnp.int32(0),
        legal_action_mask=_legal_cells(board),
        terminated=jnp.bool_(False),
        rewards=jnp.zeros(2, jnp.float32),
        board=board,
    )


def _step(state: boards.BoardState, action: jax.Array, *, windows) -> boards.BoardState:
    action = jnp.asarray(action, jnp.int32)
    cell = jnp.clip(action, 0, state.board.shape[0] - 1)
    return resolve_step(state, boards.place_stone(state, cell, windows, _legal_cells), action)


def make_mnk_game(name: str, height: int, width: int, k: int) -> Game:
    """A k-in-a-row game on an H x W board; see the module docstring."""
    windows = boards.line_windows(height, width, k)
    return Game(
        name=name,
        num_actions=height * width,
        observation_shape=(height, width, 2),
        max_length=height * width,
        init=functools.partial(_init, height=height, width=width),
        step=functools.partial(_step, windows=windows),
        observe=lambda s: boards.stone_planes(s.board, s.current_player, height, width),
        render=lambda s: boards.render_state(s, height, width),
        symmetries=board_symmetries(height, width),
        from_ascii=lambda text: boards.state_from_board(
            boards.parse_board(text, height, width), windows, _legal_cells
        ),
        action_to_string=lambda a: boards.cell_name(int(a), width, height),
        string_to_action=lambda text: boards.parse_cell(text, width, height),
    )


def make_tic_tac_toe() -> Game:
    """Tic-tac-toe: 3 x 3, three in a row; action = row * 3 + col."""
    return make_mnk_game("tic_tac_toe", 3, 3, 3)
