"""Gomoku rules: random games against a plain-Python reference (pgx 2.6.0 has no Gomoku), then hand-made positions.

Variants played against the reference: "gomoku" (15 x 15, five or more win), "gomoku9" (9 x 9) and "gomoku9" with
exact=True (exactly five win, an overline of six or more does not); the hand-made positions cover both rules on
9 x 9, and the full board on both sizes. Action = row * size + col, row 0 ("1") at the top, column a on the left.
"""

from __future__ import annotations

import typing

import jax.numpy as jnp
import numpy as np
import pytest
import reference
import rules_harness as harness
from reference import SYMBOLS, ReferenceGame

from azjax.games import BoardState, Game, check_game, make

_DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


class Gomoku(ReferenceGame):
    """Five in a row on a size x size board, from the rules: after each stone, the run of the mover's stones
    through it is counted in each of the 4 line directions (not azjax's tables of windows); a run of five or more
    wins, or with `exact` a run of exactly five. A full board is a draw. See reference.py for the protocol."""

    size = 15
    exact = False
    line_length = 5
    num_actions = 15 * 15

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[list[str | None]] = [[None] * self.size for _ in range(self.size)]
        self.num_stones = 0
        # Kept up to date for speed: the replay asks for them after every move of thousands of games.
        self.open_cells = set(range(self.num_actions))
        self.codes = [0] * self.num_actions  # azjax's encoding of the board

    def grid(self) -> list[list[str | None]]:
        return self.cells

    def board(self) -> list[int]:
        return list(self.codes)

    def legal_actions(self) -> list[int]:
        return [] if self.terminated else sorted(self.open_cells)

    def _is_open(self, action: int) -> bool:
        return action in self.open_cells

    def _put(self, action: int, symbol: str) -> None:
        row, col = divmod(action, self.size)
        self.cells[row][col] = symbol
        self.open_cells.remove(action)
        self.codes[action] = SYMBOLS.index(symbol) + 1

    def run_length(self, action: int, dr: int, dc: int) -> int:
        """The number of equal stones in the unbroken run through `action`'s stone along (dr, dc)."""
        row, col = divmod(action, self.size)
        symbol, length = self.cells[row][col], 1
        for sign in (1, -1):
            r, c = row + sign * dr, col + sign * dc
            while 0 <= r < self.size and 0 <= c < self.size and self.cells[r][c] == symbol:
                length, r, c = length + 1, r + sign * dr, c + sign * dc
        return length

    def play(self, action: int) -> list[float]:
        if self.terminated:
            return [0.0, 0.0]
        mover = self.to_move
        if not (0 <= action < self.num_actions and self._is_open(action)):
            self.forfeited = True
            self.outcome = SYMBOLS[1 - mover]
            return [-1.0 if p == mover else 1.0 for p in range(2)]
        self._put(action, SYMBOLS[mover])
        self.num_stones += 1
        self.to_move = 1 - mover
        runs = [self.run_length(action, dr, dc) for dr, dc in _DIRECTIONS]
        if (5 in runs) if self.exact else (max(runs) >= 5):
            self.outcome = SYMBOLS[mover]
            return [1.0 if p == mover else -1.0 for p in range(2)]
        if self.num_stones == self.size * self.size:
            self.outcome = "draw"
        return [0.0, 0.0]


class Gomoku9(Gomoku):
    size = 9
    num_actions = 9 * 9


class Gomoku9Exact(Gomoku9):
    exact = True


class TestGomoku(harness.GenericRulesTests):
    game_name = "gomoku"
    reference_class = Gomoku
    num_games = 1000
    num_symmetric_games = 32  # x 8 boards of 15 x 15, for 227 moves

    def test_random_play_reaches_every_kind_of_ending(self, legal: harness.Played, with_illegal: harness.Played):
        # Random play on 15 x 15 always makes a five before the board fills: full-board draws are hand-made below.
        final = legal.expected.rewards.sum(axis=0)  # [B, 2]
        assert (final[:, 0] > 0).any() and (final[:, 1] > 0).any()
        forfeited = with_illegal.expected.forfeited[-1]
        losers = with_illegal.expected.rewards.sum(axis=0)[forfeited].argmin(axis=-1)
        assert set(losers.tolist()) == {0, 1}


class TestGomoku9(harness.GenericRulesTests):
    game_name = "gomoku9"
    reference_class = Gomoku9
    num_games = 1000
    num_symmetric_games = 64


