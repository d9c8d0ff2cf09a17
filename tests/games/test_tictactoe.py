"""Tic-tac-toe rules: thousands of random games against the plain-Python reference, then hand-made positions."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference
import rules_harness as harness

from azjax.games import Game, make

# Action = row * 3 + col, row 0 at the top.
LINES = {
    "row 1": (0, 1, 2),
    "row 2": (3, 4, 5),
    "row 3": (6, 7, 8),
    "column a": (0, 3, 6),
    "column b": (1, 4, 7),
    "column c": (2, 5, 8),
    "diagonal": (0, 4, 8),
    "anti-diagonal": (2, 4, 6),
}


class TestAgainstReference(harness.GenericRulesTests):
    game_name = "tic_tac_toe"
    reference_class = reference.TicTacToe
    num_games = 3000


@pytest.fixture(scope="module")
def game() -> Game:
    return make("tic_tac_toe")


def ascii_board(x_cells: tuple[int, ...], o_cells: tuple[int, ...]) -> str:
    cells = ["X" if i in x_cells else "O" if i in o_cells else "." for i in range(9)]
    return "\n".join(" ".join(cells[r * 3 : r * 3 + 3]) for r in range(3))


def no_line(cells: tuple[int, ...]) -> bool:
    return not any(set(line) <= set(cells) for line in LINES.values())


def winning_position(line: tuple[int, ...], winner: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(X cells, O cells): `winner` owns `line`; the loser, one stone fewer for X's win and as many for O's,
    has the first off-line cells that make no line."""
    num_loser = 2 if winner == "X" else 3
    off_line = [c for c in range(9) if c not in line]
    loser = next(c for c in itertools.combinations(off_line, num_loser) if no_line(c))
    return (line, loser) if winner == "X" else (loser, line)


@pytest.mark.parametrize("winner", ["X", "O"])
@pytest.mark.parametrize("line_name", list(LINES))
def test_every_line_wins(game: Game, line_name: str, winner: str) -> None:
    line = LINES[line_name]
    x_cells, o_cells = winning_position(line, winner)
    text = ascii_board(x_cells, o_cells)
    grid = [[None if c == "." else c for c in row.split()] for row in text.splitlines()]
    assert reference.players_with_line(grid, 3) == {winner}  # the case is what it claims to be
    final = game.from_ascii(text)
    wanted_rewards = [1.0, -1.0] if winner == "X" else [-1.0, 1.0]
    assert bool(final.terminated)
    np.testing.assert_array_equal(final.rewards, wanted_rewards)
    assert not np.asarray(final.legal_action_mask).any()
    for last in line:  # the winning stone can be any of the three
        before_x = tuple(c for c in x_cells if c != last)
        before_o = tuple(c for c in o_cells if c != last)
        before = game.from_ascii(ascii_board(before_x, before_o))
        assert not bool(before.terminated) and int(before.current_player) == "XO".index(winner)
        after = harness.jit_step(game)(before, jnp.int32(last))
        np.testing.assert_array_equal(after.rewards, wanted_rewards)
        harness.assert_states_equal(after, final)


def test_hand_written_wins(game: Game) -> None:
    x_wins = game.from_ascii("X X X\nO O .\n. . .")
    np.testing.assert_array_equal(x_wins.rewards, [1.0, -1.0])
    o_wins = game.from_ascii("X X O\nX O .\nO . .")
    np.testing.assert_array_equal(o_wins.rewards, [-1.0, 1.0])
    assert bool(x_wins.terminated) and bool(o_wins.terminated)


def test_two_lines_at_once_pay_one_win(game: Game) -> None:
    before = game.from_ascii(". X X\nX O O\nX O O")  # X a1 completes row 1 and column a
    after = harness.jit_step(game)(before, jnp.int32(0))
    assert bool(after.terminated)
    np.testing.assert_array_equal(after.rewards, [1.0, -1.0])


def test_win_with_the_last_cell_is_a_win_not_a_draw(game: Game) -> None:
    before = game.from_ascii("X O X\nO X O\nO X .")
    after = harness.jit_step(game)(before, jnp.int32(8))
    assert bool(after.terminated) and bool(np.all(np.asarray(after.board) != 0))
    np.testing.assert_array_equal(after.rewards, [1.0, -1.0])


def test_full_board_is_a_draw(game: Game) -> None:
    final = game.from_ascii("X O X\nX O O\nO X X")
    assert bool(final.terminated)
    np.testing.assert_array_equal(final.rewards, [0.0, 0.0])
    assert not np.asarray(final.legal_action_mask).any()
    before = game.from_ascii("X O X\nX O O\nO X .")
    np.testing.assert_array_equal(before.legal_action_mask, [False] * 8 + [True])
    after = harness.jit_step(game)(before, jnp.int32(8))
    np.testing.assert_array_equal(after.rewards, [0.0, 0.0])
    harness.assert_states_equal(after, final)


@pytest.mark.parametrize(
    "text",
    [
        "X X X\nO O .\n. . .",  # X won
        "X X O\nX O .\nO . .",  # O won
        "X O X\nX O O\nO X X",  # draw
    ],
)
def test_moves_after_the_end_change_nothing(game: Game, text: str) -> None:
    harness.assert_absorbing(game, game.from_ascii(text))


