"""Othello (Reversi) on a size x size board: 8 x 8 by default, 6 x 6 as the option `size=6` (or "othello6").

Rules. The board starts with four discs in the centre: O (white) on d4 and e5, X (black) on e4 and d5 (on 8 x 8;
the same centre square on other sizes). X (player 0) moves first. A placement puts a disc of the mover's colour on
an empty cell such that, in at least one of the 8 directions, one or more of the opponent's discs lie in an
unbroken run from that cell up to a disc of the mover's colour; every such bracketed run, in every direction,
flips to the mover's colour. A player with no placement must pass, and may pass only then. The game ends when
neither player can place (the board is full, one colour is gone, or no empty cell brackets anything); the player
with more discs wins, equal counts draw. Rewards (float32 [2], by player id) are paid on the step that ends it.

Actions: cell = row * size + col (row 0 at the top, named "a1" top left, as in the other board games), then one
pass action, index size * size. Every step, passes included, hands the turn to the other player: after a move
that leaves the opponent without a placement while the mover still has one, it is the opponent's turn with only
the pass legal. The game is over as soon as neither side can place, without two passes first (unlike pgx's
Othello, which plays both passes and ends the game on the second).

Observation: float32 [size, size, 2] from the side to move, its own discs then the opponent's. That is the whole
state: who must pass, and whether the game is over, follow from the discs and the side to move.

Symmetries: all 8 transformations of the square are rule symmetries (the pass stays in place); the start is
invariant only under rot180, transpose and anti_transpose (the other 4 swap the colours of the centre).

ASCII positions (`render` and `from_ascii`) are the board of `azjax.games.boards` (X black, O white) and a status
line, which `from_ascii` needs because disc counts do not tell who is to move in Othello::

       a b c d e f g h
     1 . . . . . . . .
     ...
     4 . . . O X . . .
     5 . . . X O . . .
     ...
    X to move

The status line is one of "X to move" (followed by " (must pass)" when, and only when, X has no placement but O
has one) while the game goes on, "X wins 36-28 (X moved last)" / "draw 32-32 (O moved last)" after the game ended
(the counts are X's then O's), or "O wins: X made an illegal move" after a forfeit; X and O swap as they apply.
`from_ascii` raises ValueError when the status disagrees with the discs.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from types import ModuleType

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import boards, drawing
from azjax.games.base import Game, board_symmetries, resolve_step

Board = jax.Array | np.ndarray  # int8 [N]: on the host (numpy) for render and from_ascii, else traced

_DIRECTIONS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))
PLAYER_CHARS = "XO"  # by player id: X (black) is player 0


def ray_table(size: int) -> np.ndarray:
    """The cells along each of the 8 directions from each cell, nearest first: int32 [8, N, size], N = size * size.

    A ray is padded after its last on-board cell with the sentinel index N (a cell that callers append to the
    board and keep empty); the longest ray has size - 1 cells, so every ray ends with at least one sentinel.
    """
    num_cells = size * size
    table = np.full((len(_DIRECTIONS), num_cells, size), num_cells, np.int32)
    for d, (dr, dc) in enumerate(_DIRECTIONS):
        for r in range(size):
            for c in range(size):
                for i in range(1, size):
                    rr, cc = r + i * dr, c + i * dc
                    if not (0 <= rr < size and 0 <= cc < size):
                        break
                    table[d, r * size + c, i - 1] = rr * size + cc
    return table


def start_board(size: int) -> np.ndarray:
    """The standard start: int8 [size * size], O on the centre's main diagonal, X on its anti-diagonal."""
    board = np.zeros((size, size), np.int8)
    m = size // 2
    board[m - 1, m - 1] = board[m, m] = boards.STONE_O
    board[m - 1, m] = board[m, m - 1] = boards.STONE_X
    return board.ravel()


def _seen(padded: jax.Array, size: int, dr: int, dc: int, k: int) -> jax.Array:
    """From a bool board padded by size - 1 on each side: [size, size], at (r, c) the value k steps away in
    direction (dr, dc), False off the board. A static slice."""
    row, col = size - 1 + k * dr, size - 1 + k * dc
    return padded[row : row + size, col : col + size]


