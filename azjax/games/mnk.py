"""k-in-a-row games on an H x W board (m,n,k-games): tic-tac-toe is (3, 3, 3), Gomoku is (15, 15, 5).

Action = row * W + col, row 0 at the top. Players alternately place a stone on an empty cell; the first to make
an unbroken line of k stones (row, column or diagonal) wins; a full board is a draw. With `exact`, only a line of
exactly k stones wins: an overline of k + 1 or more does not (it is no line, and play goes on). Observation:
float32 [H, W, 2], the mover's stones then the opponent's.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from azjax.games import boards, drawing
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


def _step(state: boards.BoardState, action: jax.Array, *, windows, exact: bool) -> boards.BoardState:
    action = jnp.asarray(action, jnp.int32)
    cell = jnp.clip(action, 0, state.board.shape[0] - 1)
    return resolve_step(state, boards.place_stone(state, cell, windows, _legal_cells, exact=exact), action)


def make_mnk_game(name: str, height: int, width: int, k: int, *, exact: bool = False) -> Game:
    """A k-in-a-row game on an H x W board; see the module docstring.

    Args:
      name: the game's name.
      height, width: the board's size.
      k: the length of a winning line.
      exact: only a line of exactly k stones wins; by default k or more.
    Raises:
      ValueError: unless height and width are positive ints and 1 <= k <= max(height, width) (a longer line
        fits nowhere on the board, and the line tables would make every first move a win).
    """
    sizes = {"height": height, "width": width, "k": k}
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in sizes.values()) or min(height, width) < 1:
        raise ValueError(f"{name}: height, width and k must be whole numbers and the sizes positive, got {sizes}")
    if not 1 <= k <= max(height, width):
        raise ValueError(
            f"{name}: k={k} must be from 1 to max(height, width) = {max(height, width)}, the longest line a "
            f"{height} x {width} board holds"
        )
    # With `exact`, each window of k cells carries its two neighbours along the line (see boards.line_windows).
    windows = boards.line_windows(height, width, k, with_ends=exact)
    return Game(
        name=name,
        num_actions=height * width,
        observation_shape=(height, width, 2),
        max_length=height * width,
        init=functools.partial(_init, height=height, width=width),
        step=functools.partial(_step, windows=windows, exact=exact),
        observe=lambda s: boards.stone_planes(s.board, s.current_player, height, width),
        render=lambda s: boards.render_state(s, height, width),
        symmetries=board_symmetries(height, width),
        from_ascii=lambda text: boards.state_from_board(
            boards.parse_board(text, height, width), windows, _legal_cells, exact=exact
        ),
        action_to_string=lambda a: boards.cell_name(int(a), width, height),
        string_to_action=lambda text: boards.parse_cell(text, width, height),
        draw=functools.partial(drawing.draw_mnk, height=height, width=width),
    )


def make_tic_tac_toe() -> Game:
    """Tic-tac-toe: 3 x 3, three in a row; action = row * 3 + col."""
    return make_mnk_game("tic_tac_toe", 3, 3, 3)


def _gomoku(registry_name: str, default_size: int, size: int, exact: bool) -> Game:
    """Gomoku under `registry_name`, named with the options that differ from that name's defaults."""
    if not isinstance(size, int) or not 5 <= size <= len(boards.COLUMN_LETTERS):
        raise ValueError(f"gomoku: size must be a whole number from 5 to {len(boards.COLUMN_LETTERS)}, got {size!r}")
    options = [f"size={size}"] if size != default_size else []
    options += ["exact=True"] if exact else []
    name = f"{registry_name}({', '.join(options)})" if options else registry_name
    return make_mnk_game(name, size, size, 5, exact=bool(exact))


def make_gomoku(size: int = 15, exact: bool = False) -> Game:
    """Gomoku (Gobang, five in a row) on a size x size board; action = row * size + col.

    Args:
      size: the board's side, 15 by default (9 trains fast: see `make_gomoku9`).
      exact: only exactly five in a row wins, an overline of six or more does not; by default five or more win
        (freestyle Gomoku).
    """
    return _gomoku("gomoku", 15, size, exact)


def make_gomoku9(exact: bool = False) -> Game:
    """Gomoku on 9 x 9, `make_gomoku(size=9)` under its own name "gomoku9" (for presets and fast training)."""
    return _gomoku("gomoku9", 9, 9, exact)
