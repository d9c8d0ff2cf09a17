"""Connect Four rules: thousands of random games against the plain-Python reference, then hand-made positions.

Boards are written top row (row 6) first; a = column 0 = action 0.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference
import rules_harness as harness

from azjax.games import BoardState, Game, make

EMPTY_ROW = ". . . . . . ."


class TestAgainstReference(harness.GenericRulesTests):
    """The default observation (version 2): the stones, the playable cells and both sides' threats."""

    game_name = "connect_four"
    reference_class = reference.ConnectFour
    num_games = 2000


class TestAgainstReferenceObservationV1(harness.GenericRulesTests):
    """Observation version 1 (the stones only), which networks trained before version 2 read."""

    game_name = "connect_four"
    game_options: ClassVar[dict[str, object]] = {"observation_version": 1}
    reference_class = reference.ConnectFour
    num_games = 2000


@pytest.fixture(scope="module")
def game() -> Game:
    return make("connect_four")


def board(*rows: str) -> str:
    """A 6-row board from its lowest rows, given top first; the rows above are empty."""
    return "\n".join([EMPTY_ROW] * (6 - len(rows)) + list(rows))


def step(game: Game, state: BoardState, action: int) -> BoardState:
    return harness.jit_step(game)(state, jnp.int32(action))


# (position before the winning move, the move, the winner)
WINS = {
    "horizontal, bottom row": (board("O O O . . . .", "X X X . . . ."), 3, "X"),
    "horizontal, filling a gap": (board("O O . O . . .", "X X . X . . ."), 2, "X"),
    "horizontal, second row": (board(". O O O . . .", "X X O X X . X"), 0, "O"),
    "horizontal, second row, other end": (board(". O O O . . .", "X X O X X . X"), 4, "O"),
    "vertical": (board("X O . . . . .", "X O . . . . .", "X O . . . . ."), 0, "X"),
    "vertical, O": (board(". O . . . . .", "X O . . . . .", "X O X X . . ."), 1, "O"),
    "rising diagonal": (board(". . X O . . .", ". X O X . . .", "X O O O X . ."), 3, "X"),
    "falling diagonal": (board(". . . O X . .", ". . . X O X .", ". . X O O O X"), 3, "X"),
    "rising diagonal, O": (board(". . O X . . .", ". O X O . . .", "O X X X O . X"), 3, "O"),
    "falling diagonal from the top row": (
        board("O X . . . . .", "X X X . . . .", "O X O X . . .", "O O X O . . .", "O O X O . X ."),
        0,
        "X",
    ),
}


def lines_on(state: BoardState) -> set[str]:
    """The players with four in a row on an azjax board, by the reference's scan."""
    rows = np.asarray(state.board).reshape(6, 7).tolist()
    return reference.players_with_line([[(None, "X", "O")[v] for v in row] for row in rows], 4)


@pytest.mark.parametrize("name", list(WINS))
def test_wins(game: Game, name: str) -> None:
    text, action, winner = WINS[name]
    before = game.from_ascii(text)
    assert not bool(before.terminated) and int(before.current_player) == "XO".index(winner)
    assert lines_on(before) == set()
    after = step(game, before, action)
    assert lines_on(after) == {winner}  # the case is what it claims to be
    assert bool(after.terminated), name
    np.testing.assert_array_equal(after.rewards, [1.0, -1.0] if winner == "X" else [-1.0, 1.0])
    assert not np.asarray(after.legal_action_mask).any()
    harness.assert_states_equal(after, game.from_ascii(game.render(after)))


