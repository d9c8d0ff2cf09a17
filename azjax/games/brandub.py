"""Brandub: the 7 x 7 tafl game. Attackers (8 pawns, player 0, moving first) against defenders (4 pawns and the
monarch, player 1).

Start position (rank 7 at the top, as `render` prints it; "+" marks the empty castle and corners)::

      a b c d e f g
    7 + . . A . . +
    6 . . . A . . .
    5 . . . D . . .
    4 A A D K D A A
    3 . . . D . . .
    2 . . . A . . .
    1 + . . A . . +
    attackers to move; 0 moves played

Rules, as implemented (the options of `make_brandub` are in brackets):

* Every piece moves like a rook: any distance along a row or column through empty squares. Only the monarch may
  stop on the castle (d4) or a corner [`monarch_enters_castle=True`; False: the castle is no piece's destination,
  the monarch's start aside]. Other pieces may pass through the empty castle [`castle_passable=True`; False makes
  the castle block them]. Nothing may pass through a piece, and a corner is never on a path.
* Captures are custodial [`capture`]. A piece is flanked when two opposite neighbours are hostile to it: for a
  pawn, an enemy piece (the monarch counts, against attackers), a corner or the empty castle, to both sides.
  "active" (default): after a move, each enemy pawn beside the moved piece that has, on the far side, a piece of
  the mover or a hostile square is removed (several at once if so); a piece may move safely between two enemies
  (only the mover captures). "passive": the moved piece is checked first, and a flanked one is removed (the
  monarch by its own rule below, which loses the game) and captures nothing; otherwise as "active". "neighbours"
  (the source document's): the moved piece, then each piece beside it, of either side, is removed if flanked on
  either line, so a pawn flanked earlier (by the castle its monarch left, say) falls when a piece moves beside
  it. "board" (the `brandub` package's): after every move each flanked piece on the board is removed, all at
  once. In these two the monarch on its corner, the move that wins, is no anvil (the sources count it and the
  corner as two hostile things, which are not one). The monarch takes part in captures, as the moving piece or
  on the far side [`king_armed=True`; False: it captures nothing and is no anvil].
* The monarch is captured by attackers (and hostile squares, never by defenders) [`monarch_capture`]:
  "four_near_castle" (default): on the castle, by attackers on all four sides; beside the castle, by attackers
  on the three other sides (the empty castle is the fourth); elsewhere by two attackers on opposite sides, or
  an attacker and a corner. "two": by two everywhere, like a pawn (beside the castle, one attacker opposite the
  empty castle suffices). "four": on all four sides everywhere (corners and the empty castle count; a monarch on
  the board's edge cannot be captured). The moving attacker must be one of the captors; where `capture` checks
  more pieces, the monarch also falls whenever it stands so when checked, whoever moved: after its own move
  ("passive"), its own or one beside it ("neighbours"), any move ("board").
* The defenders win when the monarch reaches a corner; the attackers win when it is captured. A side with no
  legal move on its turn (all pieces blocked or captured) [`stalemate`]: "loses" (default), or "draw" (the game
  ends with no winner: the source document and the package have no move to make there, and play stops).
* Draws: a position (board and side to move) that occurs for the `repetitions`-th time (default 3) within the
  last `history_size` + 1 positions (default 64 + 1) ends the game as a draw (`history_size=0` turns the rule
  off), and so does the `max_moves`-th move (default 200) if it wins nothing. `max_length` is `max_moves`.
  Positions are compared by 32-bit Zobrist hashes, so two different positions are taken for the same one with
  a chance of about 2^-32 per pair (a few in a million per 200-move game). Captures cannot be undone, so only
  positions since the last capture can repeat; a shorter history forgets repetitions that are farther apart.

The defaults are the game the shipped `pretrained:brandub` and earlier runs were trained on, and the common tafl
practice (the Copenhagen and Fetlar rules): the monarch may return to its castle, only the mover captures, a
side that cannot move loses. "brandub_document" (`make_brandub_document`, `DOCUMENT_RULES`) is the game of the
document azjax's Brandub was first written from ("AlphaZero for Brandub", Kevin Nowland) as its code plays it:
the castle no destination, captures "neighbours", a stuck side's game drawn, no repetition rule (its code
compares a new board with those two and three moves before, which can never recur), and azjax's `max_moves`,
as the document sets no limit. Its author's package `brandub` (PyPI) plays the same rules with
`capture="board"`, but for a draw when a board recurs within its last ten positions, whoever is to move, and an
attacker beside the castle the monarch holds, which it never takes against it
(tests/games/test_brandub_package.py compares them; experiments/studies/brandub_rules/README.md).

Board: int8 [49], row-major, row 0 at the top (rank 7): 0 empty, 1 attacker, 2 defender, 3 monarch. The monarch
is removed from the board when captured.

Action = from_square * 24 + direction * 6 + (distance - 1), with from_square = row * 7 + col (row 0 at the
top), direction 0 north (up, towards rank 7), 1 east (towards column g), 2 south, 3 west, and distance 1..6:
num_actions = 49 * 24 = 1176. Actions whose destination is off the board are never legal. Move names are
"d2-d3" (from-to), or "a7:N1" (from, direction letter and distance) for an action that leaves the board.

Observation: float32 [7, 7, 7], the same planes for both sides with a plane saying whose turn it is: attackers,
defenders, monarch, attackers to move (all ones or all zeros), the castle and corners, how often the current
position occurred among the `history_size` - 1 positions before it (over `repetitions` - 1), and the moves played
over `max_moves`. Symmetries: the 8 dihedral transformations of the board (7 besides the identity); a move's
direction turns with the board.

ASCII: `render` prints the board as above, "A" attacker, "D" defender, "K" monarch, "." empty (and "+" an empty
castle or corner), then a status line: "attackers to move", "defenders to move", "attackers win", "defenders
win" or "draw with <side> to move", followed by "; N moves played". `from_ascii` reads it back (row labels and
the header are optional, "+" and "." are both empty, "; N moves played" is optional: N defaults to 0 with the
attackers and 1 with the defenders to move); the repetition history of a parsed position starts afresh. A win
is read as made by the winner's last move, but "attackers win; N moves played" with N even where `capture` is
not "active": the defenders lost their monarch by their own move.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import jax
import jax.numpy as jnp
import numpy as np

from azjax.games import boards, drawing
from azjax.games.base import Game, State, Symmetry, _dihedral_grid_maps, resolve_step
from azjax.text import counted

SIZE = 7
NUM_CELLS = SIZE * SIZE
NUM_DIRECTIONS = 4
MAX_DISTANCE = SIZE - 1
ACTIONS_PER_CELL = NUM_DIRECTIONS * MAX_DISTANCE  # 24
NUM_ACTIONS = NUM_CELLS * ACTIONS_PER_CELL  # 1176
EMPTY, ATTACKER, DEFENDER, MONARCH = 0, 1, 2, 3
OFF_BOARD = 4  # what stands "off the board": the sentinel cell NUM_CELLS, and a plane shifted off it (`_shift`)
ATTACKERS, DEFENDERS = 0, 1  # player ids
CASTLE = (SIZE // 2) * SIZE + SIZE // 2  # d4, cell 24
CORNERS = (0, SIZE - 1, NUM_CELLS - SIZE, NUM_CELLS - 1)
DIRECTION_STEPS = ((-1, 0), (0, 1), (1, 0), (0, -1))  # N, E, S, W as (row, col) steps; row 0 is the top
DIRECTION_LETTERS = "NESW"
MONARCH_CAPTURE_RULES = ("four_near_castle", "two", "four")
CAPTURE_RULES = ("active", "passive", "neighbours", "board")
STALEMATE_RULES = ("loses", "draw")
NUM_PLANES = 7

START = """
+ . . A . . +
. . . A . . .
. . . D . . .
A A D K D A A
. . . D . . .
. . . A . . .
+ . . A . . +
"""


def _rays() -> np.ndarray:
    """int32 [49, 4, 6]: the cell `distance` steps from `cell` in `direction`, or NUM_CELLS off the board."""
    rays = np.full((NUM_CELLS, NUM_DIRECTIONS, MAX_DISTANCE), NUM_CELLS, np.int32)
    for cell in range(NUM_CELLS):
        row, col = divmod(cell, SIZE)
        for direction, (dr, dc) in enumerate(DIRECTION_STEPS):
            for distance in range(1, MAX_DISTANCE + 1):
                r, c = row + distance * dr, col + distance * dc
                if 0 <= r < SIZE and 0 <= c < SIZE:
                    rays[cell, direction, distance - 1] = r * SIZE + c
    return rays


def _cell_flags(cells: tuple[int, ...]) -> np.ndarray:
    """bool [50]: True on `cells`; the sentinel (index 49) is False."""
    flags = np.zeros(NUM_CELLS + 1, bool)
    flags[list(cells)] = True
    return flags


RAYS = _rays()
IS_CORNER = _cell_flags(CORNERS)
IS_CASTLE = _cell_flags((CASTLE,))
IS_SPECIAL = IS_CORNER | IS_CASTLE  # only the monarch may stop here
NEAR_CASTLE = _cell_flags((CASTLE, *(int(c) for c in RAYS[CASTLE, :, 0])))  # the castle and its 4 neighbours
# Zobrist keys: one random uint32 per (cell, piece), zero for an empty cell, and one for "defenders to move".
_ZOBRIST = np.random.default_rng(0x7AF1).integers(1, 2**32, size=(NUM_CELLS, 4), dtype=np.uint32)
_ZOBRIST[:, EMPTY] = 0
_ZOBRIST_DEFENDERS_TO_MOVE = np.uint32(0x9E3779B9)


def _grid(flags: np.ndarray) -> np.ndarray:
    """bool [7, 7]: the on-board part of cell flags [50]."""
    return flags[:NUM_CELLS].reshape(SIZE, SIZE)


def _shifted(grid: np.ndarray, dr: int, dc: int) -> np.ndarray:
    """`_shift` of a numpy bool plane [7, 7], False off the board."""
    padded = np.pad(grid, MAX_DISTANCE)
    return padded[MAX_DISTANCE + dr:MAX_DISTANCE + dr + SIZE, MAX_DISTANCE + dc:MAX_DISTANCE + dc + SIZE]


def _neighbour_planes(grid: np.ndarray) -> np.ndarray:
    """bool [4, 7, 7]: whether each cell's neighbour N, E, S, W is flagged in `grid` [7, 7]."""
    return np.stack([_shifted(grid, dr, dc) for dr, dc in DIRECTION_STEPS])


