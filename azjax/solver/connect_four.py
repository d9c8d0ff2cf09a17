"""An exact Connect Four solver: bitboards, alpha-beta negamax with a transposition table, null-window search.

Compiled with numba on the host (the search is a deep, branching recursion: nothing a GPU or XLA does well).
The known techniques, written for azjax: each side's stones in a 49-bit word (7 columns of 6 cells plus an always
empty guard cell), threats found by shifts, only moves that do not lose at once are searched, moves ordered by
the threats they create (centre first on ties), bounds kept in a transposition table that lives as long as the
`Solver`, and the exact score found by a sequence of null-window searches.

Scores follow Pascal Pons's convention, always for the player to move: a position the mover wins with their
k-th stone (counting their stones already on the board) scores 22 - k, a position the mover loses to the
opponent's k-th stone scores k - 22, a draw 0. So a win scores 1..21 (faster wins more), a loss -21..-1. The
score of a *move* is the score of the position for the player who makes it: a winning move played as the mover's
k-th stone scores 22 - k; otherwise it scores minus the score of the position it leads to.

    solver = Solver()
    solver.solve([3, 3, 4])          # columns played from the empty board (0 = a): the mover's score
    solver.move_scores([3, 3, 4])    # int8 [7]: each move's score for the mover; ILLEGAL where a column is full

Cost (2-core CPU): middle-game and end-game positions take micro- to milliseconds; the first few moves of a game
can take minutes (the empty board is a first-player win: the centre column wins, its two neighbours draw, the
rest lose). `Solver(max_seconds=...)` stops a search that runs too long with `SolveTimeout`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numba
import numpy as np

WIDTH, HEIGHT = 7, 6
NUM_CELLS = WIDTH * HEIGHT
ILLEGAL = -128  # the score of a move into a full column (int8)

_U = np.uint64
_BOTTOM = _U(sum(1 << (column * (HEIGHT + 1)) for column in range(WIDTH)))  # the lowest cell of each column
_BOARD = _U(int(_BOTTOM) * ((1 << HEIGHT) - 1))  # every playable cell (guard cells excluded)
_COLUMNS = np.array([((1 << HEIGHT) - 1) << (column * (HEIGHT + 1)) for column in range(WIDTH)], np.uint64)
_ORDER = np.array([3, 2, 4, 1, 5, 0, 6], np.int64)  # centre first: the better moves, on average
_TABLE_SIZE = 8_388_593  # a prime; the table takes ~80 MB (key, lower and upper bound per entry)
# An empty slot's key: every key (position + mask) is below 2**49, and 0 is the empty board's, so a table of
# zeros would hold the empty board with the bounds (0, 0) of a draw.
_EMPTY_KEY = _U(2**64 - 1)
_NO_BOUND = 100  # beyond any score: an entry without a lower (upper) bound holds -100 (+100)


# --------------------------------------------------------------------------------------------------------------
# Bitboard primitives. `position` holds the stones of the player to move, `mask` every stone.


@numba.njit(cache=True, inline="always")
def _winning_cells(position: np.uint64, mask: np.uint64) -> np.uint64:
    """The empty cells where one more stone of `position` completes four in a row (playable now or later)."""
    found = (position << _U(1)) & (position << _U(2)) & (position << _U(3))  # vertical: only above
    for shift in (_U(HEIGHT + 1), _U(HEIGHT), _U(HEIGHT + 2)):  # horizontal and the two diagonals
        pair = (position << shift) & (position << _U(2) * shift)
        found |= pair & (position << _U(3) * shift)
        found |= pair & (position >> shift)
        pair = (position >> shift) & (position >> _U(2) * shift)
        found |= pair & (position << shift)
        found |= pair & (position >> _U(3) * shift)
    return found & (_BOARD ^ mask)


@numba.njit(cache=True, inline="always")
def _playable(mask: np.uint64) -> np.uint64:
    """The lowest empty cell of every column that is not full."""
    return (mask + _BOTTOM) & _BOARD


@numba.njit(cache=True, inline="always")
def _popcount(bits: np.uint64) -> int:
    count = 0
    while bits:
        bits &= bits - _U(1)
        count += 1
    return count


@numba.njit(cache=True, inline="always")
def _can_win_now(position: np.uint64, mask: np.uint64) -> bool:
    return (_winning_cells(position, mask) & _playable(mask)) != _U(0)


@numba.njit(cache=True, inline="always")
def _non_losing_moves(position: np.uint64, mask: np.uint64) -> np.uint64:
    """The playable cells after which the opponent cannot win at once (the mover has no win in one)."""
    playable = _playable(mask)
    threats = _winning_cells(position ^ mask, mask)
    forced = playable & threats
    if forced:
        if forced & (forced - _U(1)):  # two threats to block: every move loses
            return _U(0)
        playable = forced
    return playable & ~(threats >> _U(1))  # never play just below an opponent's winning cell


# --------------------------------------------------------------------------------------------------------------
# The search.


@numba.njit(cache=True)
def _negamax(position, mask, num_moves, alpha, beta, table_keys, table_lower, table_upper, moves, threats, counters):
    """A bound on the mover's score: fail-soft alpha-beta in the window (alpha, beta).

    Requires that the mover cannot win at once (callers check; the search keeps it so). `moves` and `threats`
    are scratch space, a row of 7 per stone count. `counters` holds [nodes searched, stopped (0/1), node budget
    (0: none)]; once the budget is spent every call returns 0 without touching the table, and the caller
    discards the result.
    """
    counters[0] += 1
    if counters[2] > 0 and counters[0] > counters[2]:
        counters[1] = 1
    if counters[1]:
        return 0
    candidates = _non_losing_moves(position, mask)
    if candidates == _U(0):
        return -((NUM_CELLS - num_moves) // 2)  # the opponent wins with their next stone
    if num_moves >= NUM_CELLS - 2:
        return 0  # two cells left and neither side can win with them
    lowest = -((NUM_CELLS - 2 - num_moves) // 2)  # the opponent cannot win with their next stone
    if alpha < lowest:
        alpha = lowest
        if alpha >= beta:
            return alpha
    highest = (NUM_CELLS - 1 - num_moves) // 2  # the mover cannot win with this stone
    if beta > highest:
        beta = highest
        if alpha >= beta:
            return beta
    key = position + mask  # unique per position: each column's stones plus a bit above them
    slot = key % _U(_TABLE_SIZE)
    if table_keys[slot] == key:
        if table_lower[slot] > alpha:
            alpha = table_lower[slot]
            if alpha >= beta:
                return alpha
        if table_upper[slot] < beta:
            beta = table_upper[slot]
            if alpha >= beta:
                return beta

    # Order the candidate moves by the winning cells they make (insertion sort, stable: centre first on ties).
    count = 0
    for k in range(WIDTH):
        move = candidates & _COLUMNS[_ORDER[k]]
        if move:
            made = _popcount(_winning_cells(position | move, mask))
            j = count
            while j > 0 and threats[num_moves, j - 1] < made:
                moves[num_moves, j] = moves[num_moves, j - 1]
                threats[num_moves, j] = threats[num_moves, j - 1]
                j -= 1
            moves[num_moves, j] = move
            threats[num_moves, j] = made
            count += 1

    for k in range(count):
        score = -_negamax(
            position ^ mask, mask | moves[num_moves, k], num_moves + 1, -beta, -alpha,
            table_keys, table_lower, table_upper, moves, threats, counters,
        )
        if counters[1]:
            return 0
        if score >= beta:
            _store(table_keys, table_lower, table_upper, key, score, _NO_BOUND)
            return score
        if score > alpha:
            alpha = score
    _store(table_keys, table_lower, table_upper, key, -_NO_BOUND, alpha)
    return alpha


@numba.njit(cache=True, inline="always")
def _store(table_keys, table_lower, table_upper, key, lower, upper):
    """Tightens the bounds of `key`'s entry (replacing whatever other position held the slot)."""
    slot = key % _U(_TABLE_SIZE)
    if table_keys[slot] != key:
        table_keys[slot] = key
        table_lower[slot] = -_NO_BOUND
        table_upper[slot] = _NO_BOUND
    table_lower[slot] = max(table_lower[slot], lower)
    table_upper[slot] = min(table_upper[slot], upper)


