"""The Connect Four solver against independent references: exhaustive minimax in plain Python on positions with
few empty cells, hand-solved positions, and (slow) the published values of the first move."""

from __future__ import annotations

import numpy as np
import pytest

from azjax.solver import connect_four as c4

ROWS, COLUMNS = 6, 7


# --------------------------------------------------------------------------------------------------------------
# The reference: a grid of columns (stones bottom-up, 0 = first player), full minimax with a memo, no bitboards.


def _makes_four(grid: list[list[int]], row: int, column: int, player: int) -> bool:
    for d_row, d_column in ((0, 1), (1, 0), (1, 1), (1, -1)):
        count = 1
        for sign in (1, -1):
            r, c = row + sign * d_row, column + sign * d_column
            while 0 <= c < COLUMNS and 0 <= r < len(grid[c]) and grid[c][r] == player:
                count += 1
                r, c = r + sign * d_row, c + sign * d_column
        if count >= 4:
            return True
    return False


def _reference_move_scores(grid: list[list[int]], num_moves: int, memo: dict) -> list[int | None]:
    """Each column's exact score for the mover (Pons's convention), None for a full column."""
    player = num_moves % 2
    scores: list[int | None] = []
    for column in range(COLUMNS):
        if len(grid[column]) == ROWS:
            scores.append(None)
            continue
        grid[column].append(player)
        if _makes_four(grid, len(grid[column]) - 1, column, player):
            score = (ROWS * COLUMNS + 1 - num_moves) // 2  # won with this stone
        elif num_moves + 1 == ROWS * COLUMNS:
            score = 0  # the last cell: a draw
        else:
            score = -_reference_score(grid, num_moves + 1, memo)
        grid[column].pop()
        scores.append(score)
    return scores


def _reference_score(grid: list[list[int]], num_moves: int, memo: dict) -> int:
    key = tuple(tuple(column) for column in grid)
    if key not in memo:
        memo[key] = max(s for s in _reference_move_scores(grid, num_moves, memo) if s is not None)
    return memo[key]


def _grid(moves: list[int]) -> list[list[int]]:
    grid: list[list[int]] = [[] for _ in range(COLUMNS)]
    for number, column in enumerate(moves):
        grid[column].append(number % 2)
    return grid


def _random_positions(rng: np.random.Generator, num_positions: int, low: int, high: int) -> list[list[int]]:
    """Positions after low..high uniformly random moves, none of which ended the game (checked by the reference)."""
    positions = []
    while len(positions) < num_positions:
        grid, moves = _grid([]), []
        for _ in range(int(rng.integers(low, high + 1))):
            column = int(rng.choice([c for c in range(COLUMNS) if len(grid[c]) < ROWS]))
            grid[column].append(len(moves) % 2)
            if _makes_four(grid, len(grid[column]) - 1, column, len(moves) % 2):
                break
            moves.append(column)
        else:
            positions.append(moves)
    return positions


@pytest.fixture(scope="module")
def solver() -> c4.Solver:
    return c4.Solver()


def test_exact_scores_match_exhaustive_minimax(solver):
    rng = np.random.default_rng(0)
    positions = _random_positions(rng, 150, 28, 34)  # 8 to 14 empty cells: exhaustive search is cheap
    assert len(positions) == 150
    for moves in positions:
        expected = _reference_move_scores(_grid(moves), len(moves), {})
        got = solver.move_scores(moves)
        assert [None if s == c4.ILLEGAL else int(s) for s in got] == expected, moves
        assert solver.solve(moves) == max(s for s in expected if s is not None)
        assert solver.solve_outcome(moves) == np.sign(solver.solve(moves))
        weak = solver.move_scores(moves, weak=True)
        assert [None if s == c4.ILLEGAL else int(s) for s in weak] == [
            None if s is None else int(np.sign(s)) for s in expected
        ]


def test_best_moves_give_outcomes_and_the_best_exact_scores(solver):
    rng = np.random.default_rng(4)
    lines = _random_positions(rng, 40, 16, 30)
    assert len(lines) == 40
    for moves in lines:
        exact = solver.move_scores(moves)
        outcomes, scores = solver.best_moves_bits(*c4.encode_moves(moves))
        legal = exact != c4.ILLEGAL
        assert (outcomes[legal] == np.sign(exact[legal])).all() and (outcomes[~legal] == c4.ILLEGAL).all()
        best = legal & (np.sign(exact) == np.sign(exact[legal]).max())
        assert (scores[best] == exact[best]).all() and (scores[~best] == c4.ILLEGAL).all()