class TestGomoku9Exact(harness.GenericRulesTests):
    game_name = "gomoku9"
    game_options: typing.ClassVar[dict] = {"exact": True}
    reference_class = Gomoku9Exact
    num_games = 2000

    def test_random_play_makes_overlines(self, legal: harness.Played) -> None:
        # Guards the comparison against being vacuous for the exact rule: games with six or more in a row on the
        # board (which did not end them) are common.
        boards = legal.expected.board[-1].reshape(-1, 9, 9)
        num_overlines = sum(bool(reference.players_with_line(to_grid(board), 6)) for board in boards)
        assert num_overlines > 20, num_overlines


# --------------------------------------------------------------------------------------------------------------
# Hand-made positions on 9 x 9 (and the full board on 15 x 15).


@pytest.fixture(scope="module")
def game9() -> Game:
    return make("gomoku9")


@pytest.fixture(scope="module")
def game9_exact() -> Game:
    return make("gomoku9", exact=True)


@pytest.fixture(scope="module", params=[False, True], ids=["five_or_more", "exact"])
def either9(request: pytest.FixtureRequest, game9: Game, game9_exact: Game) -> Game:
    return game9_exact if request.param else game9


def to_grid(board: np.ndarray) -> list[list[str | None]]:
    return [[(None, "X", "O")[int(v)] for v in row] for row in np.asarray(board)]


def position(size: int, x: list[str], o: list[str]) -> str:
    """A size x size board with X on the cells named in `x` and O on those in `o` (names like "c4")."""
    grid = [["."] * size for _ in range(size)]
    for symbol, names in (("X", x), ("O", o)):
        for name in names:
            col, row = ord(name[0]) - ord("a"), int(name[1:]) - 1
            assert grid[row][col] == ".", name
            grid[row][col] = symbol
    return "\n".join(" ".join(row) for row in grid)


def step(game: Game, state: BoardState, move: str) -> BoardState:
    return harness.jit_step(game)(state, jnp.int32(game.string_to_action(move)))


def assert_wins(state: BoardState, winner: str) -> None:
    assert bool(state.terminated)
    np.testing.assert_array_equal(state.rewards, [1.0, -1.0] if winner == "X" else [-1.0, 1.0])
    assert not np.asarray(state.legal_action_mask).any()


def assert_goes_on(state: BoardState) -> None:
    assert not bool(state.terminated)
    np.testing.assert_array_equal(state.rewards, [0.0, 0.0])
    np.testing.assert_array_equal(state.legal_action_mask, np.asarray(state.board) == 0)


# Five cells in each direction, some touching the edge (where, for the exact rule, the edge ends the line).
FIVES = {
    "row": ["c5", "d5", "e5", "f5", "g5"],
    "row at the edge": ["e9", "f9", "g9", "h9", "i9"],
    "column": ["h2", "h3", "h4", "h5", "h6"],
    "column at the edge": ["a1", "a2", "a3", "a4", "a5"],
    "diagonal": ["b3", "c4", "d5", "e6", "f7"],
    "diagonal into the corner": ["e5", "f6", "g7", "h8", "i9"],
    "anti-diagonal": ["i1", "h2", "g3", "f4", "e5"],
    "anti-diagonal, middle": ["f3", "e4", "d5", "c6", "b7"],
}
SCATTERED = ["a9", "c9", "i3", "i6", "c1", "e1", "a7"]  # never five in a row; those on the line tested are skipped


@pytest.mark.parametrize("winner", ["X", "O"])
@pytest.mark.parametrize("name", list(FIVES))
def test_five_in_each_direction_wins(either9: Game, name: str, winner: str) -> None:
    line = FIVES[name]
    loser = [cell for cell in SCATTERED if cell not in line][: 4 if winner == "X" else 5]
    x, o = (line, loser) if winner == "X" else (loser, line)
    final = either9.from_ascii(position(9, x, o))
    assert reference.players_with_line(to_grid(np.asarray(final.board).reshape(9, 9)), 5) == {winner}
    assert_wins(final, winner)
    for last in line:  # the winning stone may be any of the five
        before = either9.from_ascii(position(9, *([c for c in s if c != last] for s in (x, o))))
        assert not bool(before.terminated) and int(before.current_player) == "XO".index(winner)
        after = step(either9, before, last)
        assert_wins(after, winner)
        harness.assert_states_equal(after, final)


