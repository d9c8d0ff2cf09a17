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
Bits = tuple[Board, ...]  # bitboards: uint32 [...] words, cell c at bit c % 32 of word c // 32

_WORD_BITS = 32  # jax runs without 64-bit integers by default, so a board's bits are split into uint32 words
PLAYER_CHARS = "XO"  # by player id: X (black) is player 0


def start_board(size: int) -> np.ndarray:
    """The standard start: int8 [size * size], O on the centre's main diagonal, X on its anti-diagonal."""
    board = np.zeros((size, size), np.int8)
    m = size // 2
    board[m - 1, m - 1] = board[m, m] = boards.STONE_O
    board[m - 1, m] = board[m, m - 1] = boards.STONE_X
    return board.ravel()


# --------------------------------------------------------------------------------------------------------------
# Bitboards. A step in direction (dr, dc) moves every bit of a board by dr * size + dc cells, so each rule is a few
# whole-board bit operations per direction: no gather, and, batched, a word per game rather than an element per
# cell. Only the 4 directions of positive steps are walked, on each board and on its mirror image (the cells in
# reverse order), where they are the other 4; leading axes of the words hold players, mirror images and directions,
# so that one operation covers them all. `xp=np` runs the same code on the host, for `render` and `from_ascii`
# (eager jax would dispatch its many small operations one by one).
#
# XLA fuses elementwise operations into whatever consumes them, recomputing them for every element consumed, and
# keeps only reductions apart. So the words that much is computed from (the packed discs, the flips, the
# placements) each come out of a reduction, and the cells of the result are unmirrored as cells, not as bits.


