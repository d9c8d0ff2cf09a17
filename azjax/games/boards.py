"""Shared machinery of the stone-placing games (tic-tac-toe, Connect Four, Gomoku; Othello uses the board and text).

Boards are flat int8 arrays [H * W] in row-major order, row 0 at the top: 0 empty, 1 a stone of player 0 ("X"),
2 a stone of player 1 ("O"). The ASCII form, printed by `render_board` and read by `parse_board`, is::

       a b c
     1 X . O
     2 . X .
     3 . . O
    X to move

Row numbers and column letters are optional when parsing, and a row may be written without spaces ("X.O").
"""

from __future__ import annotations

import string
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games.base import State

EMPTY, STONE_X, STONE_O = 0, 1, 2
_CELL_CHARS = {".": EMPTY, "X": STONE_X, "O": STONE_O}
_CHAR_OF = {v: k for k, v in _CELL_CHARS.items()}
COLUMN_LETTERS = string.ascii_lowercase


def line_windows(height: int, width: int, length: int, *, with_ends: bool = False) -> np.ndarray:
    """Every straight window of `length` cells (rows, columns, both diagonals) that contains each cell.

    Returns an int32 array [H * W, M, length] of flat cell indices, where M is the largest number of windows any
    cell lies in. Rows of cells with fewer windows are padded with the index H * W, a sentinel cell that callers
    append to the board and keep empty.

    With `with_ends`, each window also holds its two neighbours along the line, first and last: [H * W, M,
    length + 2], a neighbour off the board being the sentinel. `completes_line(..., exact=True)` uses them to
    tell a line of exactly `length` from a longer one.
    """
    sentinel = height * width
    margin = 1 if with_ends else 0
    per_cell: list[list[list[int]]] = [[] for _ in range(height * width)]
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        for r in range(height):
            for c in range(width):
                cells = [(r + i * dr, c + i * dc) for i in range(length)]
                if all(0 <= rr < height and 0 <= cc < width for rr, cc in cells):
                    span = [(r + i * dr, c + i * dc) for i in range(-margin, length + margin)]
                    window = [rr * width + cc if 0 <= rr < height and 0 <= cc < width else sentinel for rr, cc in span]
                    for rr, cc in cells:
                        per_cell[rr * width + cc].append(window)
    most = max(len(w) for w in per_cell)
    padded = [w + [[sentinel] * (length + 2 * margin)] * (most - len(w)) for w in per_cell]
    return np.asarray(padded, dtype=np.int32)


def completes_line(
    board: jax.Array, cell: jax.Array, stone: jax.Array, windows: np.ndarray, *, exact: bool = False
) -> jax.Array:
    """Whether the windows through `cell` hold a full line of `stone` (after that stone was placed there).

    Args:
      board: int8 [H * W], the board after the move.
      cell: int32 [], the cell just played.
      stone: int8 [], the mover's stone (1 or 2).
      windows: the static table of `line_windows` (built `with_ends` when `exact`).
      exact: only a line of exactly the window's length counts, not a longer one (an overline): the window's two
        neighbours, the sentinel off the board, must not hold `stone`.
    Returns:
      bool [].
    """
    extended = jnp.concatenate([board, jnp.zeros((1,), board.dtype)])
    cells = extended[jnp.asarray(windows)[cell]]  # [M, length], or [M, length + 2] with the ends
    if not exact:
        return jnp.any(jnp.all(cells == stone, axis=-1))
    full = jnp.all(cells[:, 1:-1] == stone, axis=-1)
    return jnp.any(full & (cells[:, 0] != stone) & (cells[:, -1] != stone))


def stone_planes(board: jax.Array, current_player: jax.Array, height: int, width: int) -> jax.Array:
    """The observation of a stone board from the side to move: float32 [H, W, 2], own stones then the opponent's."""
    own = (current_player + 1).astype(board.dtype)
    opponent = (2 - current_player).astype(board.dtype)
    planes = jnp.stack([board == own, board == opponent], axis=-1).astype(jnp.float32)
    return planes.reshape(height, width, 2)


