"""Tests of `check_game`: the built-in games pass, and each check catches a tic-tac-toe broken on purpose.

Each broken variant wraps the real tic-tac-toe functions with `dataclasses.replace`, breaking one rule, and the
test asserts that the error names that rule's check. Small batches keep the file fast on a CPU.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import games
from azjax.games import GameCheckError, Symmetry, check_game
from azjax.games.checker import CHECKS, ONE_SIDED_GAMES, CheckReport

NUM_GAMES = 8


@pytest.fixture(scope="module")
def ttt() -> games.Game:
    return games.make_tic_tac_toe()


def _num_stones(state) -> jax.Array:
    return jnp.sum(state.board != 0)


def _where(condition: jax.Array, if_true, if_false):
    """Picks whole states (pytrees) by a scalar condition."""
    return jax.tree.map(lambda a, b: jnp.where(condition, a, b), if_true, if_false)


def _wrap_step(game: games.Game, edit) -> games.Game:
    """`game` whose step returns `edit(state, action, next_state)`."""
    return dataclasses.replace(game, step=lambda state, action: edit(state, action, game.step(state, action)))


def _illegal(state, action) -> jax.Array:
    """Whether tic-tac-toe's `action` is illegal in a live `state` (bool [])."""
    return ~state.legal_action_mask[jnp.clip(action, 0, 8)] & ~state.terminated


def _on_legal_moves(game: games.Game, edit) -> games.Game:
    """`game` whose legal moves' rewards are `edit(state, new_rewards)`; illegal moves still cost their mover."""
    def step(state, action):
        new = game.step(state, action)
        return new.replace(rewards=jnp.where(_illegal(state, action), new.rewards, edit(state, new.rewards)))

    return dataclasses.replace(game, step=step)


def _assert_fails(game: games.Game, check: str, *, played: bool = True) -> GameCheckError:
    """Runs check_game and asserts one GameCheckError naming `check` and the game (and a reproduction if
    `played`)."""
    assert check in CHECKS
    with pytest.raises(GameCheckError) as info:
        check_game(game, num_games=NUM_GAMES)
    error = info.value
    message = str(error)
    assert f"[{check}]" in message, message
    assert error.check == check
    assert repr(game.name) in message
    if played:
        assert error.element is not None and error.actions is not None
        assert "batch element" in message and f"actions from init: {error.actions}" in message
        assert "jax.random.fold_in(jax.random.key(0)" in message
    return error


# --------------------------------------------------------------------------------------------------------------
# Correct games pass.


@pytest.mark.parametrize("name", games.names())
def test_builtin_games_pass(name):
    report = check_game(games.make(name), num_games=NUM_GAMES)
    assert isinstance(report, CheckReport)
    assert report.game == name and report.num_games == NUM_GAMES
    assert sum(report.wins) + report.num_draws == NUM_GAMES
    assert 0 < report.max_game_length <= games.make(name).max_length
    assert report.num_moves >= max(NUM_GAMES, report.max_game_length)
    # Othello's start keeps its colours only under the symmetries that map each diagonal of the centre to itself.
    unchecked = {"flip_lr", "flip_ud", "rot90", "rot270"} if name.startswith("othello") else set()
    assert set(report.symmetries_checked) == {s.name for s in games.make(name).symmetries} - unchecked
    assert set(report.symmetries_unchecked) == unchecked
    assert name in str(report)


def test_symmetry_without_invariant_start_is_reported_unchecked(ttt):
    shifted = Symmetry("plus_one", lambda obs: obs + 1.0, tuple(range(9)))
    report = check_game(dataclasses.replace(ttt, symmetries=(shifted,)), num_games=NUM_GAMES)
    assert report.symmetries_checked == () and report.symmetries_unchecked == ("plus_one",)


def test_the_report_counts_in_the_singular_at_one():
    report = CheckReport(game="g", num_games=2, num_moves=1, max_game_length=1, wins=(1, 1), num_draws=0,
                         symmetries_checked=("mirror",), symmetries_unchecked=(), seconds=0.1, num_positions=1)
    assert "2 random games, 1 move (longest 1)" in str(report)
    assert "1 symmetry checked by play, 1 test position;" in str(report)


def test_rejects_too_few_games(ttt):
    with pytest.raises(ValueError, match="num_games"):
        check_game(ttt, num_games=1)