def test_four_consecutive_cells_across_a_row_end_are_no_line(game: Game) -> None:
    # After X f2 the X stones f2 g2 a1 b1 are cells 33..36 in row-major order, but no line.
    before = game.from_ascii(board(". . . . . . X", "X X O . . O O"))
    after = step(game, before, 5)
    assert not bool(after.terminated)
    np.testing.assert_array_equal(after.rewards, [0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(after.board)[33:37], [1, 1, 1, 1])


def test_three_in_a_row_is_not_a_win(game: Game) -> None:
    after = step(game, game.from_ascii(board("O O . . . . .", "X X . . . . .")), 2)
    assert not bool(after.terminated)
    np.testing.assert_array_equal(after.legal_action_mask, [True] * 7)


def test_stones_fall_to_the_lowest_empty_cell(game: Game) -> None:
    state = game.init(jax.random.key(0))
    for i in range(6):
        state = step(game, state, 3)
        column = np.asarray(state.board).reshape(6, 7)[:, 3]
        np.testing.assert_array_equal(column, [0] * (5 - i) + [1 if j % 2 == 0 else 2 for j in reversed(range(i + 1))])
    np.testing.assert_array_equal(state.legal_action_mask, [True, True, True, False, True, True, True])


DRAW = (
    "O O X X O O X",
    "X X O O X X O",
    "O O X X O O X",
    "X X O O X X O",
    "O O X X O O X",
    "X X O O X X O",
)


def test_full_board_is_a_draw(game: Game) -> None:
    final = game.from_ascii("\n".join(DRAW))
    assert lines_on(final) == set()
    assert bool(final.terminated)
    np.testing.assert_array_equal(final.rewards, [0.0, 0.0])
    assert not np.asarray(final.legal_action_mask).any()
    before = game.from_ascii("\n".join([". " + DRAW[0][2:], *DRAW[1:]]))  # O's last stone, a6, not yet played
    np.testing.assert_array_equal(before.legal_action_mask, [True] + [False] * 6)
    assert int(before.current_player) == 1
    after = step(game, before, 0)
    np.testing.assert_array_equal(after.rewards, [0.0, 0.0])
    harness.assert_states_equal(after, final)


@pytest.mark.parametrize(
    "text",
    [
        board("X . . . . . .", "X O . . . . .", "X O . . . . .", "X O . . . . ."),  # X won
        board(". O . . . . .", ". O . . . . .", "X O . . . . .", "X O X X . . ."),  # O won
        "\n".join(DRAW),
    ],
)
def test_moves_after_the_end_change_nothing(game: Game, text: str) -> None:
    harness.assert_absorbing(game, game.from_ascii(text))


FULL_COLUMN_A = ("O . . . . . .", "X . . . . . .", "O . . . . . .", "X . . . . . .", "O . . . . . .")


@pytest.mark.parametrize(
    "text",
    [
        "\n".join((*FULL_COLUMN_A, "X . . . . . .")),  # X to move
        "\n".join((*FULL_COLUMN_A, "X X . . . . .")),  # O to move
        board("X . . . . . ."),
    ],
)
def test_illegal_moves_lose_for_the_mover(game: Game, text: str) -> None:
    state = game.from_ascii(text)
    full_columns = [int(c) for c in np.flatnonzero(~np.asarray(state.legal_action_mask))]
    for action in [*full_columns, -1, 7, 8, *harness.OUT_OF_RANGE_EXTREMES]:
        harness.assert_forfeits(game, state, action)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("X . O\n. X .\n. . .", r"expected a 6 x 7 board .* found 3 rows"),
        ("\n".join(["......."] * 7), r"expected a 6 x 7 board .* found 7 rows"),
        ("\n".join(["......"] * 6), r"expected a 6 x 7 board .* lengths \[6, 6, 6, 6, 6, 6\]"),
        ("\n".join(["........"] * 6), r"expected a 6 x 7 board"),
        (board("X . . . . . .", ". . . . . . ."), r"column a has a stone floating above an empty cell"),
        (board(". . . . . . O", "X . . . . . X", "X . . . . . ."), r"column g has a stone floating"),
        (board("X X . . . . ."), r"this board has 2 X and 0 O"),
        (board("O . . . . . ."), r"this board has 0 X and 1 O"),
        (board("X O . . . . .", "X O . . . . .", "X O . . . . .", "X O . . . . ."), r"both X and O have a line"),
        (
            board("X . . . . . .", "X O . . . . .", "X O . . . . .", "X O O . . . ."),
            r"the side with the line must have made the last move",
        ),
    ],
)
def test_from_ascii_rejects_impossible_boards(game: Game, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        game.from_ascii(text)


def test_from_ascii_reads_every_documented_form(game: Game) -> None:
    wanted = game.from_ascii(board(". . . O . . .", ". . X X . . ."))
    rendered = "  a b c d e f g\n" + "\n".join(
        f"{6 - r} {row}" for r, row in enumerate([EMPTY_ROW] * 4 + [". . . O . . .", ". . X X . . ."])
    )
    for text in [board("...O...", "..XX..."), rendered + "\nO to move"]:
        harness.assert_states_equal(game.from_ascii(text), wanted)
    assert int(wanted.current_player) == 1
    np.testing.assert_array_equal(np.asarray(wanted.board)[-14:], [0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0])


def test_render_numbers_rows_from_the_bottom(game: Game) -> None:
    state = game.init(jax.random.key(0))
    for action in (3, 3, 2):  # X d1, O d2, X c1
        state = step(game, state, action)
    assert game.render(state) == "\n".join(
        [
            "  a b c d e f g",
            "6 . . . . . . .",
            "5 . . . . . . .",
            "4 . . . . . . .",
            "3 . . . . . . .",
            "2 . . . O . . .",
            "1 . . X X . . .",
            "O to move",
        ]
    )
    for action in (3, 1, 3, 4):  # O d3, X b1, O d4, X e1: b1-c1-d1-e1
        state = step(game, state, action)
    assert game.render(state).splitlines()[-3:] == ["2 . . . O . . .", "1 . X X X X . .", "X wins"]


def test_observation_is_from_the_side_to_move(game: Game) -> None:
    # X (player 0) on c1 and d1, O (player 1) on d2: O is to move, so plane 0 holds O's stones.
    state = game.from_ascii(board(". . . O . . .", ". . X X . . ."))
    assert int(state.current_player) == 1
    obs = np.asarray(game.observe(state))
    assert obs.shape == (6, 7, 5) and obs.dtype == np.float32
    x_stones, o_stones = np.zeros((6, 7)), np.zeros((6, 7))
    x_stones[5, 2] = x_stones[5, 3] = 1  # row index 5 is the bottom row, row 1
    o_stones[4, 3] = 1
    np.testing.assert_array_equal(obs[..., 0], o_stones)
    np.testing.assert_array_equal(obs[..., 1], x_stones)
    # O plays e1; then X is to move and the planes swap roles.
    obs = np.asarray(game.observe(step(game, state, 4)))
    o_stones[5, 4] = 1
    np.testing.assert_array_equal(obs[..., 0], x_stones)
    np.testing.assert_array_equal(obs[..., 1], o_stones)


def test_feature_planes_show_playable_cells_and_both_sides_threats(game: Game) -> None:
    # O (to move) has c2-d2-e2: threats b2 (playable) and f2 (not yet: f1 is empty); X has b1-c1-d1 (a1; e1 is O's).
    state = game.from_ascii(board(". . X X . . .", ". . O O O . .", ". X X X O . ."))
    assert int(state.current_player) == 1
    obs = np.asarray(game.observe(state))

    def cells(plane: int) -> set[str]:
        return {f"{'abcdefg'[c]}{6 - r}" for r, c in zip(*np.nonzero(obs[..., plane]), strict=True)}

    assert cells(2) == {"a1", "b2", "c4", "d4", "e3", "f1", "g1"}  # each open column's lowest empty cell
    assert cells(3) == {"b2", "f2"}  # where the mover's stone would complete four
    assert cells(4) == {"a1"}  # where the opponent's would


def test_observation_version_1_is_the_stones_alone() -> None:
    old, new = make("connect_four", observation_version=1), make("connect_four")
    assert (old.observation_version, old.observation_shape) == (1, (6, 7, 2))
    assert (new.observation_version, new.observation_shape) == (2, (6, 7, 5))
    state = new.from_ascii(board(". . O . . . .", ". X X . . . ."))
    np.testing.assert_array_equal(np.asarray(old.observe(state)), np.asarray(new.observe(state))[..., :2])
    with pytest.raises(ValueError, match=r"connect_four has observation versions \[1, 2\], not 3"):
        make("connect_four", observation_version=3)


def test_action_names(game: Game) -> None:
    assert [game.action_to_string(a) for a in range(7)] == list("abcdefg")
    assert [game.string_to_action(str(n)) for n in range(1, 8)] == list(range(7))
    assert game.string_to_action(" D ") == 3


@pytest.mark.parametrize("text", ["", " ", "h", "z", "0", "8", "-1", "a1", "dd", "d4", "1.5", "10", "x"])
def test_malformed_action_names_raise(game: Game, text: str) -> None:
    with pytest.raises(ValueError, match=r"cannot read .* as a move: write a column letter a-g \(or its number 1-7\)"):
        game.string_to_action(text)