def test_scores_do_not_depend_on_the_transposition_table(solver):
    rng = np.random.default_rng(1)
    positions = _random_positions(rng, 20, 18, 24)
    warm = [solver.solve(moves) for moves in positions]
    fresh = c4.Solver()
    assert [fresh.solve(moves) for moves in reversed(positions)][::-1] == warm


def test_immediate_win(solver):
    moves = [0, 0, 1, 1, 2, 2]  # X: a b c on the bottom row, O on top of them; X to move
    assert solver.move_scores(moves)[3] == (43 - 6) // 2  # d wins with X's fourth stone: 22 - 4
    assert solver.solve(moves) == 18


def test_forced_block(solver):
    moves = [0, 6, 1, 6, 2]  # X threatens d on the bottom row; O to move must block it
    scores = solver.move_scores(moves)
    others = [c for c in range(7) if c != 3]
    assert all(scores[c] == -18 for c in others)  # X's fourth stone wins: 4 - 22
    assert scores[3] > -18


def test_two_threats_lose(solver):
    moves = [1, 1, 2, 2, 3]  # X: b c d on the bottom row, a and e open: O cannot block both
    assert list(solver.move_scores(moves)) == [-18] * 7
    assert solver.solve(moves) == -18


def test_zugzwang_found_by_the_reference_is_matched(solver):
    """Positions where every move loses although the mover has no immediate loss to block: the mover must play
    below one of the opponent's winning cells (parity, zugzwang). Found among random endgames by the reference."""
    rng = np.random.default_rng(2)
    found = 0
    for moves in _random_positions(rng, 300, 30, 36):
        grid = _grid(moves)
        expected = _reference_move_scores(grid, len(moves), {})
        legal = [s for s in expected if s is not None]
        opponent_wins_next = any(
            len(grid[c]) < ROWS and _makes_four(grid, len(grid[c]), c, 1 - len(moves) % 2)
            for c in range(COLUMNS)
        )
        if max(legal) < 0 and not opponent_wins_next:
            found += 1
            assert solver.solve(moves) == max(legal)
    assert found > 0


def test_moves_left_counts_stones_to_the_end():
    assert c4.moves_left(18, 6) == 1  # the win is the next stone
    assert c4.moves_left(-18, 5) == 2  # the mover's stone, then the opponent's winning stone
    assert c4.moves_left(0, 30) == 12  # a draw fills the board


def test_encode_board_matches_encode_moves():
    from azjax import games
    from azjax.solver import positions

    rng = np.random.default_rng(3)
    lines = _random_positions(rng, 20, 5, 30)
    states = positions.states_from_moves(games.make("connect_four"), lines)
    assert len(lines) == len(states.board) == 20
    for row, moves in enumerate(lines):
        board = np.asarray(states.board[row])
        assert c4.encode_board(board, int(states.current_player[row])) == c4.encode_moves(moves)


def test_bad_moves_are_reported():
    with pytest.raises(ValueError, match=r"columns are 0\.\.6"):
        c4.encode_moves([7])
    with pytest.raises(ValueError, match="full"):
        c4.encode_moves([0] * 7)
    with pytest.raises(ValueError, match="wins the game"):
        c4.encode_moves([0, 1, 0, 1, 0, 1, 0, 1])


def test_a_search_past_its_time_limit_stops_with_a_clear_error():
    with pytest.raises(c4.SolveTimeout, match="raise max_seconds"):
        c4.Solver(max_seconds=0.01).solve([3])


def test_the_empty_board_is_searched_not_read_from_an_empty_table():
    """The empty board's key is 0: an empty slot must not read as its entry (bounds 0, 0: a draw in 4 nodes).
    Solving it takes minutes, so a short time limit must run out, fresh and after `reset`."""
    solver = c4.Solver(max_seconds=0.2)
    with pytest.raises(c4.SolveTimeout):
        solver.solve([])
    solver.reset()
    with pytest.raises(c4.SolveTimeout):
        solver.solve([])


@pytest.mark.slow
def test_the_first_move_values_are_the_published_ones(solver):
    """From the empty board the centre column wins for the first player, its neighbours draw, the rest lose."""
    assert list(solver.move_scores([], weak=True)) == [-1, -1, 0, 1, 0, -1, -1]