# --------------------------------------------------------------------------------------------------------------
# Static facts, tracing, shapes and dtypes: found before any game is played.


@pytest.mark.parametrize(
    "changes",
    [dict(num_actions=0), dict(observation_shape=[3, 3, 2]), dict(max_length=0), dict(step=None),
     dict(observation_version="2")],
    ids=["num_actions", "observation_shape", "max_length", "step", "observation_version"],
)
def test_bad_static_fields(ttt, changes):
    _assert_fails(dataclasses.replace(ttt, **changes), "static_fields", played=False)


@pytest.mark.parametrize("shape", [(), (3, 3, 2, 1)], ids=["rank_0", "rank_4"])
def test_observation_of_a_rank_the_network_cannot_read(ttt, shape):
    # observe matches the shape, so only the rank is wrong: the network reads ranks 1, 2 and 3 only.
    observe = lambda s: jnp.broadcast_to(jnp.sum(ttt.observe(s)), shape)  # noqa: E731
    game = dataclasses.replace(ttt, observation_shape=shape, observe=observe)
    error = _assert_fails(game, "static_fields", played=False)
    assert "must have 1, 2 or 3 dimensions" in str(error) and f"rank {len(shape)}" in str(error)


def test_symmetry_index_not_a_permutation(ttt):
    bad = Symmetry("bad", lambda obs: obs, (0, 0, 2, 3, 4, 5, 6, 7, 8))
    error = _assert_fails(dataclasses.replace(ttt, symmetries=(bad,)), "symmetries", played=False)
    assert "permutation" in str(error) and "[1]" in str(error)


def test_symmetry_index_of_jax_ints(ttt):
    flip_lr = next(s for s in ttt.symmetries if s.name == "flip_lr")
    bad = Symmetry("flip_lr", flip_lr.transform, jnp.asarray(flip_lr.action_index))  # type: ignore[arg-type]
    error = _assert_fails(dataclasses.replace(ttt, symmetries=(bad,)), "symmetries", played=False)
    assert "must be a tuple of Python ints" in str(error) and "misses" not in str(error)


def test_symmetry_transform_changes_shape(ttt):
    bad = Symmetry("first_plane", lambda obs: obs[..., :1], tuple(range(9)))
    _assert_fails(dataclasses.replace(ttt, symmetries=(bad,)), "symmetries", played=False)


def test_step_that_fails_to_trace(ttt):
    def step(state, action):
        if state.terminated:  # Python control flow on a traced value
            return state
        return ttt.step(state, action)

    error = _assert_fails(dataclasses.replace(ttt, step=step), "trace", played=False)
    assert "game.step" in str(error)
    assert isinstance(error.__cause__, jax.errors.TracerBoolConversionError)


def test_observe_that_fails_to_trace(ttt):
    game = dataclasses.replace(ttt, observe=lambda state: ttt.observe(state).reshape(4, 4))
    error = _assert_fails(game, "trace", played=False)
    assert "game.observe" in str(error) and error.__cause__ is not None


@pytest.mark.parametrize(
    "field, value",
    [
        ("rewards", lambda s: s.rewards.astype(jnp.float16)),
        ("legal_action_mask", lambda s: s.legal_action_mask.astype(jnp.int32)),
        ("current_player", lambda s: s.current_player.reshape(1)),
    ],
)
def test_state_field_with_wrong_dtype_or_shape(ttt, field, value):
    game = dataclasses.replace(ttt, init=lambda key: (s := ttt.init(key)).replace(**{field: value(s)}))
    error = _assert_fails(game, "state_fields", played=False)
    assert field in str(error)


@pytest.mark.parametrize(
    "observe",
    [lambda s, real: real(s).astype(jnp.bfloat16), lambda s, real: real(s).reshape(-1)],
    ids=["dtype", "shape"],
)
def test_observation_with_wrong_dtype_or_shape(ttt, observe):
    game = dataclasses.replace(ttt, observe=lambda state: observe(state, ttt.observe))
    _assert_fails(game, "observation", played=False)


def test_observation_not_finite(ttt):
    game = dataclasses.replace(
        ttt, observe=lambda s: jnp.where(_num_stones(s) >= 3, jnp.nan, ttt.observe(s))
    )
    _assert_fails(game, "observation")