def test_four_in_a_row_does_not_win(either9: Game) -> None:
    after = step(either9, either9.from_ascii(position(9, ["c5", "d5", "e5"], ["a1", "a9", "i1"])), "f5")
    assert_goes_on(after)


OVERLINES = {  # (X's stones, O's stones, X's move): the move makes a line of six or seven
    "six by filling a gap": (["b5", "c5", "d5", "f5", "g5"], ["a1", "a9", "i1", "i9", "e1"], "e5"),
    "seven by joining": (["a5", "b5", "c5", "e5", "f5", "g5"], ["a1", "a9", "i1", "i9", "e1", "e9"], "d5"),
    "six on a diagonal, bounded by O": (["b2", "c3", "d4", "f6", "g7"], ["a1", "h8", "i1", "a9", "e1"], "e5"),
    "six down to the edge": (["e4", "e5", "e7", "e8", "e9"], ["a1", "a9", "i1", "i9", "c1"], "e6"),
}


@pytest.mark.parametrize("name", list(OVERLINES))
def test_an_overline_wins_unless_exact(game9: Game, game9_exact: Game, name: str) -> None:
    x, o, move = OVERLINES[name]
    text = position(9, x, o)
    assert_wins(step(game9, game9.from_ascii(text), move), "X")
    after = step(game9_exact, game9_exact.from_ascii(text), move)
    assert reference.players_with_line(to_grid(np.asarray(after.board).reshape(9, 9)), 6) == {"X"}
    assert_goes_on(after)
    assert int(after.current_player) == 1


def test_under_the_exact_rule_an_overline_stays_no_line(game9_exact: Game) -> None:
    # X's six b5-g5 did not end the game; making it seven does not either, and a five elsewhere still wins.
    x = ["b5", "c5", "d5", "e5", "f5", "g5", "b8", "c8", "d8", "e8"]
    o = ["a1", "a9", "i1", "i9", "e1", "c2", "g2", "i5", "h7", "a4"]
    state = game9_exact.from_ascii(position(9, x, o))
    assert_goes_on(state)
    for move in ("h5", "c1"):  # X makes seven, O plays elsewhere
        state = step(game9_exact, state, move)
        assert_goes_on(state)
    assert_wins(step(game9_exact, state, "f8"), "X")


EXACT_FIVES = {  # (X's stones, O's stones, X's move): exactly five, beside longer or blocked lines
    "bounded by O at both ends": (["c5", "d5", "e5", "f5"], ["b5", "h5", "a1", "i1"], "g5"),
    "from the edge": (["a9", "b9", "c9", "d9"], ["f9", "a1", "i1", "i5"], "e9"),
    "a gap, then another X": (["a3", "b3", "c3", "d3", "g3"], ["a1", "i1", "i9", "a9", "e9"], "e3"),
    "five across and six down at once": (
        ["e1", "e2", "e3", "e5", "e6", "c4", "d4", "f4", "g4"],
        ["a1", "a9", "i1", "i9", "a6", "i6", "c9", "g9", "i4"],
        "e4",
    ),
}


@pytest.mark.parametrize("name", list(EXACT_FIVES))
def test_exactly_five_wins_under_the_exact_rule(game9_exact: Game, name: str) -> None:
    x, o, move = EXACT_FIVES[name]
    before = game9_exact.from_ascii(position(9, x, o))
    assert_goes_on(before)
    assert_wins(step(game9_exact, before, move), "X")


def test_from_ascii_reads_an_overline_by_the_rule(game9: Game, game9_exact: Game) -> None:
    text = position(9, ["b5", "c5", "d5", "e5", "f5", "g5"], ["a1", "a9", "i1", "i9", "e1"])
    assert_wins(game9.from_ascii(text), "X")
    state = game9_exact.from_ascii(text)
    assert_goes_on(state)
    assert int(state.current_player) == 1