def pack(cells: Board, *, xp: ModuleType = jnp) -> Bits:
    """The bitboards of bool boards [..., N]: ceil(N / 32) uint32 [...] words."""
    num_cells = cells.shape[-1]
    num_words = -(-num_cells // _WORD_BITS)
    padding = [(0, 0)] * (cells.ndim - 1) + [(0, num_words * _WORD_BITS - num_cells)]
    halves = xp.pad(cells, padding).reshape(*cells.shape[:-1], num_words, 2, 16).astype(xp.uint32)
    # An OR of 16 shifted cells per half word, then a reduction over the 2 halves (see above): XLA on a CPU runs a
    # reduction one element at a time, so a reduction over all 32 cells would be several times slower.
    shifted = functools.reduce(xp.bitwise_or, [halves[..., i] << xp.uint32(i) for i in range(16)])
    words = xp.bitwise_or.reduce(shifted << xp.array([0, 16], xp.uint32), axis=-1)
    return tuple(words[..., w] for w in range(num_words))


def unpack(bits: Bits, num_cells: int, *, xp: ModuleType = jnp) -> Board:
    """The bool boards [..., N] of bitboards (their bits from N on ignored)."""
    words = xp.stack(bits, axis=-1)[..., None]  # [..., W, 1]
    cells = (xp.right_shift(words, xp.arange(_WORD_BITS, dtype=xp.uint32)) & xp.uint32(1)) != 0
    return cells.reshape(*cells.shape[:-2], -1)[..., :num_cells]


def _and(a: Bits, b: Bits) -> Bits:
    return tuple(x & y for x, y in zip(a, b, strict=True))


def _or(a: Bits, b: Bits) -> Bits:
    return tuple(x | y for x, y in zip(a, b, strict=True))


def _select(condition: Board, a: Bits, b: Bits, *, xp: ModuleType = jnp) -> Bits:
    return tuple(xp.where(condition, x, y) for x, y in zip(a, b, strict=True))


def _stack(*bits: Bits, xp: ModuleType = jnp) -> Bits:
    """Bitboards [...] -> [K, ...]."""
    return tuple(xp.stack(words) for words in zip(*bits, strict=True))


def _shift(bits: Bits, amounts: np.ndarray) -> Bits:
    """Every bit moved `amounts` (uint32, broadcast against the words; each from 1 to 31) cells up the board,
    carried across words; bits moved past the last word are lost."""
    carried = [w >> (_WORD_BITS - amounts) for w in bits[:-1]]
    return tuple(w << amounts if i == 0 else (w << amounts) | carried[i - 1] for i, w in enumerate(bits))


def _reversed_word(word: Board) -> Board:
    """A uint32 word with its 32 bits in reverse order."""
    for width, mask in ((1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F), (8, 0x00FF00FF)):
        word = ((word >> width) & mask) | ((word & mask) << width)
    return (word >> 16) | (word << 16)


def _mirror(bits: Bits, num_cells: int) -> Bits:
    """The bitboards of the boards with their N cells in reverse order (cell c to N - 1 - c); bits from N on must
    be clear."""
    words = [_reversed_word(w) for w in reversed(bits)]
    excess = len(bits) * _WORD_BITS - num_cells  # the bits past cell N - 1, now at the bottom
    if excess == 0:
        return tuple(words)
    last = len(words) - 1
    return tuple(w >> excess if i == last else (w >> excess) | (words[i + 1] << (_WORD_BITS - excess))
                 for i, w in enumerate(words))


def _both_ways(bits: Bits, num_cells: int, *, xp: ModuleType = jnp) -> Bits:
    """Bitboards [...] -> [..., 2, 1]: each board, then its mirror image (to broadcast against 4 directions)."""
    return tuple(xp.stack([w, m], axis=-1)[..., None] for w, m in zip(bits, _mirror(bits, num_cells), strict=True))


@functools.cache
def _lines(size: int) -> tuple[np.ndarray, Bits, Bits]:
    """The 4 directions of a positive step, right, down-left, down and down-right: their steps (uint32 [4]), the
    cells that a bracketed run in each can hold (words [4]), the same on the mirror image; and the N cells.

    A run in a direction with a column step lies strictly between two cells of its row's span, so never on the
    first or last column: masking those out of the opponent's discs stops a shift from wrapping around an edge
    into the next row. Shifts past the bottom move bits past the last word or onto cells from N on, never set."""
    column = np.arange(size * size) % size
    inner = (column > 0) & (column < size - 1)
    steps = np.array([1, size - 1, size, size + 1], np.uint32)
    return steps, pack(np.stack([inner, inner, np.ones_like(inner), inner]), xp=np), pack(column >= 0, xp=np)


_UNROLLED_SIZE = 8  # the largest board whose runs are walked in unrolled steps; larger ones in a loop


def _runs(start: Bits, opponent: Bits, size: int, *, xp: ModuleType = jnp) -> Bits:
    """Words [..., 2, 4] (boards and mirror images, directions) from `start` and `opponent` [..., 2, 1]: the cells
    reached from `start` by 1 to size - 2 (the longest bracketed run) steps in each direction, every cell on the
    way, the last included, an `opponent` disc."""
    steps, runs_in, _ = _lines(size)
    opponent = _and(opponent, runs_in)
    extend = lambda _, run: _or(run, _and(_shift(run, steps), opponent))  # noqa: E731  # one step further
    run = _and(_shift(start, steps), opponent)
    if xp is jnp and size > _UNROLLED_SIZE:  # unrolled, the program of a large board takes minutes to compile
        return jax.lax.fori_loop(0, size - 3, extend, run)
    for i in range(size - 3):
        run = extend(i, run)
    return run


def _any_direction(bits: Bits, *, xp: ModuleType = jnp) -> Bits:
    """Words [..., 4] -> [...]: the cells set in some direction, as a reduction (see above)."""
    return tuple(xp.bitwise_or.reduce(w, axis=-1) for w in bits)


def _unmirrored(bits: Bits, num_cells: int, *, xp: ModuleType = jnp) -> Board:
    """Bitboards [..., 2] of boards and of mirror images -> bool [..., N]: the cells set in either."""
    cells = unpack(bits, num_cells, xp=xp)
    return cells[..., 0, :] | cells[..., 1, ::-1]


def _placement_bits(own: Bits, opponent: Bits, size: int, *, xp: ModuleType = jnp) -> Bits:
    """Words [..., 2] (placements found on the boards and on their mirror images) for the player with discs `own`
    against `opponent` (bitboards [...]): the empty cells from which, in some direction, a run of one or more
    opponent discs leads up to an own disc."""
    num_cells = size * size
    steps, _, on_board = _lines(size)
    empty = _and(tuple(~(a | b) for a, b in zip(own, opponent, strict=True)), on_board)
    run = _runs(_both_ways(own, num_cells, xp=xp), _both_ways(opponent, num_cells, xp=xp), size, xp=xp)
    return _any_direction(_and(_shift(run, steps), _both_ways(empty, num_cells, xp=xp)), xp=xp)


def placements(board: Board, size: int, *, xp: ModuleType = jnp) -> Board:
    """The legal placements of both players on `board` (int8 [N]): bool [2, N], row p for player p."""
    x, o = pack(board == boards.STONE_X, xp=xp), pack(board == boards.STONE_O, xp=xp)
    found = _placement_bits(_stack(x, o, xp=xp), _stack(o, x, xp=xp), size, xp=xp)
    return _unmirrored(found, size * size, xp=xp)


def _flip_bits(placed: Bits, own: Bits, opponent: Bits, size: int) -> Bits:
    """Words [2] (flips found on the board and on its mirror image): the `opponent` discs that a disc on `placed`
    (one bit, or none) brackets with `own` discs, every run of them that leads from the placed disc up to an own
    disc."""
    num_cells = size * size
    steps, _, _ = _lines(size)
    run = _runs(_both_ways(placed, num_cells), _both_ways(opponent, num_cells), size)
    end = _and(_shift(run, steps), _both_ways(own, num_cells))
    closed = functools.reduce(jnp.bitwise_or, end) != 0  # [2, 4]: the run ends at an own disc
    return _any_direction(_select(closed, run, tuple(jnp.zeros_like(w) for w in run)))


def _state_after(
    board: Board, to_move: jax.Array | np.int32, size: int, *, xp: ModuleType = jnp
) -> boards.BoardState:
    """The state with `to_move` (int32 []) to play on `board`, as reached by play: terminal, with the disc outcome
    paid, when neither player can place; otherwise the mover's placements, or else only the pass, are legal.
    `xp=np` builds it on the host (fields as numpy arrays)."""
    x, o = pack(board == boards.STONE_X, xp=xp), pack(board == boards.STONE_O, xp=xp)
    return _state_of_bits(board, x, o, to_move, size, xp=xp)


def _state_of_bits(
    board: Board, x: Bits, o: Bits, to_move: jax.Array | np.int32, size: int, *, xp: ModuleType = jnp
) -> boards.BoardState:
    """`_state_after` for the board whose X and O discs are the bitboards `x` and `o`."""
    mover, other = _select(to_move == 0, x, o, xp=xp), _select(to_move == 0, o, x, xp=xp)
    found = _placement_bits(_stack(mover, other, xp=xp), _stack(other, mover, xp=xp), size, xp=xp)  # [2, 2]
    can_place = (functools.reduce(xp.bitwise_or, found) != 0).any(axis=-1)  # [2]: the mover, the other
    terminated = ~can_place.any()
    mask = xp.append(_unmirrored(tuple(w[0] for w in found), size * size, xp=xp), ~can_place[0]) & ~terminated
    ones = jax.lax.population_count if xp is jnp else np.bitwise_count
    lead = sum(ones(a).astype(xp.int32) - ones(b).astype(xp.int32) for a, b in zip(x, o, strict=True))
    sign = xp.sign(lead).astype(xp.float32)  # of X's lead in discs
    return boards.BoardState(
        current_player=to_move.astype(xp.int32),
        legal_action_mask=mask,
        terminated=terminated,
        rewards=xp.where(terminated, xp.stack([sign, -sign]), 0.0).astype(xp.float32),
        board=board,  # type: ignore[arg-type]  # numpy with xp=np, which from_ascii converts
    )


def _init(key: jax.Array, *, size: int) -> boards.BoardState:
    del key  # deterministic start
    return _state_after(jnp.asarray(start_board(size)), jnp.int32(0), size)


def _step(state: boards.BoardState, action: jax.Array, *, size: int) -> boards.BoardState:
    action = jnp.asarray(action, jnp.int32)
    num_cells = size * size
    x, o = pack(state.board == boards.STONE_X), pack(state.board == boards.STONE_O)
    x_moves = state.current_player == 0
    own, opponent = _select(x_moves, x, o), _select(x_moves, o, x)
    # The placed disc's bit; none for the pass (cell N) or any action off the board.
    placed = tuple(
        jnp.where((action >= start) & (action < min(start + _WORD_BITS, num_cells)),
                  jnp.uint32(1) << (action - start).astype(jnp.uint32), jnp.uint32(0))
        for start in range(0, num_cells, _WORD_BITS)
    )
    found = _flip_bits(placed, own, opponent, size)  # [2]
    flips = _or(tuple(w[0] for w in found), _mirror(tuple(w[1] for w in found), num_cells))
    own = _or(_or(own, placed), flips)
    opponent = tuple(w & ~f for w, f in zip(opponent, flips, strict=True))
    changed = (jnp.arange(num_cells) == action) | _unmirrored(found, num_cells)
    board = jnp.where(changed, (state.current_player + 1).astype(jnp.int8), state.board)
    x, o = _select(x_moves, own, opponent), _select(x_moves, opponent, own)
    return resolve_step(state, _state_of_bits(board, x, o, 1 - state.current_player, size), action)


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
        step=functools.partial(_step, size=size),
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