def render_board(board: np.ndarray, height: int, width: int, *, row_labels: list[str] | None = None) -> str:
    """The board as text with column letters on top and row labels (1 at the top by default) on the left."""
    board = np.asarray(board).reshape(height, width)
    labels = row_labels or [str(r + 1) for r in range(height)]
    pad = max(len(label) for label in labels)
    lines = [" " * (pad + 1) + " ".join(COLUMN_LETTERS[:width])]
    for r in range(height):
        cells = " ".join(_CHAR_OF[int(v)] for v in board[r])
        lines.append(f"{labels[r]:>{pad}} {cells}")
    return "\n".join(lines)


def status_line(terminated: bool, rewards: np.ndarray, current_player: int) -> str:
    """'X to move', 'X wins', 'O wins' or 'draw' (X is player 0)."""
    if not terminated:
        return f"{'XO'[current_player]} to move"
    if rewards[0] > 0:
        return "X wins"
    if rewards[1] > 0:
        return "O wins"
    return "draw"


def parse_board(text: str, height: int, width: int) -> np.ndarray:
    """Reads the cells of an ASCII board (see the module docstring) into a flat int8 array [H * W].

    Raises:
      ValueError: naming the problem when the text does not hold an H x W board of 'X', 'O' and '.'.
    """
    rows = []
    for line in text.strip("\n").splitlines():
        tokens = line.split()
        if not tokens:
            continue
        cells: list[int] = []
        is_board_line = True
        for position, token in enumerate(tokens):
            if position == 0 and token.isdecimal():
                continue  # a row label
            if all(ch in _CELL_CHARS for ch in token):
                cells.extend(_CELL_CHARS[ch] for ch in token)
            else:
                is_board_line = False
                break
        if is_board_line and cells:
            rows.append(cells)
    if len(rows) != height or any(len(row) != width for row in rows):
        found = f"{len(rows)} rows of lengths {[len(r) for r in rows]}"
        raise ValueError(
            f"expected a {height} x {width} board of 'X', 'O' and '.', found {found}. Write one row per line, "
            "e.g. 'X . O' or 'X.O'; row numbers and a header of column letters are optional."
        )
    return np.asarray(rows, dtype=np.int8).ravel()


def check_stone_counts(board: np.ndarray) -> int:
    """The player to move on a board where X moves first; raises ValueError if the counts cannot occur."""
    num_x = int(np.sum(board == STONE_X))
    num_o = int(np.sum(board == STONE_O))
    if num_x - num_o not in (0, 1):
        raise ValueError(
            f"X moves first and the players alternate, so X has as many stones as O or one more; "
            f"this board has {num_x} X and {num_o} O"
        )
    return num_x - num_o


def board_has_line(board: np.ndarray, stone: int, windows: np.ndarray, *, exact: bool = False) -> bool:
    """Whether `stone` has a full line anywhere on the (numpy) board; for parsing, not for jitted code. `windows`
    and `exact` as for `completes_line`."""
    cells = np.concatenate([board, [EMPTY]])[windows]
    if not exact:
        return bool(np.any(np.all(cells == stone, axis=-1)))
    full = np.all(cells[..., 1:-1] == stone, axis=-1)
    return bool(np.any(full & (cells[..., 0] != stone) & (cells[..., -1] != stone)))


def cell_name(cell: int, width: int, height: int, *, bottom_up: bool = False) -> str:
    """A cell's name, column letter then row number ("b3"); rows count from the top unless `bottom_up`."""
    row, col = divmod(cell, width)
    number = height - row if bottom_up else row + 1
    return f"{COLUMN_LETTERS[col]}{number}"