def test_step_changes_a_dtype(ttt):
    game = _wrap_step(ttt, lambda s, a, new: new.replace(rewards=new.rewards.astype(jnp.float16)))
    error = _assert_fails(game, "state_structure", played=False)
    assert ".rewards" in str(error)


def test_weakly_typed_state_retraces(ttt):
    # jnp.asarray(0) is weakly typed; step returns a strongly typed int32, so the next jitted call traces again.
    game = dataclasses.replace(ttt, init=lambda key: ttt.init(key).replace(current_player=jnp.asarray(0)))
    error = _assert_fails(game, "retrace")
    assert "current_player" in str(error) and "weakly typed" in str(error)


# --------------------------------------------------------------------------------------------------------------
# Rules found by play.


def _count_stones_on_host(board) -> np.ndarray:
    # The bug: sums over every axis, so under vmap ("broadcast_all" hands it the whole batch) it counts the
    # stones of all the games in the batch. (np.asarray first: jax operations inside a callback can deadlock.)
    board = np.asarray(board)
    return np.full(board.shape[:-1], np.sum(board != 0), np.int32)


def test_batch_dependent_step(ttt):
    def edit(state, action, new):
        count = jax.pure_callback(
            _count_stones_on_host, jax.ShapeDtypeStruct((), jnp.int32), new.board, vmap_method="broadcast_all"
        )
        return new.replace(terminated=new.terminated | (count % 7 == 6))

    _assert_fails(_wrap_step(ttt, edit), "batch_independence")


def test_start_with_the_second_player(ttt):
    game = dataclasses.replace(ttt, init=lambda key: ttt.init(key).replace(current_player=jnp.int32(1)))
    _assert_fails(game, "start_state")


def test_empty_mask_before_the_end(ttt):
    def edit(state, action, new):
        stuck = (_num_stones(new) == 4) & ~new.terminated
        return new.replace(legal_action_mask=new.legal_action_mask & ~stuck)

    error = _assert_fails(_wrap_step(ttt, edit), "legal_mask")
    assert len(error.actions) == 4


def test_legal_moves_after_the_end(ttt):
    game = _wrap_step(ttt, lambda s, a, new: new.replace(legal_action_mask=new.board == 0))
    _assert_fails(game, "legal_mask")


def test_player_does_not_alternate(ttt):
    def edit(state, action, new):
        return new.replace(current_player=jnp.where(new.terminated, new.current_player, state.current_player))

    _assert_fails(_wrap_step(ttt, edit), "alternation")


def test_a_puzzle_that_forgot_num_players_1_is_told_the_flag():
    puzzle = games.make("sliding_puzzle")
    forgot = dataclasses.replace(puzzle, num_players=2, return_bounds=(-1.0, 1.0), yardstick=None)
    error = _assert_fails(forgot, "alternation")
    assert "players must alternate: a puzzle, or any game of one player, says so with num_players=1" in str(error)


def test_a_two_player_game_that_does_not_alternate_is_told_the_flag_only_where_player_1_never_moves(ttt):
    def edit(state, action, new):  # the turn passes once, then stays with player 1
        return new.replace(current_player=jnp.where(new.terminated | (state.current_player == 0),
                                                    new.current_player, state.current_player))

    assert "num_players=1" not in str(_assert_fails(_wrap_step(ttt, edit), "alternation"))


def test_rewards_not_zero_sum(ttt):
    game = _wrap_step(ttt, lambda s, a, new: new.replace(rewards=jnp.maximum(new.rewards, 0.0)))
    _assert_fails(game, "zero_sum")


def test_rewards_beyond_one(ttt):
    error = _assert_fails(_on_legal_moves(ttt, lambda s, r: 2.0 * r), "reward_range")
    assert "outside [-1, 1]" in str(error)


def test_reward_paid_mid_game(ttt):
    def edit(state, action, new):
        bonus = (_num_stones(new) == 3) & ~new.terminated
        return new.replace(rewards=jnp.where(bonus, jnp.array([0.5, -0.5]), new.rewards))

    error = _assert_fails(_wrap_step(ttt, edit), "reward_timing")
    # The reported actions reproduce it, unbatched.
    step = jax.jit(lambda state, action: edit(state, action, ttt.step(state, action)))
    state = ttt.init(jax.random.fold_in(jax.random.key(0), error.element))
    for action in error.actions:
        state = step(state, action)
    assert not state.terminated and np.any(np.asarray(state.rewards) != 0)