def draw_board(size: int) -> str:
    """A full board with no three in a row anywhere: pairs XXOO along the rows, shifted by two from row to row.
    X has one stone more than O (size is odd)."""
    return "\n".join(" ".join("XO"[(c + 2 * r) % 4 // 2] for c in range(size)) for r in range(size))


@pytest.mark.parametrize(("name", "options"), [("gomoku9", {}), ("gomoku9", {"exact": True}), ("gomoku", {})])
def test_full_board_is_a_draw(name: str, options: dict) -> None:
    game = make(name, **options)
    text = draw_board(game.observation_shape[0])
    final = game.from_ascii(text)
    assert reference.players_with_line(to_grid(np.asarray(final.board).reshape(game.observation_shape[:2])), 3) == set()
    assert bool(final.terminated)
    np.testing.assert_array_equal(final.rewards, [0.0, 0.0])
    assert not np.asarray(final.legal_action_mask).any()
    before = game.from_ascii(text.replace("X", ".", 1))  # X's last stone, a1, not yet played
    np.testing.assert_array_equal(np.flatnonzero(before.legal_action_mask), [0])
    after = harness.jit_step(game)(before, jnp.int32(0))
    np.testing.assert_array_equal(after.rewards, [0.0, 0.0])
    harness.assert_states_equal(after, final)


@pytest.mark.parametrize(
    "text",
    [
        position(9, FIVES["row"], SCATTERED[:4]),  # X won
        position(9, SCATTERED[:5], FIVES["column"]),  # O won
        draw_board(9),
    ],
)
def test_moves_after_the_end_change_nothing(either9: Game, text: str) -> None:
    harness.assert_absorbing(either9, either9.from_ascii(text))


def test_illegal_moves_lose_for_the_mover(either9: Game) -> None:
    state = either9.from_ascii(position(9, ["e5", "d4"], ["c3"]))
    assert int(state.current_player) == 1
    occupied = [either9.string_to_action(c) for c in ("e5", "d4", "c3")]
    for action in [*occupied, -1, 81, 82, *harness.OUT_OF_RANGE_EXTREMES]:
        harness.assert_forfeits(either9, state, action)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (position(9, ["a1", "b1"], []), r"this board has 2 X and 0 O"),
        (position(9, FIVES["row"], FIVES["column at the edge"]), r"both X and O have a line"),
        (position(9, FIVES["row"], SCATTERED[:5]), r"the side with the line must have made the last move"),
        ("X . O\n. X .\n. . .", r"expected a 9 x 9 board"),
    ],
)
def test_from_ascii_rejects_impossible_boards(game9: Game, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        game9.from_ascii(text)


def test_render() -> None:
    game = make("gomoku")
    state = game.from_ascii(position(15, ["h8"], []))
    lines = game.render(state).splitlines()
    assert lines[0] == "   a b c d e f g h i j k l m n o"
    assert lines[8] == " 8 . . . . . . . X . . . . . . ."
    assert lines[15] == "15 . . . . . . . . . . . . . . ."
    assert lines[16] == "O to move" and len(lines) == 17
    harness.assert_states_equal(game.from_ascii(game.render(state)), state)


def test_action_names() -> None:
    game = make("gomoku")
    assert [game.action_to_string(a) for a in (0, 14, 112, 210, 224)] == ["a1", "o1", "h8", "a15", "o15"]
    assert game.string_to_action(" H8 ") == 112
    for text in ("p1", "a16", "a0", "8h", "pass", ""):
        with pytest.raises(ValueError, match=r"e\.g\. 'b2'"):
            game.string_to_action(text)


def test_registry_names_sizes_and_options() -> None:
    assert make("gomoku").name == "gomoku" and make("gomoku").num_actions == 225
    assert make("gomoku").observation_shape == (15, 15, 2) and make("gomoku").max_length == 225
    assert make("gomoku9").name == "gomoku9" and make("gomoku9").num_actions == 81
    assert make("gomoku", size=9).name == "gomoku(size=9)"
    assert make("gomoku", exact=True).name == "gomoku(exact=True)"
    assert make("gomoku9", exact=True).name == "gomoku9(exact=True)"
    assert len(make("gomoku9").symmetries) == 7
    for size in (4, 27):
        with pytest.raises(ValueError, match="size must be a whole number from 5 to 26"):
            make("gomoku", size=size)
    with pytest.raises(ValueError, match="bad options"):
        make("gomoku9", size=15)


def test_check_game_passes_with_the_exact_rule() -> None:
    # The registered variants, "gomoku" and "gomoku9", are checked in test_checker.py; exact=True only changes the
    # line test, the same on either size.
    report = check_game(make("gomoku9", exact=True), num_games=8)
    assert len(report.symmetries_checked) == 7