@numba.njit(cache=True)
def _solve(position, mask, num_moves, weak, table_keys, table_lower, table_upper, moves, threats, counters):
    """The exact score of a non-terminal position for the player to move (see the module docstring); with
    `weak`, only its sign (+1 win, 0 draw, -1 loss), which takes fewer searches."""
    if _can_win_now(position, mask):
        return 1 if weak else (NUM_CELLS + 1 - num_moves) // 2
    low = -1 if weak else -((NUM_CELLS - num_moves) // 2)
    high = 1 if weak else (NUM_CELLS + 1 - num_moves) // 2
    while low < high:  # null-window searches, probing near 0 first (most positions are close)
        middle = low + (high - low) // 2
        if middle <= 0 and int(low / 2) < middle:
            middle = int(low / 2)
        elif middle >= 0 and int(high / 2) > middle:
            middle = int(high / 2)
        bound = _negamax(
            position, mask, num_moves, middle, middle + 1,
            table_keys, table_lower, table_upper, moves, threats, counters,
        )
        if counters[1]:
            return 0
        if bound <= middle:
            high = bound
        else:
            low = bound
    if weak:  # a fail-soft bound may lie beyond the window: keep its sign
        return (low > 0) - (low < 0)
    return low


# --------------------------------------------------------------------------------------------------------------
# The host interface.


class SolveTimeout(RuntimeError):
    """A search ran past the `Solver`'s `max_seconds`."""


def playable_columns(mask: int) -> list[int]:
    """The columns that are not full, given every stone on the board as a bitboard."""
    return [column for column in range(WIDTH) if not mask & (1 << (column * (HEIGHT + 1) + HEIGHT - 1))]


def wins(position: int, mask: int, column: int) -> bool:
    """Whether the mover's stone in `column` (not full) completes four in a row."""
    move = (mask + (1 << (column * (HEIGHT + 1)))) & int(_COLUMNS[column])
    return bool(int(_winning_cells(_U(position), _U(mask))) & move)


def play(position: int, mask: int, column: int) -> tuple[int, int]:
    """The bitboards `(position, mask)` after the mover plays `column` (not full): `position` becomes the
    opponent's stones, the new mover's."""
    move = (mask + (1 << (column * (HEIGHT + 1)))) & int(_COLUMNS[column])
    return position ^ mask, mask | move


def encode_moves(moves: Sequence[int]) -> tuple[int, int, int]:
    """The bitboards `(position, mask, num_moves)` after playing `moves` (columns 0..6) from the empty board.

    Raises:
      ValueError: a column out of range or full, or a move after the game was won.
    """
    position, mask = 0, 0
    for number, column in enumerate(moves):
        column = int(column)
        if not 0 <= column < WIDTH:
            raise ValueError(f"move {number + 1} is column {column}; columns are 0..{WIDTH - 1}")
        if column not in playable_columns(mask):
            raise ValueError(f"move {number + 1} plays column {column}, which is full")
        if wins(position, mask, column):
            raise ValueError(f"move {number + 1} wins the game, so no position follows it")
        position, mask = play(position, mask, column)
    return position, mask, len(moves)


def encode_board(board: np.ndarray, current_player: int) -> tuple[int, int, int]:
    """The bitboards `(position, mask, num_moves)` of an azjax Connect Four board (int8 [42], row 0 at the top,
    1 = player 0's stone, 2 = player 1's) with `current_player` to move."""
    grid = np.asarray(board).reshape(HEIGHT, WIDTH)
    position, mask = 0, 0
    for row in range(HEIGHT):
        for column in range(WIDTH):
            if grid[row, column]:
                bit = 1 << (column * (HEIGHT + 1) + HEIGHT - 1 - row)
                mask |= bit
                if grid[row, column] == current_player + 1:
                    position |= bit
    return position, mask, int(np.count_nonzero(grid))


class Solver:
    """Exact scores of Connect Four positions, with a transposition table kept across calls (~80 MB).

    Positions are given as move lists (columns 0..6 from the empty board) or as bitboards from `encode_board`.
    Every score is for the player to move (module docstring). Not thread-safe: one `Solver` per thread/process.
    """

    def __init__(self, *, max_seconds: float | None = None):
        """`max_seconds`: give up on a search after about this long (`SolveTimeout`); None searches to the end."""
        self.max_seconds = max_seconds
        self._keys = np.full(_TABLE_SIZE, _EMPTY_KEY, np.uint64)
        self._lower = np.zeros(_TABLE_SIZE, np.int8)
        self._upper = np.zeros(_TABLE_SIZE, np.int8)
        self._moves = np.zeros((NUM_CELLS + 1, WIDTH), np.uint64)  # scratch for move ordering
        self._threats = np.zeros((NUM_CELLS + 1, WIDTH), np.int64)
        self.nodes = 0  # positions searched, over the solver's life

    def reset(self) -> None:
        """Empties the transposition table (results never depend on it; only speed does)."""
        self._keys[:] = _EMPTY_KEY

    def _run(self, position: int, mask: int, num_moves: int, weak: bool = False) -> int:
        # Without a time limit one search; with one, searches with a doubling node budget, checking the clock
        # between them (the table keeps the work of each, so the repeats cost little).
        start, budget = time.perf_counter(), 0 if self.max_seconds is None else 1 << 18
        counters = np.zeros(3, np.int64)
        while True:
            counters[:] = (0, 0, budget)
            score = _solve(_U(position), _U(mask), num_moves, weak, self._keys, self._lower, self._upper,
                           self._moves, self._threats, counters)
            self.nodes += int(counters[0])
            if not counters[1]:
                return int(score)
            if self.max_seconds is not None and time.perf_counter() - start > self.max_seconds:
                raise SolveTimeout(
                    f"solving a position with {num_moves} stones took over {self.max_seconds} s "
                    "(early positions can take minutes; raise max_seconds or pass None)"
                )
            budget *= 2

    def solve_bits(self, position: int, mask: int, num_moves: int) -> int:
        """The mover's exact score of a non-terminal position given as bitboards."""
        return self._run(position, mask, num_moves)

    def solve(self, moves: Sequence[int]) -> int:
        """The exact score, for the player to move, of the position after `moves` (columns 0..6)."""
        return self._run(*encode_moves(moves))

    def solve_outcome(self, moves: Sequence[int]) -> int:
        """The outcome for the player to move after `moves`: +1 win, 0 draw, -1 loss (faster than `solve`)."""
        return self._run(*encode_moves(moves), weak=True)

    def move_scores_bits(self, position: int, mask: int, num_moves: int, *, weak: bool = False) -> np.ndarray:
        """Each column's score for the mover, int8 [7] (with `weak`, its sign: +1 win, 0 draw, -1 loss);
        `ILLEGAL` for a full column."""
        scores = np.full(WIDTH, ILLEGAL, np.int8)
        playable = int(_playable(_U(mask)))
        winning = int(_winning_cells(_U(position), _U(mask)))
        for column in range(WIDTH):
            move = playable & int(_COLUMNS[column])
            if not move:
                continue
            if winning & move:
                scores[column] = 1 if weak else (NUM_CELLS + 1 - num_moves) // 2
            else:
                scores[column] = -self._run(position ^ mask, mask | move, num_moves + 1, weak)
        return scores

    def best_moves_bits(self, position: int, mask: int, num_moves: int) -> tuple[np.ndarray, np.ndarray]:
        """What a perfect player needs, cheaper than every move's exact score: each column's outcome for the mover
        (int8 [7]: +1, 0, -1, `ILLEGAL`), and the exact scores of the moves with the best outcome (int8 [7],
        `ILLEGAL` elsewhere), so that it can win fastest and lose slowest. A drawn position needs no exact score."""
        outcomes = self.move_scores_bits(position, mask, num_moves, weak=True)
        best = outcomes.max()
        scores = np.full(WIDTH, ILLEGAL, np.int8)
        if best == 0:
            scores[outcomes == 0] = 0
            return outcomes, scores
        for column in np.flatnonzero(outcomes == best):
            move = int(_playable(_U(mask))) & int(_COLUMNS[column])
            if int(_winning_cells(_U(position), _U(mask))) & move:
                scores[column] = (NUM_CELLS + 1 - num_moves) // 2
            else:
                scores[column] = -self._run(position ^ mask, mask | move, num_moves + 1)
        return outcomes, scores

    def move_scores(self, moves: Sequence[int], *, weak: bool = False) -> np.ndarray:
        """Each column's score for the player to move after `moves`, int8 [7] (with `weak`, only its sign);
        `ILLEGAL` for a full column."""
        return self.move_scores_bits(*encode_moves(moves), weak=weak)


def moves_left(score: int, num_moves: int) -> int:
    """How many more stones are played under perfect play from a position with `num_moves` stones whose score
    for the mover is `score`: to the winning stone, or to the full board for a draw."""
    mover_stones, opponent_stones = num_moves // 2, (num_moves + 1) // 2  # the mover has played the fewer
    if score > 0:  # the mover wins with stone number 22 - score
        return 2 * (22 - score - mover_stones) - 1
    if score < 0:  # the opponent wins with stone number 22 + score
        return 2 * (22 + score - opponent_stones)
    return NUM_CELLS - num_moves
