"""The sliding puzzle, a one-player game: its rules against a plain-Python puzzle over many random games, its
starts, its exact distances (breadth-first search) against known facts of the 8-puzzle, and the checker's
one-player contracts catching planted bugs."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import games
from azjax.games import sliding_puzzle as puzzle
from azjax.games.checker import GameCheckError
from azjax.solver import sliding_puzzle as exact


def _reference_step(board: list[int], action: int, size: int) -> list[int] | None:
    """Plain Python: the board after the empty cell moves by `action`, None if that leaves the board."""
    blank = board.index(0)
    row, col = divmod(blank, size)
    row, col = row + (-1, 1, 0, 0)[action], col + (0, 0, -1, 1)[action]
    if not (0 <= row < size and 0 <= col < size):
        return None
    board = list(board)
    board[blank], board[row * size + col] = board[row * size + col], 0
    return board


@functools.partial(jax.jit, static_argnames=("game", "num_games"))
def _random_games(key: jax.Array, *, game: games.Game, num_games: int):
    init_key, move_key = jax.random.split(key)
    states = jax.vmap(game.init)(jax.random.split(init_key, num_games))

    def body(states, step_key):
        noise = jax.random.uniform(step_key, (num_games, game.num_actions))
        actions = jnp.argmax(jnp.where(states.legal_action_mask, noise, -1.0), axis=-1)
        following = jax.vmap(game.step)(states, actions)
        return following, (actions, following)

    _, (actions, later) = jax.lax.scan(body, states, jax.random.split(move_key, game.max_length))
    return states, actions, later


@pytest.mark.parametrize("size", [2, 3])
def test_random_games_follow_a_plain_python_puzzle(size):
    game = games.make("sliding_puzzle", size=size)
    first, actions, later = jax.device_get(_random_games(jax.random.key(size), game=game, num_games=96))
    solved = puzzle.solved_board(size).tolist()
    for b in range(96):
        board, over = first.board[b].tolist(), False
        assert not first.terminated[b] and board != solved
        for t in range(game.max_length):
            if over:
                assert later.terminated[t, b] and not later.rewards[t, b].any()
                continue
            legal = [_reference_step(board, a, size) is not None for a in range(4)]
            mask = (first if t == 0 else jax.tree.map(lambda x, t=t: x[t - 1], later)).legal_action_mask[b]
            assert mask.tolist() == legal, (b, t)
            board = _reference_step(board, int(actions[t, b]), size)
            over = board == solved or t + 1 == game.max_length
            assert later.board[t, b].tolist() == board, (b, t)
            assert bool(later.terminated[t, b]) == over
            assert later.rewards[t, b].tolist() == [-1.0, 0.0]
            assert later.current_player[t, b] == 0


def test_starts_are_solvable_and_the_uniform_ones_average_22_moves():
    """The 8-puzzle's mean optimal solution over its solvable arrangements is 21.97 moves; the random walks of up to
    40 moves that never undo their last move reach from 1 move to the far end of the puzzle, 15 on average."""
    for share, low, high, farthest in ((1.0, 21.5, 22.5, 27), (0.0, 13.5, 16.5, 26)):  # the walks' alone: share 0
        game = games.make("sliding_puzzle", uniform_share=share)
        starts = jax.vmap(game.init)(jax.random.split(jax.random.key(3), 3000))
        fewest = exact.fewest_moves(np.asarray(starts.board))
        assert fewest.min() >= 1  # solvable, never the solved board
        assert low < fewest.mean() < high, (share, fewest.mean())
        assert fewest.max() >= farthest
        if share == 0.0:  # every distance up to the far end, each at least 1% of the starts
            assert np.all(np.bincount(fewest)[1:farthest] > 30), np.bincount(fewest)
    assert not np.asarray(starts.terminated).any()


def test_the_exact_distances_match_the_8_puzzle_s_known_facts():
    distances = exact.distances(3)
    counts = np.bincount(distances[distances >= 0])
    assert counts.sum() == 181_440 and len(counts) - 1 == 31  # solvable arrangements; the hardest takes 31 moves
    assert counts[31] == 2 and counts[:4].tolist() == [1, 2, 4, 8]
    rng = np.random.default_rng(0)
    boards = np.stack([rng.permutation(9) for _ in range(300)])
    solvable = np.array([puzzle.is_solvable(board, 3) for board in boards])
    assert np.array_equal(exact.fewest_moves(boards) >= 0, solvable)
    assert 100 < solvable.sum() < 200


def test_render_and_from_ascii():
    game = games.make("sliding_puzzle")
    state = game.from_ascii("1 2 3\n4 . 6\n7 5 8\nmoves 3 of 40")
    assert game.render(state) == "1 2 3\n4 . 6\n7 5 8\nmoves 3 of 40"
    assert np.asarray(state.legal_action_mask).all()
    state = game.step(game.step(state, game.string_to_action("down")), game.string_to_action("r"))
    assert bool(state.terminated) and game.render(state).endswith("solved in 5 moves of 40")
    with pytest.raises(ValueError, match="cannot be solved"):
        game.from_ascii("2 1 3\n4 5 6\n7 8 .")
    with pytest.raises(ValueError, match="up, down, left or right"):
        game.string_to_action("north")


@pytest.mark.parametrize("size", [2, 3])
def test_the_checker_passes_the_puzzle(size):
    game = games.make("sliding_puzzle", size=size)
    report = games.check_game(game, num_games=16)
    assert report.num_moves > 0
    # A one-player report: the random episodes' returns (-1 a move), no wins or draws.
    mean, lowest, highest = report.returns
    assert mean == pytest.approx(-report.num_moves / report.num_games)
    assert game.return_bounds[0] <= lowest <= mean <= highest <= game.return_bounds[1]
    assert lowest == -report.max_game_length
    assert "random episodes" in str(report) and "won by" not in str(report)


def _planted(game: games.Game, bug: str) -> games.Game:
    def step(state, action):
        after = game.step(state, action)
        if bug == "second_player":
            return after.replace(current_player=jnp.int32(1) - jnp.int32(after.terminated))
        if bug == "pays_player_1":
            return after.replace(rewards=jnp.where(after.terminated, after.rewards,
                                                   jnp.array([-1.0, 1.0], jnp.float32)))
        if bug == "outside_bounds":
            return after.replace(rewards=after.rewards * 2.0)
        if bug == "illegal_reward":
            return after.replace(rewards=jnp.where(after.rewards[0] < -1.0, jnp.array([-1.0, 0.0]), after.rewards))
        if bug == "illegal_on_top":  # the lowest return paid on top of the moves already paid: below the bounds
            illegal = after.terminated & ~state.terminated & (after.rewards[0] < -1.0)
            return after.replace(rewards=jnp.where(illegal, jnp.array([game.return_bounds[0], 0.0]), after.rewards))
        raise AssertionError(bug)

    return dataclasses.replace(game, step=step)


@pytest.mark.parametrize("bug, check", [("second_player", "one_player"), ("pays_player_1", "one_player"),
                                        ("outside_bounds", "return_range"), ("illegal_reward", "illegal_action"),
                                        ("illegal_on_top", "illegal_action")])
def test_the_checker_catches_planted_one_player_bugs(bug, check):
    game = games.make("sliding_puzzle", size=2)
    with pytest.raises(GameCheckError, match=f"\\[{check}\\]"):
        games.check_game(_planted(game, bug), num_games=16)


def _planted_yardstick(game: games.Game, bug: str) -> games.Game:
    yardstick = game.yardstick
    if bug == "goal_never_solved":
        changed = dataclasses.replace(yardstick, is_solved=lambda state: jnp.bool_(False))
    elif bug == "goal_too_early":  # the first tile in place is not the goal
        changed = dataclasses.replace(yardstick, is_solved=lambda state: state.board[0] == 1)
    elif bug == "distances_doubled":  # 0 on the goal still, but a move can then shorten the way by two
        changed = dataclasses.replace(yardstick, fewest_moves=lambda states: 2 * yardstick.fewest_moves(states))
    elif bug == "float_distances":
        changed = dataclasses.replace(yardstick, fewest_moves=lambda states: yardstick.fewest_moves(states) * 1.0)
    elif bug == "starts_over":
        changed = dataclasses.replace(yardstick, starts=lambda key: game.step(game.init(key), jnp.int32(-1)))
    else:
        raise AssertionError(bug)
    return dataclasses.replace(game, yardstick=changed)


@pytest.mark.parametrize("bug", ["goal_never_solved", "goal_too_early", "distances_doubled", "float_distances",
                                 "starts_over"])
def test_the_checker_catches_a_wrong_yardstick_in_one_line(bug):
    game = games.make("sliding_puzzle", size=2)
    with pytest.raises(GameCheckError, match="\\[yardstick\\]") as info:
        games.check_game(_planted_yardstick(game, bug), num_games=16)
    assert len(str(info.value).splitlines()[0]) > 40


@pytest.mark.parametrize("legal_moves", [0, 3])
def test_an_illegal_move_ends_the_episode_at_the_lowest_return(legal_moves):
    game = games.make("sliding_puzzle")
    state, paid = game.init(jax.random.key(4)), 0.0
    for _ in range(legal_moves):
        state = game.step(state, jnp.argmax(state.legal_action_mask))
        paid += float(state.rewards[0])
    # A move off the board where the blank is at an edge, else an action out of range.
    illegal = jnp.argmin(state.legal_action_mask) if not bool(state.legal_action_mask.all()) else game.num_actions
    assert not bool(state.terminated)
    after = game.step(state, illegal)
    assert bool(after.terminated) and paid + float(after.rewards[0]) == game.return_bounds[0] == -40.0


def test_a_game_says_its_players_and_bounds_or_is_refused():
    game = games.make("sliding_puzzle")
    assert game.num_players == 1 and game.return_bounds == (-40.0, 0.0)
    with pytest.raises(ValueError, match="num_players"):
        dataclasses.replace(game, num_players=3)
    with pytest.raises(ValueError, match="one-player games"):
        dataclasses.replace(games.make("tic_tac_toe"), return_bounds=(-2.0, 2.0))
    with pytest.raises(ValueError, match="low < high"):
        dataclasses.replace(game, return_bounds=(0.0, -40.0))