def placements(board: Board, size: int, *, xp: ModuleType = jnp) -> Board:
    """The legal placements of both players on `board` (int8 [N]): bool [2, N], row p for player p.

    Every cell at once, direction by direction and distance by distance (statically unrolled, 8 x (size - 1)
    elementwise steps on the whole board): a cell is a placement when some direction shows one or more opponent
    discs and then one of the player's own. This reads shifted copies of the board rather than gathering every
    cell's rays from `ray_table`, which is much slower under XLA on a CPU: for a batch of 2000 boards of 8 x 8 on
    a shared 2-core CPU, 5 ms this way against 50 ms and more for the gathered rays (12 ms for the gather of the
    [8, N, size] cells alone). `xp=np` runs it on the host, for `render` and `from_ascii` (eager jax would
    dispatch its hundreds of small operations one by one).
    """
    grid = board.reshape(size, size)
    empty = grid == boards.EMPTY
    rows = []
    for stone, opponent in ((boards.STONE_X, boards.STONE_O), (boards.STONE_O, boards.STONE_X)):  # static
        own = xp.pad(grid == stone, size - 1)
        theirs = xp.pad(grid == opponent, size - 1)
        found = xp.zeros((size, size), dtype=bool)
        for dr, dc in _DIRECTIONS:
            run = _seen(theirs, size, dr, dc, 1)  # an unbroken run of opponent discs from distance 1 to k - 1
            for k in range(2, size):
                found = found | (run & _seen(own, size, dr, dc, k))
                run = run & _seen(theirs, size, dr, dc, k)
        rows.append((empty & found).ravel())
    return xp.stack(rows)


def place_disc(board: jax.Array, cell: jax.Array, stone: jax.Array, rays: np.ndarray) -> jax.Array:
    """The board after a disc of `stone` (int8 []) is placed on `cell` (int32 []) and flips what it brackets.

    `rays` is the static `ray_table`: the 8 rays from `cell`, [8, R], are gathered, and in each the leading run of
    opponent discs flips when the cell after it holds the mover's disc.
    """
    ray = jnp.asarray(rays)[:, cell, :]  # [8, R]
    cells = jnp.concatenate([board, jnp.zeros((1,), board.dtype)])[ray]  # the sentinel, index N, is empty
    opponent = (3 - stone).astype(board.dtype)
    run = jnp.cumprod((cells == opponent).astype(jnp.int8), axis=-1)  # 1 until the first non-opponent cell
    length = jnp.sum(run, axis=-1, dtype=jnp.int32)  # < R, since every ray ends with the empty sentinel
    end = jnp.take_along_axis(cells, length[:, None], axis=-1)[:, 0]  # the first cell after the run
    flips = run.astype(jnp.bool_) & (end == stone)[:, None]  # [8, R]
    # Rays from one cell in different directions share no cell, so only the sentinel index repeats.
    flipped = jnp.zeros(board.shape[0] + 1, jnp.bool_).at[ray.ravel()].set(flips.ravel())[:-1]
    placed = jnp.arange(board.shape[0]) == cell
    return jnp.where(flipped | placed, stone, board)


def disc_outcome(board: Board, *, xp: ModuleType = jnp) -> Board:
    """float32 [2] by player id: +1 for more discs, -1 for fewer, 0 each for equal counts."""
    difference = xp.sum(board == boards.STONE_X, dtype=xp.int32) - xp.sum(board == boards.STONE_O, dtype=xp.int32)
    sign = xp.sign(difference).astype(xp.float32)
    return xp.stack([sign, -sign])


def _state_after(
    board: Board, to_move: jax.Array | np.int32, size: int, *, xp: ModuleType = jnp
) -> boards.BoardState:
    """The state with `to_move` (int32 []) to play on `board`, as reached by play: terminal, with the disc outcome
    paid, when neither player can place; otherwise the mover's placements, or else only the pass, are legal.
    `xp=np` builds it on the host (fields as numpy arrays)."""
    can_place = placements(board, size, xp=xp)  # [2, N]
    mover_placements = can_place[to_move]
    terminated = ~xp.any(can_place)
    mask = xp.append(mover_placements, ~xp.any(mover_placements)) & ~terminated
    return boards.BoardState(
        current_player=to_move.astype(xp.int32),
        legal_action_mask=mask,
        terminated=terminated,
        rewards=xp.where(terminated, disc_outcome(board, xp=xp), 0.0).astype(xp.float32),
        board=board,  # type: ignore[arg-type]  # numpy with xp=np, which from_ascii converts
    )