@pytest.mark.parametrize("text", [". . .\n. X .\n. . .", "X . .\n. O .\n. . X", "X O X\nO X O\n. . ."])
def test_illegal_moves_lose_for_the_mover(game: Game, text: str) -> None:
    state = game.from_ascii(text)
    occupied = [int(c) for c in np.flatnonzero(np.asarray(state.board))]
    for action in [*occupied, -1, 9, 10, *harness.OUT_OF_RANGE_EXTREMES]:
        harness.assert_forfeits(game, state, action)


def test_illegal_first_move_loses_for_x(game: Game) -> None:
    after = harness.jit_step(game)(game.init(jax.random.key(0)), jnp.int32(9))
    assert bool(after.terminated)
    np.testing.assert_array_equal(after.rewards, [-1.0, 1.0])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("X . O\n. X .", r"expected a 3 x 3 board .* found 2 rows"),
        ("X . O\n. X .\n. . .\n. . .", r"expected a 3 x 3 board .* found 4 rows"),
        ("X . O .\n. X . .\n. . . .", r"expected a 3 x 3 board"),
        ("X . O\n. X\n. . .", r"expected a 3 x 3 board"),
        ("X.Q\n...\n...", r"expected a 3 x 3 board of 'X', 'O' and '.'"),
        ("", r"expected a 3 x 3 board"),
        ("X X .\n. . .\n. . .", r"X has as many stones as O or one more; this board has 2 X and 0 O"),
        ("O . .\n. . .\n. . .", r"this board has 0 X and 1 O"),
        ("X X X\nO O O\n. . .", r"both X and O have a line"),
        ("X X X\nO O .\nO . .", r"the side with the line must have made the last move"),
        ("O O O\nX X .\nX . X", r"the side with the line must have made the last move"),
    ],
)
def test_from_ascii_rejects_impossible_boards(game: Game, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        game.from_ascii(text)


def test_from_ascii_reads_every_documented_form(game: Game) -> None:
    wanted = game.from_ascii("X . O\n. X .\n. . O")
    for text in [
        "X.O\n.X.\n..O",
        "   a b c\n 1 X . O\n 2 . X .\n 3 . . O\nX to move",
        "\n1 X . O\n2 . X .\n3 . . O\n\n",
    ]:
        harness.assert_states_equal(game.from_ascii(text), wanted)
    np.testing.assert_array_equal(wanted.board, [1, 0, 2, 0, 1, 0, 0, 0, 2])
    assert int(wanted.current_player) == 0


def test_render(game: Game) -> None:
    state = game.init(jax.random.key(0))
    for action in (4, 0, 8):  # X b2, O a1, X c3
        state = harness.jit_step(game)(state, jnp.int32(action))
    assert game.render(state) == "  a b c\n1 O . .\n2 . X .\n3 . . X\nO to move"
    for action in (1, 2, 3, 6):  # O b1, X c1, O a2, X a3: the anti-diagonal
        state = harness.jit_step(game)(state, jnp.int32(action))
    assert game.render(state) == "  a b c\n1 O O X\n2 O X .\n3 X . X\nX wins"


def test_observation_is_from_the_side_to_move(game: Game) -> None:
    # X (player 0) on a1 and b2, O (player 1) on c1: X moved twice, O once, so O is to move.
    state = game.from_ascii("X . O\n. X .\n. . .")
    assert int(state.current_player) == 1
    obs = np.asarray(game.observe(state))
    assert obs.shape == (3, 3, 2) and obs.dtype == np.float32
    np.testing.assert_array_equal(obs[..., 0], [[0, 0, 1], [0, 0, 0], [0, 0, 0]])  # O's own stones
    np.testing.assert_array_equal(obs[..., 1], [[1, 0, 0], [0, 1, 0], [0, 0, 0]])  # X's stones
    # After O's move it is X's turn, and the planes swap roles.
    obs = np.asarray(game.observe(harness.jit_step(game)(state, jnp.int32(8))))
    np.testing.assert_array_equal(obs[..., 0], [[1, 0, 0], [0, 1, 0], [0, 0, 0]])  # X's own stones
    np.testing.assert_array_equal(obs[..., 1], [[0, 0, 1], [0, 0, 0], [0, 0, 1]])  # O's stones


def test_action_names(game: Game) -> None:
    assert [game.action_to_string(a) for a in range(9)] == ["a1", "b1", "c1", "a2", "b2", "c2", "a3", "b3", "c3"]
    assert game.string_to_action("b2") == 4
    assert game.string_to_action(" C3 ") == 8


@pytest.mark.parametrize("text", ["", "a", "1", "b", "d1", "a0", "a4", "a10", "1a", "aa", "a-1", "b 2x", "4"])
def test_malformed_action_names_raise(game: Game, text: str) -> None:
    with pytest.raises(ValueError, match=r"(cannot read|off the board).*e\.g\. 'b2'"):
        game.string_to_action(text)