# Moves are tested on bit masks of lines, one uint32 a row and one a column, of four bytes: the empty squares, the
# mover's pieces, the mover's monarch and the squares open to pawns (not the castle unless `castle_passable`); in a
# row, bit c of a byte is the square in column c, in a column bit r the square in row r. An action's window
# (`_windows`) holds the bits its move needs: its piece on its square (the monarch where no pawn may make the move)
# and every square it passes or lands on empty. Bit 7 stands for no square, so a window holding it (the move
# leaves the board, or lands where no piece may stop) fails on every board.
_EMPTY_BYTE, _PIECE_BYTE, _MONARCH_BYTE, _OPEN_BYTE = 0, 8, 16, 24  # bit offsets
_NO_SQUARE = 1 << SIZE
_LINE = np.uint32(2**SIZE - 1)  # the squares of one byte
_ALONG_ROWS = np.repeat(np.asarray([False, True, False, True]), MAX_DISTANCE)  # [24]: E, W; N and S: columns


@functools.cache
def _windows(castle_passable: bool, monarch_enters_castle: bool) -> np.ndarray:
    """uint32 [1176]: each action's window (see above) under the two rule options."""
    windows = np.zeros(NUM_ACTIONS, np.uint32)
    for action in range(NUM_ACTIONS):
        source, rest = divmod(action, ACTIONS_PER_CELL)
        direction, distance_index = divmod(rest, MAX_DISTANCE)
        path = RAYS[source, direction, :distance_index + 1]
        position = (lambda cell: int(cell) % SIZE) if _ALONG_ROWS[rest] else (lambda cell: int(cell) // SIZE)
        if path[-1] == NUM_CELLS or (IS_CASTLE[path[-1]] and not monarch_enters_castle):
            windows[action] = _NO_SQUARE
            continue
        monarch_only = IS_SPECIAL[path[-1]] or (not castle_passable and bool(IS_CASTLE[path[:-1]].any()))
        bits = 1 << ((_MONARCH_BYTE if monarch_only else _PIECE_BYTE) + position(source))
        for cell in path:
            bits |= 1 << (_EMPTY_BYTE + position(cell))
        windows[action] = bits
    windows.flags.writeable = False
    return windows


def _line_masks(grid: np.ndarray) -> np.ndarray:
    """uint32 [rows | columns, 7]: a bool plane [7, 7] as the bit masks of its rows and of its columns."""
    bits = (1 << np.arange(SIZE)).astype(np.uint32)
    return np.stack([(grid * bits).sum(1), (grid * bits[:, None]).sum(0)]).astype(np.uint32)


_CORNER_GRID = _grid(IS_CORNER)
_CASTLE_GRID = _grid(IS_CASTLE)
_NEAR_CASTLE_GRID = _grid(NEAR_CASTLE)
_PAWN_STOPS = _line_masks(~_grid(IS_SPECIAL))  # [2, 7] only the monarch may stop on the castle and the corners
_MONARCH_STOPS = {enters: _line_masks(~_CASTLE_GRID | enters) for enters in (True, False)}  # monarch_enters_castle
_NEXT_CORNER = _neighbour_planes(_CORNER_GRID)  # [4, 7, 7] the neighbour in each direction is a corner
_NEXT_CASTLE = _neighbour_planes(_CASTLE_GRID)  # [4, 7, 7] the neighbour in each direction is the castle


@dataclasses.dataclass(frozen=True)
class BrandubRules:
    """The rule options of `make_brandub`; see the module docstring."""

    king_armed: bool = True
    monarch_capture: str = "four_near_castle"
    castle_passable: bool = True
    monarch_enters_castle: bool = True
    capture: str = "active"
    stalemate: str = "loses"
    max_moves: int = 200
    repetitions: int = 3
    history_size: int = 64

    def __post_init__(self) -> None:
        for name, choices in (("monarch_capture", MONARCH_CAPTURE_RULES), ("capture", CAPTURE_RULES),
                              ("stalemate", STALEMATE_RULES)):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {getattr(self, name)!r}")
        for name, low in (("max_moves", 1), ("repetitions", 2), ("history_size", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        for name in ("king_armed", "castle_passable", "monarch_enters_castle"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")


# The source document's rules as its code plays them (see the module docstring), for `make_brandub_document`, and
# the options of `make_brandub` that give them.
DOCUMENT = BrandubRules(monarch_enters_castle=False, capture="neighbours", stalemate="draw", history_size=0)
DOCUMENT_RULES = {field.name: getattr(DOCUMENT, field.name) for field in dataclasses.fields(DOCUMENT)
                  if getattr(DOCUMENT, field.name) != field.default}


class BrandubState(State):
    """A Brandub position: the common fields plus the board, the move count and the repetition history."""

    board: jax.Array
    """[49] int8: 0 empty, 1 attacker, 2 defender, 3 monarch; row 0 at the top."""
    move_count: jax.Array
    """[] int32, moves played so far."""
    history: jax.Array
    """[max(history_size, 1)] uint32, position hashes, the current position's first."""
    num_history: jax.Array
    """[] int32, how many entries of `history` hold positions."""


# --------------------------------------------------------------------------------------------------------------
# The rules, on one (unbatched) board.
#
# Moves are tested on bit masks of the board's rows and columns (`_lines`, `_windows`): one integer test an
# action, with no gathers. The captures look at the few squares beside the destination (small gathers); the
# checks of every piece on the board (`_flanked`) use the board's [7, 7] plane shifted (`_shift`).


def _shift(grid: jax.Array, dr: int, dc: int, fill: int | bool) -> jax.Array:
    """[7, 7]: at (r, c), grid[r + dr, c + dc] of `grid` [7, 7], or `fill` where that cell is off the board."""
    return jax.lax.pad(grid, jnp.asarray(fill, grid.dtype), ((-dr, dr, 0), (-dc, dc, 0)))


def _lines(board: jax.Array, player: jax.Array, rules: BrandubRules) -> tuple[jax.Array, jax.Array]:
    """uint32 [7] twice: the rows and the columns of `board` (int8 [49]) as bit masks (see above) for `player`."""
    grid = board.reshape(SIZE, SIZE)
    empty = grid == EMPTY
    open_to_pawns = empty if rules.castle_passable else empty & ~_CASTLE_GRID
    monarch = (grid == MONARCH) & (player == DEFENDERS)
    pieces = (grid == jnp.where(player == ATTACKERS, ATTACKER, DEFENDER).astype(grid.dtype)) | monarch
    # Each square's bits, at position 0 of each byte; shifted to its place in its row and in its column.
    bits = (empty.astype(jnp.uint32) << _EMPTY_BYTE) | (pieces.astype(jnp.uint32) << _PIECE_BYTE) \
        | (monarch.astype(jnp.uint32) << _MONARCH_BYTE) | (open_to_pawns.astype(jnp.uint32) << _OPEN_BYTE)
    square = np.arange(SIZE, dtype=np.uint32)
    rows = (bits << square).sum(-1, dtype=jnp.uint32)  # the bits are disjoint: a sum is an or
    columns = (bits << square[:, None]).sum(-2, dtype=jnp.uint32)
    return rows, columns


def _moves(lines: tuple[jax.Array, jax.Array], rules: BrandubRules) -> jax.Array:
    """bool [1176]: the legal action mask on the rows and columns `lines` of `_lines`."""
    rows, columns = lines
    shape = (SIZE, SIZE, ACTIONS_PER_CELL)
    # Flat [1176] operands, not [7, 7, 24]: XLA's CPU loops run several times faster over them.
    line = jnp.where(np.broadcast_to(_ALONG_ROWS, shape).ravel(), jnp.broadcast_to(rows[:, None, None], shape).ravel(),
                     jnp.broadcast_to(columns[None, :, None], shape).ravel())
    window = _windows(rules.castle_passable, rules.monarch_enters_castle)
    return (line & window) == window


def _can_move(lines: tuple[jax.Array, jax.Array], rules: BrandubRules) -> jax.Array:
    """bool []: whether the side of `lines` (`_lines`) has a legal move. It has one if it has one of distance 1
    or 2: a piece kept from stopping on its first square (the castle, the only such square between two others)
    passes it onto the square beyond, where any piece may stop."""
    both = jnp.stack(lines)  # [rows | columns, 7]
    empty, monarch = (both >> _EMPTY_BYTE) & _LINE, (both >> _MONARCH_BYTE) & _LINE
    pawns, open_to_pawns = ((both >> _PIECE_BYTE) & _LINE) & ~monarch, (both >> _OPEN_BYTE) & _LINE
    monarch_stops = _MONARCH_STOPS[rules.monarch_enters_castle]
    found = jnp.zeros_like(both)
    for up in (True, False):  # towards the higher bits (N, W) or the lower (S, E)
        def ahead(line, distance, up=up):
            return (line << distance) & _LINE if up else line >> distance
        first = ahead(open_to_pawns, 1)
        found |= pawns & ((first & ahead(_PAWN_STOPS, 1)) | (first & ahead(open_to_pawns, 2) & ahead(_PAWN_STOPS, 2)))
        first = ahead(empty, 1)
        found |= monarch & ((first & ahead(monarch_stops, 1)) | (first & ahead(empty, 2) & ahead(monarch_stops, 2)))
    return jnp.any(found != 0)


def legal_moves(board: jax.Array, player: jax.Array, rules: BrandubRules) -> jax.Array:
    """bool [1176]: the moves of `player` (int32 []) on `board` (int8 [49]), by the encoding of the docstring."""
    return _moves(_lines(board, player, rules), rules)


def _extend(board: jax.Array) -> jax.Array:
    """The board [49] with the off-board sentinel appended: [50]."""
    return jnp.concatenate([board, jnp.full((1,), OFF_BOARD, board.dtype)])


def _remove(board: jax.Array, cells: jax.Array, removed: jax.Array) -> jax.Array:
    """The board (int8 [49]) with the pieces on `cells` (int32 [n]) emptied where `removed` (bool [n])."""
    hit = (cells[:, None] == np.arange(NUM_CELLS)) & removed[:, None]
    return jnp.where(jnp.any(hit, axis=0), jnp.int8(EMPTY), board)


def _capture_pawns(board: jax.Array, destination: jax.Array, piece: jax.Array, mover: jax.Array,
                   rules: BrandubRules) -> jax.Array:
    """The board after the pawns that the piece just moved to `destination` captures are removed."""
    board_ext = _extend(board)
    neighbours = jnp.asarray(RAYS)[destination, :, 0]  # [4]
    beyond = jnp.asarray(RAYS)[destination, :, 1]  # [4]
    victim, anvil = board_ext[neighbours], board_ext[beyond]
    enemy = jnp.where(mover == ATTACKERS, DEFENDER, ATTACKER)
    if rules.king_armed:
        friend = jnp.where(mover == ATTACKERS, anvil == ATTACKER, (anvil == DEFENDER) | (anvil == MONARCH))
        can_capture = jnp.bool_(True)
    else:
        friend = jnp.where(mover == ATTACKERS, anvil == ATTACKER, anvil == DEFENDER)
        can_capture = piece != MONARCH
    hostile = jnp.asarray(IS_CORNER)[beyond] | (jnp.asarray(IS_CASTLE)[beyond] & (anvil == EMPTY))
    return _remove(board, neighbours, (victim == enemy) & (friend | hostile) & can_capture)


def _monarch_captured(board: jax.Array, destination: jax.Array, rules: BrandubRules) -> jax.Array:
    """bool []: the attacker just moved to `destination` captures the monarch (if it is on the board)."""
    monarch = jnp.argmax(board == MONARCH)
    present = jnp.any(board == MONARCH)
    sides = jnp.asarray(RAYS)[monarch, :, 0]  # [4], N E S W
    side_value = _extend(board)[sides]
    hostile = (
        (side_value == ATTACKER)
        | jnp.asarray(IS_CORNER)[sides]
        | (jnp.asarray(IS_CASTLE)[sides] & (side_value == EMPTY))
    )
    from_side = sides == destination  # the captor's side
    by_two = jnp.any(from_side & jnp.roll(hostile, 2))  # the opposite side (N<->S, E<->W) is hostile too
    by_four = jnp.all(hostile)
    if rules.monarch_capture == "two":
        captured = by_two
    elif rules.monarch_capture == "four":
        captured = by_four
    else:
        captured = jnp.where(jnp.asarray(NEAR_CASTLE)[monarch], by_four, by_two)
    return present & jnp.any(from_side) & captured


def _flanked(board: jax.Array, rules: BrandubRules) -> jax.Array:
    """bool [49]: the pieces on `board` (int8 [49]) that stand flanked, as `capture` other than "active" removes
    them: a pawn with hostile neighbours on opposite sides, the monarch as `monarch_capture` says."""
    grid = board.reshape(SIZE, SIZE)
    hostile = []  # [4] of [7, 7]: the neighbour in each direction N E S W is hostile to the cell's piece
    for direction, (dr, dc) in enumerate(DIRECTION_STEPS):
        side = _shift(grid, dr, dc, OFF_BOARD)  # what stands there
        terrain = _NEXT_CORNER[direction] | (_NEXT_CASTLE[direction] & (side == EMPTY))
        enemy = ((side == DEFENDER) | (side == MONARCH)) if rules.king_armed else (side == DEFENDER)
        # Exclusive: the monarch on its corner (the move that escapes) is no anvil, as the source document counts
        # it and the corner as two hostile things, which are not one. Nothing else stands on the castle or a corner.
        against_attacker = enemy ^ terrain
        hostile.append(jnp.where(grid == ATTACKER, against_attacker, (side == ATTACKER) | terrain))
    by_two = (hostile[0] & hostile[2]) | (hostile[1] & hostile[3])
    by_four = hostile[0] & hostile[1] & hostile[2] & hostile[3]
    if rules.monarch_capture == "two":
        monarch = by_two
    elif rules.monarch_capture == "four":
        monarch = by_four
    else:
        monarch = jnp.where(_NEAR_CASTLE_GRID, by_four, by_two)
    return (jnp.where(grid == MONARCH, monarch, by_two) & (grid != EMPTY)).reshape(NUM_CELLS)


def _beside(destination: jax.Array) -> jax.Array:
    """bool [49]: the four neighbours of the cell `destination` (bool [7, 7], one-hot)."""
    near = jnp.zeros((SIZE, SIZE), bool)
    for dr, dc in DIRECTION_STEPS:
        near = near | _shift(destination, dr, dc, False)
    return near.reshape(NUM_CELLS)


def _capture(board: jax.Array, destination: jax.Array, piece: jax.Array, mover: jax.Array,
             rules: BrandubRules) -> jax.Array:
    """The board (int8 [49]) after the captures, by `rules.capture`, of the move that put `piece` on `destination`."""
    if rules.capture == "board":
        return jnp.where(_flanked(board, rules), jnp.int8(EMPTY), board)
    moved_taken = (jnp.arange(NUM_CELLS) == destination) & _flanked(board, rules)  # [49], at most the moved piece
    if rules.capture == "neighbours":
        board = jnp.where(moved_taken, jnp.int8(EMPTY), board)
        beside = jnp.asarray(RAYS)[destination, :, 0]  # [4]
        return _remove(board, beside, _flanked(board, rules)[jnp.minimum(beside, NUM_CELLS - 1)])
    after = _capture_pawns(board, destination, piece, mover, rules)
    monarch_captured = (mover == ATTACKERS) & _monarch_captured(after, destination, rules)
    after = jnp.where(monarch_captured & (after == MONARCH), jnp.int8(EMPTY), after)
    if rules.capture == "passive":  # a moved piece taken captures nothing
        after = jnp.where(jnp.any(moved_taken), jnp.where(moved_taken, jnp.int8(EMPTY), board), after)
    return after


def position_hash(board: jax.Array, player: jax.Array) -> jax.Array:
    """uint32 []: the Zobrist hash of a position (board int8 [49] and the player to move)."""
    keys = jnp.where(board == ATTACKER, _ZOBRIST[:, ATTACKER], jnp.where(
        board == DEFENDER, _ZOBRIST[:, DEFENDER], jnp.where(board == MONARCH, _ZOBRIST[:, MONARCH], np.uint32(0))))
    board_hash = jax.lax.reduce(keys, np.uint32(0), jax.lax.bitwise_xor, (0,))
    return board_hash ^ jnp.where(player == DEFENDERS, _ZOBRIST_DEFENDERS_TO_MOVE, np.uint32(0))


def _state_of(board: jax.Array, player: jax.Array, move_count: jax.Array, rules: BrandubRules) -> BrandubState:
    """A live position with a fresh history holding only itself."""
    history = jnp.zeros(max(rules.history_size, 1), jnp.uint32).at[0].set(position_hash(board, player))
    return BrandubState(
        current_player=jnp.asarray(player, jnp.int32),
        legal_action_mask=legal_moves(board, player, rules),
        terminated=jnp.bool_(False),
        rewards=jnp.zeros(2, jnp.float32),
        board=board,
        move_count=jnp.asarray(move_count, jnp.int32),
        history=history,
        num_history=jnp.int32(1),
    )


_jit_state_of = jax.jit(_state_of, static_argnames="rules")  # for from_ascii: compiled once, not op by op


def _init(key: jax.Array, *, rules: BrandubRules) -> BrandubState:
    del key  # deterministic start
    return _state_of(jnp.asarray(_parse_cells(START), jnp.int8), jnp.int32(ATTACKERS), jnp.int32(0), rules)


def _move(board: jax.Array, action: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The board (int8 [49]) after the piece of `action` (int32, in range) moves, without captures; the
    destination (int32 []) and the piece moved (int8 [])."""
    source = action // ACTIONS_PER_CELL
    destination = jnp.minimum(jnp.asarray(RAYS).reshape(NUM_ACTIONS)[action], NUM_CELLS - 1)
    piece = board[source]
    cells = np.arange(NUM_CELLS)
    moved = jnp.where(cells == destination, piece, jnp.where(cells == source, jnp.int8(EMPTY), board))
    return moved, destination, piece


def _play(state: BrandubState, action: jax.Array, rules: BrandubRules) -> BrandubState:
    """The raw transition of a legal `action` (int32 in range): move, captures, then the game's end."""
    mover = state.current_player
    moved, destination, piece = _move(state.board, action)
    board = _capture(moved, destination, piece, mover, rules)
    monarch_captured = jnp.any(moved == MONARCH) & ~jnp.any(board == MONARCH)
    escaped = (piece == MONARCH) & jnp.asarray(IS_CORNER)[destination]
    player = 1 - mover
    lines = _lines(board, player, rules)
    legal = _moves(lines, rules)
    stuck = ~_can_move(lines, rules)
    won = monarch_captured | escaped | (stuck & (rules.stalemate == "loses"))
    winner = jnp.where(monarch_captured, ATTACKERS, jnp.where(escaped, DEFENDERS, mover))  # a stuck side loses
    move_count = state.move_count + 1

    history, num_history = state.history, state.num_history
    repeated = jnp.bool_(False)
    if rules.history_size > 0:
        new_hash = position_hash(board, player)
        filled = jnp.arange(rules.history_size) < num_history
        repeated = jnp.sum(filled & (history == new_hash)) >= rules.repetitions - 1
        history = jnp.concatenate([new_hash[None], history[:-1]])
        num_history = jnp.minimum(num_history + 1, rules.history_size)
    terminated = won | stuck | repeated | (move_count >= rules.max_moves)
    rewards = jnp.where(won, jnp.where(jnp.arange(2) == winner, 1.0, -1.0), 0.0).astype(jnp.float32)
    return state.replace(
        current_player=player.astype(jnp.int32),
        legal_action_mask=legal & ~terminated,
        terminated=terminated,
        rewards=rewards,
        board=board,
        move_count=move_count,
        history=history,
        num_history=num_history,
    )


def _step(state: BrandubState, action: jax.Array, *, rules: BrandubRules) -> BrandubState:
    action = jnp.asarray(action, jnp.int32)
    return resolve_step(state, _play(state, jnp.clip(action, 0, NUM_ACTIONS - 1), rules), action)


def _observe(state: BrandubState, *, rules: BrandubRules) -> jax.Array:
    board = state.board.reshape(SIZE, SIZE)
    ones = jnp.ones((SIZE, SIZE), jnp.float32)
    if rules.history_size > 0:
        earlier = jnp.arange(rules.history_size)[1:] < state.num_history
        seen = jnp.sum(earlier & (state.history[1:] == state.history[0])) / (rules.repetitions - 1)
    else:
        seen = jnp.float32(0.0)
    planes = [
        board == ATTACKER,
        board == DEFENDER,
        board == MONARCH,
        ones * (state.current_player == ATTACKERS),
        jnp.asarray(IS_SPECIAL[:NUM_CELLS].reshape(SIZE, SIZE)),
        ones * seen,
        ones * (state.move_count / rules.max_moves),
    ]
    return jnp.stack([p.astype(jnp.float32) for p in planes], axis=-1)


# --------------------------------------------------------------------------------------------------------------
# Symmetries.


@functools.cache
def _symmetries() -> tuple[Symmetry, ...]:
    """The 7 non-identity dihedral maps, with the action permutation of the from x direction x distance code."""
    grid = np.arange(NUM_CELLS).reshape(SIZE, SIZE)
    result = []
    for name, grid_map in _dihedral_grid_maps(SIZE, SIZE):
        original_cell = grid_map(grid).ravel()  # transformed cell -> the original cell found there
        image = np.argsort(original_cell)  # original cell -> its transformed cell
        centre = image[CASTLE]
        turned = [int(np.flatnonzero(RAYS[centre, :, 0] == image[RAYS[CASTLE, d, 0]])[0]) for d in range(4)]
        action_index = np.zeros(NUM_ACTIONS, np.int64)
        for cell in range(NUM_CELLS):
            for direction in range(NUM_DIRECTIONS):
                for distance_index in range(MAX_DISTANCE):
                    original = (cell * NUM_DIRECTIONS + direction) * MAX_DISTANCE + distance_index
                    mapped = (image[cell] * NUM_DIRECTIONS + turned[direction]) * MAX_DISTANCE + distance_index
                    action_index[mapped] = original
        index = tuple(int(i) for i in action_index)
        # The maps slice the two leading axes, so they act alike on numpy grids and on observations [H, W, C].
        result.append(Symmetry(name=name, transform=grid_map, action_index=index))  # type: ignore[arg-type]
    return tuple(result)


# --------------------------------------------------------------------------------------------------------------
# Text: render, from_ascii, move names.

_CHAR_OF = {EMPTY: ".", ATTACKER: "A", DEFENDER: "D", MONARCH: "K"}
_CELL_OF = {".": EMPTY, "+": EMPTY, "A": ATTACKER, "D": DEFENDER, "K": MONARCH}
_SIDES = ("attackers", "defenders")
_STATUS = re.compile(
    r"^(?:(?P<to_move>attackers|defenders) to move|(?P<winner>attackers|defenders) win"
    r"|draw with (?P<drawn_to_move>attackers|defenders) to move)(?:\s*;\s*(?P<moves>\d+) moves? played)?$"
)


def _render(state: BrandubState) -> str:
    board = np.asarray(state.board)
    lines = ["  " + " ".join(boards.COLUMN_LETTERS[:SIZE])]
    for row in range(SIZE):
        cells = [
            "+" if board[row * SIZE + col] == EMPTY and IS_SPECIAL[row * SIZE + col]
            else _CHAR_OF[int(board[row * SIZE + col])]
            for col in range(SIZE)
        ]
        lines.append(f"{SIZE - row} " + " ".join(cells))
    player, moves = int(state.current_player), int(state.move_count)
    rewards = np.asarray(state.rewards)
    if not bool(state.terminated):
        status = f"{_SIDES[player]} to move"
    elif rewards[0] > 0 or rewards[1] > 0:
        status = f"{_SIDES[int(np.argmax(rewards))]} win"
    else:
        status = f"draw with {_SIDES[player]} to move"
    lines.append(f"{status}; {counted(moves, 'move')} played")
    return "\n".join(lines)


def _parse_cells(text: str) -> np.ndarray:
    """The board rows of `text` as int8 [49]; raises ValueError unless it holds 7 rows of 7 cells."""
    rows = []
    for line in text.strip("\n").splitlines():
        tokens = line.split()
        if tokens and tokens[0].isdecimal():
            tokens = tokens[1:]  # a row label
        if tokens and all(ch in _CELL_OF for token in tokens for ch in token):
            rows.append([_CELL_OF[ch] for token in tokens for ch in token])
    if len(rows) != SIZE or any(len(row) != SIZE for row in rows):
        raise ValueError(
            f"expected a 7 x 7 board of 'A', 'D', 'K' and '.' (or '+' on the castle and corners), found "
            f"{len(rows)} rows of lengths {[len(r) for r in rows]}; write one row per line, rank 7 first"
        )
    return np.asarray(rows, np.int8).ravel()


def _check_pieces(board: np.ndarray) -> None:
    for code, name, most in ((ATTACKER, "attackers", 8), (DEFENDER, "defenders", 4), (MONARCH, "monarchs", 1)):
        if int(np.sum(board == code)) > most:
            raise ValueError(f"the board has {int(np.sum(board == code))} {name}; Brandub has at most {most}")
    for cell in np.flatnonzero(IS_SPECIAL[:NUM_CELLS]):
        if board[cell] in (ATTACKER, DEFENDER):
            raise ValueError(f"only the monarch may stand on {boards.cell_name(int(cell), SIZE, SIZE, bottom_up=True)}"
                             " (the castle and the corners)")


def _from_ascii(text: str, *, rules: BrandubRules) -> BrandubState:
    board = _parse_cells(text)
    _check_pieces(board)
    statuses = [m for line in text.splitlines() if (m := _STATUS.match(line.strip().lower()))]
    if len(statuses) != 1:
        raise ValueError(
            "expected one status line after the board: 'attackers to move', 'defenders to move', 'attackers win', "
            "'defenders win' or 'draw with attackers to move' (optionally followed by '; N moves played')"
        )
    status = statuses[0]
    side = status["to_move"] or status["drawn_to_move"]
    winner = status["winner"]
    if side:
        player = _SIDES.index(side)
    elif winner == "attackers" and rules.capture != "active" and status["moves"] is not None:
        player = int(status["moves"]) % 2  # the defenders may have lost the monarch by their own move
    else:
        player = 1 - _SIDES.index(winner)  # the winner made the last move
    moves = int(status["moves"]) if status["moves"] is not None else player
    if moves % 2 != player:
        raise ValueError(f"the attackers move first, so after {moves} moves the {_SIDES[moves % 2]} are to move")
    if moves > rules.max_moves or (moves == rules.max_moves and not status["drawn_to_move"] and not winner):
        raise ValueError(f"the game ends after {rules.max_moves} moves; {moves} moves were played")
    cells = np.flatnonzero(board == MONARCH)
    monarch = int(cells[0]) if len(cells) else None
    state = _jit_state_of(jnp.asarray(board), jnp.int32(player), jnp.int32(moves), rules)
    stuck = not bool(np.any(state.legal_action_mask))
    stuck_loses = stuck and rules.stalemate == "loses"
    escaped = monarch is not None and bool(IS_CORNER[monarch])
    if monarch is None and winner != "attackers":
        raise ValueError("the monarch is off the board (captured), so the status must be 'attackers win'")
    if escaped and winner != "defenders":
        raise ValueError("the monarch is on a corner, so the status must be 'defenders win'")
    if winner == "attackers" and monarch is not None and not stuck_loses:
        raise ValueError("'attackers win' needs the monarch captured (off the board)"
                         + (" or the defenders unable to move" if rules.stalemate == "loses" else ""))
    if winner == "defenders" and not escaped and not stuck_loses:
        raise ValueError("'defenders win' needs the monarch on a corner"
                         + (" or the attackers unable to move" if rules.stalemate == "loses" else ""))
    if status["to_move"] and stuck:
        end = f"{_SIDES[1 - player]} win" if stuck_loses else f"draw with {side} to move"
        raise ValueError(f"the {side} cannot move, so the game is over: write '{end}'")
    if status["to_move"]:
        return state
    rewards = np.zeros(2, np.float32)
    if winner:
        rewards[_SIDES.index(winner)], rewards[1 - _SIDES.index(winner)] = 1.0, -1.0
    return state.replace(
        legal_action_mask=jnp.zeros(NUM_ACTIONS, bool), terminated=jnp.bool_(True), rewards=jnp.asarray(rewards)
    )


def _cell_name(cell: int) -> str:
    return boards.cell_name(cell, SIZE, SIZE, bottom_up=True)


def action_to_string(action: int) -> str:
    """ "d2-d3" (from-to), or "a7:N1" (direction and distance) when the destination is off the board."""
    action = int(action)
    if not 0 <= action < NUM_ACTIONS:
        raise ValueError(f"action {action} is out of range [0, {NUM_ACTIONS})")
    source, rest = divmod(action, ACTIONS_PER_CELL)
    direction, distance_index = divmod(rest, MAX_DISTANCE)
    destination = int(RAYS[source, direction, distance_index])
    if destination == NUM_CELLS:
        return f"{_cell_name(source)}:{DIRECTION_LETTERS[direction]}{distance_index + 1}"
    return f"{_cell_name(source)}-{_cell_name(destination)}"


_MOVE = re.compile(r"^([a-g]\d+)\s*(?:-?\s*([a-g]\d+)|:\s*([nesw])([1-6]))$")


def string_to_action(text: str) -> int:
    """Parses "d2-d3", "d2d3" or "d2:N1" (case-insensitive) into an action; raises ValueError with the forms."""
    hint = "write from-to, e.g. 'd2-d3', or from:direction (N, E, S, W) and distance (1-6), e.g. 'd2:N1'"
    match = _MOVE.match(text.strip().lower())
    if not match:
        raise ValueError(f"cannot read {text!r} as a move: {hint}")
    source = boards.parse_cell(match[1], SIZE, SIZE, bottom_up=True)
    if match[2] is not None:
        destination = boards.parse_cell(match[2], SIZE, SIZE, bottom_up=True)
        found = np.argwhere(RAYS[source] == destination)
        if len(found) == 0:
            raise ValueError(f"{text!r} is not a straight move along a row or column: {hint}")
        direction, distance_index = (int(i) for i in found[0])
    else:
        direction, distance_index = DIRECTION_LETTERS.lower().index(match[3]), int(match[4]) - 1
    return (source * NUM_DIRECTIONS + direction) * MAX_DISTANCE + distance_index


# --------------------------------------------------------------------------------------------------------------


def make_brandub(
    *,
    king_armed: bool = True,
    monarch_capture: str = "four_near_castle",
    castle_passable: bool = True,
    monarch_enters_castle: bool = True,
    capture: str = "active",
    stalemate: str = "loses",
    max_moves: int = 200,
    repetitions: int = 3,
    history_size: int = 64,
) -> Game:
    """Brandub with the given rule options; see the module docstring for the rules and the defaults.

    Args:
      king_armed: the monarch captures and serves as an anvil, like a defending pawn.
      monarch_capture: "four_near_castle", "two" or "four" (how many sides attackers must hold).
      castle_passable: pawns may pass through the empty castle (they may never stop there).
      monarch_enters_castle: the monarch may stop on the castle (False: no piece may, as in the source document).
      capture: which pieces a move checks for capture: "active" (the enemy pawns the moved piece flanks),
        "passive" (also the moved piece itself), "neighbours" (the moved piece and every piece beside it: the
        source document) or "board" (every piece: the `brandub` package).
      stalemate: a side that cannot move on its turn "loses", or the game ends in a "draw".
      max_moves: the game is drawn after this many moves (also `max_length`).
      repetitions: a position occurring this many times (within the history) draws.
      history_size: how many earlier positions are remembered for repetitions; 0 turns the rule off.
    Raises:
      ValueError: for an option out of its range.
    """
    rules = BrandubRules(
        king_armed=king_armed,
        monarch_capture=monarch_capture,
        castle_passable=castle_passable,
        monarch_enters_castle=monarch_enters_castle,
        capture=capture,
        stalemate=stalemate,
        max_moves=max_moves,
        repetitions=repetitions,
        history_size=history_size,
    )
    return _make(rules, "brandub", BrandubRules())


def make_brandub_document(**options) -> Game:
    """Brandub as the source document plays it, "brandub_document": `make_brandub(**DOCUMENT_RULES)` under its
    own name; `options` (those of `make_brandub`) change it further, named in the game's name.

    Raises:
      ValueError: for an option `make_brandub` does not take, or one out of its range.
    """
    unknown = sorted(set(options) - {f.name for f in dataclasses.fields(BrandubRules)})
    if unknown:
        raise ValueError(f"unknown Brandub options {unknown}; make_brandub's options are "
                         f"{[f.name for f in dataclasses.fields(BrandubRules)]}")
    return _make(dataclasses.replace(DOCUMENT, **options), "brandub_document", DOCUMENT)


def _make(rules: BrandubRules, name: str, base: BrandubRules) -> Game:
    """The game of `rules`, named `name` with the options that differ from `base` in brackets."""
    changed = [f"{f.name}={getattr(rules, f.name)!r}" for f in dataclasses.fields(rules)
               if getattr(rules, f.name) != getattr(base, f.name)]
    return Game(
        name=name + (f"({', '.join(changed)})" if changed else ""),
        num_actions=NUM_ACTIONS,
        observation_shape=(SIZE, SIZE, NUM_PLANES),
        max_length=rules.max_moves,
        init=functools.partial(_init, rules=rules),
        step=functools.partial(_step, rules=rules),
        observe=functools.partial(_observe, rules=rules),
        render=_render,
        symmetries=_symmetries(),
        from_ascii=functools.partial(_from_ascii, rules=rules),
        action_to_string=action_to_string,
        string_to_action=string_to_action,
        draw=functools.partial(drawing.draw_tafl, destinations=RAYS.reshape(NUM_ACTIONS)),
    )