def _init(key: jax.Array, *, size: int) -> boards.BoardState:
    del key  # deterministic start
    return _state_after(jnp.asarray(start_board(size)), jnp.int32(0), size)


def _step(state: boards.BoardState, action: jax.Array, *, size: int, rays: np.ndarray) -> boards.BoardState:
    action = jnp.asarray(action, jnp.int32)
    num_cells = state.board.shape[0]
    stone = (state.current_player + 1).astype(jnp.int8)
    placed = place_disc(state.board, jnp.clip(action, 0, num_cells - 1), stone, rays)
    board = jnp.where(action == num_cells, state.board, placed)  # the pass changes nothing on the board
    return resolve_step(state, _state_after(board, 1 - state.current_player, size), action)


# --------------------------------------------------------------------------------------------------------------
# Text: render, from_ascii, move names. Host code, not jitted.


def _counts(board: np.ndarray) -> tuple[int, int]:
    return int(np.sum(board == boards.STONE_X)), int(np.sum(board == boards.STONE_O))


def _status(state: boards.BoardState, size: int) -> str:
    board, player = np.asarray(state.board), int(state.current_player)
    mover, other = PLAYER_CHARS[player], PLAYER_CHARS[1 - player]
    if not bool(state.terminated):
        must_pass = bool(np.asarray(state.legal_action_mask)[-1])
        return f"{mover} to move" + (" (must pass)" if must_pass else "")
    if placements(board, size, xp=np).any():
        return f"{other} wins: {mover} made an illegal move"  # only a forfeit ends a game with placements left
    num_x, num_o = _counts(board)
    result = "X wins" if num_x > num_o else "O wins" if num_o > num_x else "draw"
    return f"{result} {num_x}-{num_o} ({other} moved last)"


def _render(state: boards.BoardState, *, size: int) -> str:
    return f"{boards.render_board(np.asarray(state.board), size, size)}\n{_status(state, size)}"


_STATUS_PATTERNS = {
    "to_move": re.compile(r"\b([XO]) to move\b"),  # optionally followed by _MUST_PASS
    "moved_last": re.compile(r"\(([XO]) moved last\)"),
    "forfeit": re.compile(r"\b([XO]) made an illegal move\b"),
}
_MUST_PASS = re.compile(r"\b[XO] to move \(must pass\)")


def _read_status(text: str) -> tuple[str, int]:
    """(kind, the player the status names) from the one status line of `text`; see the module docstring."""
    found = [(kind, match.group(1)) for kind, pattern in _STATUS_PATTERNS.items() for match in pattern.finditer(text)]
    if len(found) != 1:
        problem = "has no status line" if not found else f"has {len(found)} status lines"
        raise ValueError(
            f"the position {problem}; disc counts do not tell who is to move in Othello, so add one line "
            "'X to move' or 'O to move' after the board (or the status line that render prints)"
        )
    kind, char = found[0]
    return kind, PLAYER_CHARS.index(char)


