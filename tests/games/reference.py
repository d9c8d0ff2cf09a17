"""Plain-Python reference rules of tic-tac-toe and Connect Four, to test azjax's jitted games against.

Written from the rules, not from azjax: no jax, no imports from azjax, a different board representation (a grid
of "X"/"O"/None for tic-tac-toe, columns as stacks for Connect Four) and wins found by scanning the whole board
rather than the lines through the last stone.

The protocol conventions are modelled too, since they are what the tests compare: player 0 is X and moves first;
`play` returns the rewards [2] indexed by player id (+1 win, -1 loss, 0 draw), paid only by the move that ends
the game; an illegal or out-of-range action loses at once for the player who made it; once the game is over,
every action changes nothing and pays nothing. `board` exports the position in azjax's documented encoding
(row-major, row 0 at the top, 0 empty, 1 X, 2 O) so the two can be compared cell by cell.
"""

from __future__ import annotations

import numpy as np

SYMBOLS = ("X", "O")  # SYMBOLS[player id]
_CODE = {None: 0, "X": 1, "O": 2}
_DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


def players_with_line(grid: list[list[str | None]], k: int) -> set[str]:
    """The symbols that own k equal stones in a straight line anywhere on `grid` (rows of "X", "O" or None)."""
    height, width = len(grid), len(grid[0])
    found = set()
    for r in range(height):
        for c in range(width):
            symbol = grid[r][c]
            if symbol is None or symbol in found:
                continue
            for dr, dc in _DIRECTIONS:
                end_r, end_c = r + (k - 1) * dr, c + (k - 1) * dc
                if not (0 <= end_r < height and 0 <= end_c < width):
                    continue
                if all(grid[r + i * dr][c + i * dc] == symbol for i in range(1, k)):
                    found.add(symbol)
                    break
    return found


class ReferenceGame:
    """The protocol around a game's rules; subclasses say which actions are legal and where a stone lands."""

    num_actions: int
    line_length: int

    def __init__(self) -> None:
        self.to_move = 0  # player id
        self.outcome: str | None = None  # None while playing, then "X", "O" or "draw"
        self.forfeited = False  # the game ended on an illegal action

    @property
    def terminated(self) -> bool:
        return self.outcome is not None

    def legal_actions(self) -> list[int]:
        if self.terminated:
            return []
        return [a for a in range(self.num_actions) if self._is_open(a)]

    def play(self, action: int) -> list[float]:
        """Makes `action` for the player to move; returns the rewards [2] by player id."""
        if self.terminated:
            return [0.0, 0.0]
        mover = self.to_move
        if not (0 <= action < self.num_actions and self._is_open(action)):
            self.forfeited = True
            self.outcome = SYMBOLS[1 - mover]
            return [-1.0 if p == mover else 1.0 for p in range(2)]
        self._put(action, SYMBOLS[mover])
        self.to_move = 1 - mover
        grid = self.grid()
        if SYMBOLS[mover] in players_with_line(grid, self.line_length):
            self.outcome = SYMBOLS[mover]
            return [1.0 if p == mover else -1.0 for p in range(2)]
        if all(cell is not None for row in grid for cell in row):
            self.outcome = "draw"
        return [0.0, 0.0]

    def winners(self) -> set[str]:
        return players_with_line(self.grid(), self.line_length)

    def board(self) -> list[int]:
        """The position in azjax's encoding: flat, row-major, row 0 at the top; 0 empty, 1 X, 2 O."""
        return [_CODE[cell] for row in self.grid() for cell in row]

    def ascii(self) -> str:
        """The grid as rows of 'X', 'O' and '.', top row first (the form `from_ascii` reads)."""
        return "\n".join("".join(cell or "." for cell in row) for row in self.grid())

    def grid(self) -> list[list[str | None]]:
        raise NotImplementedError

    def _is_open(self, action: int) -> bool:
        raise NotImplementedError

    def _put(self, action: int, symbol: str) -> None:
        raise NotImplementedError


class TicTacToe(ReferenceGame):
    """3 x 3, three in a row; action = row * 3 + col with row 0 at the top."""

    num_actions = 9
    line_length = 3

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[list[str | None]] = [[None, None, None] for _ in range(3)]

    def grid(self) -> list[list[str | None]]:
        return self.cells

    def _is_open(self, action: int) -> bool:
        row, col = divmod(action, 3)
        return self.cells[row][col] is None

    def _put(self, action: int, symbol: str) -> None:
        row, col = divmod(action, 3)
        self.cells[row][col] = symbol


class ConnectFour(ReferenceGame):
    """7 columns x 6 rows, four in a row; action = column, the stone falls to the lowest empty cell."""

    num_actions = 7
    line_length = 4
    rows = 6

    @staticmethod
    def feature_planes(board: np.ndarray, to_move: np.ndarray) -> np.ndarray:
        """Observation version 2's planes beyond the stones (`connect_four_features`)."""
        return connect_four_features(board, to_move)

    def __init__(self) -> None:
        super().__init__()
        self.columns: list[list[str]] = [[] for _ in range(7)]  # each column bottom-up

    def grid(self) -> list[list[str | None]]:
        return [
            [column[height] if height < len(column) else None for column in self.columns]
            for height in reversed(range(self.rows))
        ]

    def _is_open(self, action: int) -> bool:
        return len(self.columns[action]) < self.rows

    def _put(self, action: int, symbol: str) -> None:
        self.columns[action].append(symbol)


def connect_four_features(board: np.ndarray, to_move: np.ndarray) -> np.ndarray:
    """Connect Four's feature planes (azjax's observation version 2 beyond the stones), from boards in azjax's
    encoding [N, 42] and the player to move [N]: float32 [N, 6, 7, 3], the playable cells (in each column the cell
    just above its stones), the empty cells that would complete a line of four of the mover's stones, and those of
    the opponent's. Vectorised over N with numpy, by enumerating every line of four and its one empty cell."""
    grid = np.asarray(board).reshape(-1, 6, 7)  # row 0 at the top
    empty = grid == 0
    playable = np.zeros(grid.shape, bool)
    heights = (~empty).sum(axis=1)  # [N, 7] stones per column (they rest on each other)
    for c in range(7):
        open_ = heights[:, c] < 6
        playable[open_, 5 - heights[open_, c], c] = True
    own_code = np.asarray(to_move) + 1  # X = 1, O = 2
    planes = [playable]
    for code in (own_code, 3 - own_code):
        threat = np.zeros(grid.shape, bool)
        for r in range(6):
            for c in range(7):
                for dr, dc in _DIRECTIONS:
                    cells = [(r + i * dr, c + i * dc) for i in range(4)]
                    if not all(0 <= rr < 6 and 0 <= cc < 7 for rr, cc in cells):
                        continue
                    values = np.stack([grid[:, rr, cc] for rr, cc in cells], axis=1)  # [N, 4]
                    mine = (values == code[:, None]).sum(axis=1) == 3
                    for i, (rr, cc) in enumerate(cells):
                        threat[:, rr, cc] |= mine & (values[:, i] == 0)
        planes.append(threat)
    return np.stack(planes, axis=-1).astype(np.float32)


def play_out(reference_class: type[ReferenceGame], actions: list[int]) -> ReferenceGame:
    """A fresh reference game after `actions`."""
    game = reference_class()
    for action in actions:
        game.play(action)
    return game