@pytest.mark.parametrize("bug", ["changes_a_field", "pays_again"])
def test_terminal_not_absorbing(ttt, bug):
    def edit(state, action, new):
        if bug == "changes_a_field":
            return new.replace(current_player=jnp.where(state.terminated, 1 - new.current_player, new.current_player))
        return _where(state.terminated, state, new)  # keeps the last rewards instead of paying zero

    error = _assert_fails(_wrap_step(ttt, edit), "absorbing")
    assert ("current_player" if bug == "changes_a_field" else "paid rewards") in str(error)


def test_illegal_action_ignored(ttt):
    def edit(state, action, new):
        illegal = ~state.legal_action_mask[jnp.clip(action, 0, 8)]
        return _where(illegal & ~state.terminated, state, new)

    _assert_fails(_wrap_step(ttt, edit), "illegal_action")


def test_forfeit_leaves_legal_moves(ttt):
    # Ends the game with the right rewards, but keeps the mask of the position before the illegal action.
    def edit(state, action, new):
        return new.replace(legal_action_mask=jnp.where(_illegal(state, action), state.legal_action_mask,
                                                       new.legal_action_mask))

    error = _assert_fails(_wrap_step(ttt, edit), "illegal_action")
    assert "the state the illegal action" in str(error) and "legal_action_mask still allows" in str(error)


def test_forfeit_not_absorbing(ttt):
    # Decides whether a game is over from the board (a line needs five stones), not from `terminated`: a forfeit
    # within the first four moves leaves a terminated state that the next step hands to the other player.
    def edit(state, action, new):
        forfeited = state.terminated & (_num_stones(state) < 5)
        return new.replace(current_player=jnp.where(forfeited, 1 - state.current_player, new.current_player))

    error = _assert_fails(_wrap_step(ttt, edit), "illegal_action")
    assert "not absorbing" in str(error) and "current_player" in str(error)


def test_max_length_too_small(ttt):
    error = _assert_fails(dataclasses.replace(ttt, max_length=5), "max_length")
    assert len(error.actions) == 5


def test_game_that_never_ends(ttt):
    def edit(state, action, new):
        # A finished game starts over (on an empty board) instead of ending; illegal moves still lose.
        over = new.terminated & ~state.terminated & state.legal_action_mask[action]
        restart = new.replace(
            board=jnp.zeros_like(new.board),
            legal_action_mask=jnp.ones_like(new.legal_action_mask),
            terminated=jnp.bool_(False),
            rewards=jnp.zeros_like(new.rewards),
        )
        return _where(over, restart, new)

    _assert_fails(_wrap_step(ttt, edit), "max_length")


# --------------------------------------------------------------------------------------------------------------
# Warnings: rewards paid to the wrong player, which no rule forbids outright.


def test_rewards_indexed_by_mover_are_warned_about(ttt):
    # rewards = [mover's, opponent's]: right when player 0 wins, so player 0 seems to win every decisive game.
    game = _on_legal_moves(ttt, lambda s, r: jnp.stack([r[s.current_player], -r[s.current_player]]))
    with pytest.warns(games.GameCheckWarning, match="indexed by who moved"):
        report = check_game(game, num_games=16)
    assert report.wins[1] == 0 and "ended by player 1's move all paid player 1 a negative" in report.warnings[0]


def test_a_player_who_never_wins_is_warned_about(ttt):
    # Player 1's lines go unnoticed (its wins become draws), so player 0 wins every decisive game.
    game = _on_legal_moves(ttt, lambda s, r: jnp.where(r[1] > 0, 0.0, r))
    with pytest.warns(games.GameCheckWarning, match="player 1 won none of the .* decisive random games"):
        report = check_game(game, num_games=64)
    assert report.wins[1] == 0 and report.wins[0] >= ONE_SIDED_GAMES and len(report.warnings) == 1


def test_wrong_symmetry_permutation(ttt):
    rot90 = next(s for s in ttt.symmetries if s.name == "rot90")
    flip_lr = next(s for s in ttt.symmetries if s.name == "flip_lr")
    wrong = Symmetry("rot90", rot90.transform, flip_lr.action_index)  # a permutation, but the wrong one
    error = _assert_fails(dataclasses.replace(ttt, symmetries=(flip_lr, wrong)), "symmetries")
    assert "symmetries[1] ('rot90')" in str(error)