def _from_ascii(text: str, *, size: int) -> boards.BoardState:
    board = boards.parse_board(text, size, size)
    kind, named = _read_status(text)
    m = size // 2
    centre = board.reshape(size, size)[m - 1 : m + 1, m - 1 : m + 1]
    if np.any(centre == boards.EMPTY):
        raise ValueError("the four centre cells start occupied and discs are never removed, so none can be empty")
    can_place = placements(board, size, xp=np)  # [2, N]
    over = not can_place.any()
    if kind == "forfeit":
        if over:
            raise ValueError("neither player can place, so the game was over before any illegal move")
        loss = np.where(np.arange(2) == named, -1.0, 1.0).astype(np.float32)
        return boards.BoardState(
            current_player=jnp.int32(named),
            legal_action_mask=jnp.zeros(size * size + 1, jnp.bool_),
            terminated=jnp.bool_(True),
            rewards=jnp.asarray(loss),
            board=jnp.asarray(board),
        )
    if kind == "moved_last":
        if not over:
            raise ValueError("the status says the game is over, but a player can still place; write 'X to move'")
        num_x, num_o = _counts(board)
        result = "X wins" if num_x > num_o else "O wins" if num_o > num_x else "draw"
        stated = re.search(r"\b(X wins|O wins|draw)\b", text)
        if stated is not None and stated.group(1) != result:
            said = stated.group(1)
            raise ValueError(f"the status says {said!r}, but the discs ({num_x} X, {num_o} O) say {result!r}")
        named = 1 - named  # the player after the one who moved last
    else:
        _check_to_move(text, board, can_place, named, size)
    state = _state_after(board, np.int32(named), size, xp=np)
    return jax.tree.map(jnp.asarray, state)  # dtypes kept: int32, bool, bool, float32, int8


def _check_to_move(text: str, board: np.ndarray, can_place: Board, named: int, size: int) -> None:
    """Raises ValueError unless "X to move" (`named` to move) fits the discs, whose placements are `can_place`
    (bool [2, N]): the game goes on, and " (must pass)" follows exactly when the player has no placement."""
    mover = PLAYER_CHARS[named]
    if not can_place.any():
        num_x, num_o = _counts(board)
        result = "X wins" if num_x > num_o else "O wins" if num_o > num_x else "draw"
        raise ValueError(
            f"neither player can place, so the game is over and no one is to move: write the status of a finished "
            f"game, '{result} {num_x}-{num_o} (X moved last)' or '{result} {num_x}-{num_o} (O moved last)'"
        )
    must_pass = not can_place[named].any()
    written = _MUST_PASS.search(text) is not None
    if written and not must_pass:
        cells = ", ".join(boards.cell_name(int(c), size, size) for c in np.flatnonzero(can_place[named]))
        raise ValueError(
            f"the status says {mover} must pass, but {mover} can place on {cells}; write '{mover} to move'"
        )
    if must_pass and not written:
        raise ValueError(f"{mover} has no placement, so {mover} must pass: write '{mover} to move (must pass)'")


def _action_to_string(action: int, *, size: int) -> str:
    action = int(action)
    return "pass" if action == size * size else boards.cell_name(action, size, size)


def _string_to_action(text: str, *, size: int) -> int:
    if text.strip().lower() == "pass":
        return size * size
    try:
        return boards.parse_cell(text, size, size)
    except ValueError as error:
        raise ValueError(f"{error}, or 'pass'") from None


def make_othello(size: int = 8) -> Game:
    """Othello on a size x size board (even, 4 to 26); see the module docstring.

    `max_length` is 2 * (size * size - 4): each placement fills one of the size * size - 4 cells empty at the
    start, and each pass is followed by a placement (a pass is legal only when the opponent can still place, else
    the game is already over), so there are at most as many passes as placements.
    """
    if not isinstance(size, int) or size % 2 or not 4 <= size <= len(boards.COLUMN_LETTERS):
        raise ValueError(f"othello: size must be an even whole number from 4 to 26, got {size!r}")
    num_cells = size * size
    return Game(
        name="othello" if size == 8 else f"othello(size={size})",
        num_actions=num_cells + 1,
        observation_shape=(size, size, 2),
        max_length=2 * (num_cells - 4),
        init=functools.partial(_init, size=size),
        step=functools.partial(_step, size=size, rays=ray_table(size)),
        observe=lambda s: boards.stone_planes(s.board, s.current_player, size, size),
        render=functools.partial(_render, size=size),
        symmetries=board_symmetries(size, size, num_extra_actions=1),
        from_ascii=functools.partial(_from_ascii, size=size),
        action_to_string=functools.partial(_action_to_string, size=size),
        string_to_action=functools.partial(_string_to_action, size=size),
        draw=functools.partial(drawing.draw_othello, size=size),
    )


def make_othello6() -> Game:
    """Othello on 6 x 6, `make_othello(size=6)` under its own name "othello6" (for presets and fast training)."""
    return dataclasses.replace(make_othello(size=6), name="othello6")