def parse_cell(text: str, width: int, height: int, *, bottom_up: bool = False) -> int:
    """Parses a cell name like "b3" (see `cell_name`); raises ValueError with the expected form."""
    text = text.strip().lower()
    hint = f"a column letter a-{COLUMN_LETTERS[width - 1]} then a row number 1-{height}, e.g. 'b2'"
    if len(text) < 2 or text[0] not in COLUMN_LETTERS[:width] or not text[1:].isdecimal():
        raise ValueError(f"cannot read {text!r} as a move: write {hint}")
    col, number = COLUMN_LETTERS.index(text[0]), int(text[1:])
    if not 1 <= number <= height:
        raise ValueError(f"row {number} is off the board: write {hint}")
    row = height - number if bottom_up else number - 1
    return row * width + col


class BoardState(State):
    """The state of a stone-placing game: the common fields plus the board."""

    board: jax.Array
    """[H * W] int8: 0 empty, 1 = player 0 (X), 2 = player 1 (O); row 0 at the top."""


def place_stone(
    state: BoardState,
    cell: jax.Array,
    windows: np.ndarray,
    legal_fn: Callable[[jax.Array], jax.Array],
    *,
    exact: bool = False,
) -> BoardState:
    """The raw transition of a legal move: the mover's stone on `cell`, then a line win or a full-board draw.

    `legal_fn(board) -> bool [A]` gives the legal moves of a non-terminal board; `windows` and `exact` say what a
    line is (see `completes_line`). Illegal moves and terminal states are handled by the caller through
    `resolve_step`.
    """
    mover = state.current_player
    stone = (mover + 1).astype(jnp.int8)
    board = state.board.at[cell].set(stone)
    won = completes_line(board, cell, stone, windows, exact=exact)
    terminated = won | jnp.all(board != EMPTY)
    winner_rewards = jnp.where(jnp.arange(2) == mover, 1.0, -1.0)
    return state.replace(
        board=board,
        current_player=(1 - mover).astype(jnp.int32),
        legal_action_mask=legal_fn(board) & ~terminated,
        terminated=terminated,
        rewards=jnp.where(won, winner_rewards, 0.0).astype(jnp.float32),
    )


def state_from_board(
    board: np.ndarray,
    windows: np.ndarray,
    legal_fn: Callable[[jax.Array], jax.Array],
    *,
    exact: bool = False,
) -> BoardState:
    """Builds the state of a parsed board: who moves from the stone counts; a line or a full board is terminal,
    with the rewards of the move that ended the game (so the state is as if reached by play). `windows` and
    `exact` as for `completes_line`.

    Raises:
      ValueError: when the stone counts or the lines could not arise in play.
    """
    to_move = check_stone_counts(board)
    x_line = board_has_line(board, STONE_X, windows, exact=exact)
    o_line = board_has_line(board, STONE_O, windows, exact=exact)
    if x_line and o_line:
        raise ValueError("both X and O have a line; a game ends at the first line, so this cannot occur")
    if (x_line and to_move != 1) or (o_line and to_move != 0):
        raise ValueError("the side with the line must have made the last move, but the stone counts disagree")
    terminated = x_line or o_line or bool(np.all(board != EMPTY))
    rewards = np.array([1.0, -1.0] if x_line else [-1.0, 1.0] if o_line else [0.0, 0.0], np.float32)
    jboard = jnp.asarray(board, jnp.int8)
    return BoardState(
        current_player=jnp.int32(to_move),
        legal_action_mask=legal_fn(jboard) & (not terminated),
        terminated=jnp.bool_(terminated),
        rewards=jnp.asarray(rewards),
        board=jboard,
    )


def render_state(state: BoardState, height: int, width: int, *, bottom_up: bool = False) -> str:
    """`render_board` followed by `status_line`, for a single (unbatched) state."""
    labels = [str(height - r) for r in range(height)] if bottom_up else None
    board = render_board(np.asarray(state.board), height, width, row_labels=labels)
    status = status_line(bool(state.terminated), np.asarray(state.rewards), int(state.current_player))
    return f"{board}\n{status}"
