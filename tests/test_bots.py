"""Baseline agents: one-ply tactics, UCT with random rollouts, the perfect player, and agent specs.

Positions come from ASCII boards. Each agent is jitted once per module and fed batches of copies of a position
(every copy draws its own random choices), so "always" below means "in every copy".
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny import jit_optimised

from azjax import agent_specs, arena, bots, games, openings, results, uct
from azjax import perfect as perfect_lib
from azjax import progress as progress_lib
from azjax.agent_specs import SpecError

COPIES = 64


@pytest.fixture(scope="module")
def ttt():
    return games.make("tic_tac_toe")


@pytest.fixture(scope="module")
def c4():
    return games.make("connect_four")


def copies(state, n: int = COPIES):
    return jax.tree.map(lambda x: jnp.stack([x] * n), state)


@pytest.fixture(scope="module")
def onestep_ttt(ttt):
    return jax.jit(bots.onestep_bot(ttt).analyse)


@pytest.fixture(scope="module")
def onestep_c4(c4):
    return jax.jit(bots.onestep_bot(c4).analyse)


# Tic-tac-toe: X to move can win at c1 (cell 2); O threatens c2 too, but the win comes first.
TTT_WIN = """
X X .
O O .
. . .
"""
# X to move has no win; O threatens c2 (cell 5), the only move that does not lose at once.
TTT_BLOCK = """
X . .
O O .
X . .
"""
# Connect Four: X completes the bottom row at d; O's threat at d2 needs d1 first.
C4_WIN = """
. . . . . . .
. . . . . . .
. . . . . . .
. . . . . . .
O O O . . . .
X X X . . . .
"""
# O threatens e1; X must block it.
C4_BLOCK = """
. . . . . . .
. . . . . . .
. . . . . . .
. . . . . . .
X . . . . . .
X O O O . X .
"""
# O threatens d2, which needs d1: playing d would hand O the win, every other column is safe.
C4_UNDER_THREAT = """
. . . . . . .
. . . . . . .
. . . . . . .
. . . . . . .
O O O . . . .
X X O . . X X
"""


@pytest.mark.parametrize("board, move", [(TTT_WIN, 2), (TTT_BLOCK, 5)], ids=["win", "block"])
def test_onestep_tic_tac_toe_wins_and_blocks(ttt, onestep_ttt, board, move):
    analysis = onestep_ttt(jax.random.key(0), copies(ttt.from_ascii(board)))
    np.testing.assert_array_equal(analysis.action, move)
    assert np.all(np.asarray(analysis.policy)[:, move] == 1.0)


def test_onestep_values(ttt, onestep_ttt):
    win = onestep_ttt(jax.random.key(0), copies(ttt.from_ascii(TTT_WIN), 1))
    assert float(win.value[0]) == 1.0 and float(win.action_values[0, 2]) == 1.0
    block = onestep_ttt(jax.random.key(0), copies(ttt.from_ascii(TTT_BLOCK), 1))
    assert np.isnan(block.value[0])  # no forced result either way
    assert float(block.action_values[0, 1]) == -1.0  # b1 lets O win at c2


@pytest.mark.parametrize("board, move", [(C4_WIN, 3), (C4_BLOCK, 4)], ids=["win", "block"])
def test_onestep_connect_four_wins_and_blocks(c4, onestep_c4, board, move):
    analysis = onestep_c4(jax.random.key(1), copies(c4.from_ascii(board)))
    np.testing.assert_array_equal(analysis.action, move)


def test_onestep_never_plays_under_a_threat(c4, onestep_c4):
    actions = np.asarray(onestep_c4(jax.random.key(2), copies(c4.from_ascii(C4_UNDER_THREAT))).action)
    assert 3 not in actions
    assert set(actions) == {0, 1, 2, 4, 5, 6}  # random among the safe moves


def test_random_agent_plays_legal_moves(ttt):
    state = ttt.from_ascii(TTT_BLOCK)
    analysis = jax.jit(bots.random_bot().analyse)(jax.random.key(0), copies(state))
    assert set(np.asarray(analysis.action)) == {1, 2, 5, 7, 8}
    np.testing.assert_allclose(np.asarray(analysis.policy).sum(-1), 1.0)


def test_the_sampler_draws_legal_moves_uniformly():
    """bots.sample_uniform (the random bot's and the rollouts' sampler): only True entries, each about equally
    often, 0 for a row without any; any leading shape."""
    mask = jnp.array([[False, True, False, True, True, False, False, True]] * 4000 + [[False] * 8])
    actions = np.asarray(jax.jit(bots.sample_uniform)(jax.random.key(0), mask))
    assert actions[-1] == 0
    counts = np.bincount(actions[:-1], minlength=8)
    assert set(np.flatnonzero(counts)) == {1, 3, 4, 7}
    np.testing.assert_allclose(counts[[1, 3, 4, 7]] / 4000, 0.25, atol=0.03)  # 4 sigma is 0.027
    grid = np.asarray(bots.sample_uniform(jax.random.key(1), mask[:4000].reshape(40, 100, 8)))
    assert grid.shape == (40, 100) and set(np.unique(grid)) == {1, 3, 4, 7}
    assert int(bots.sample_uniform(jax.random.key(2), jnp.arange(8) == 5)) == 5  # one row: a scalar


def test_rollout_values_from_the_movers_side(ttt):
    rollout = jit_optimised(functools.partial(uct.rollout_values, game=ttt))
    # X to move, one cell left, and it completes X's row: every rollout is a win for X.
    x_wins = ttt.from_ascii("X X .\nO O X\nO X O")
    # X to move, one cell left, and it draws.
    draw = ttt.from_ascii("X O X\nX O O\nO X .")
    finished = ttt.from_ascii("X X X\nO O .\n. . .")
    values = rollout(jax.random.key(0), states=jax.tree.map(lambda *x: jnp.stack(x), x_wins, draw, finished))
    np.testing.assert_array_equal(values, [1.0, 0.0, 0.0])


# --------------------------------------------------------------------------------------------------------------
# UCT


@pytest.fixture(scope="module")
def uct200(ttt):
    return uct.uct_bot(ttt, 200)


def test_uct_takes_the_win_and_blocks(ttt, uct200):
    analyse = jit_optimised(uct200.analyse)
    states = jax.tree.map(lambda *x: jnp.concatenate(x), copies(ttt.from_ascii(TTT_WIN), 8),
                          copies(ttt.from_ascii(TTT_BLOCK), 8))
    analysis = analyse(jax.random.key(3), states)
    np.testing.assert_array_equal(analysis.action, [2] * 8 + [5] * 8)
    np.testing.assert_allclose(analysis.action_values[:8, 2], 1.0)  # an immediate win is worth exactly +1
    assert np.all(np.asarray(analysis.value[:8]) > 0.5)  # the root's mean value, for X, who wins


def _c4_positions(c4, count: int, moves: int, seed: int):
    """`count` Connect Four positions after `moves` uniformly random moves (none of them ending the game)."""
    key = jax.random.key(seed)
    states = jax.vmap(c4.init)(jax.random.split(key, count))
    return openings.play_opening(jax.random.fold_in(key, 1), c4, states, jnp.full(count, moves), moves)


def test_uct_counts_every_simulation_once_and_stays_legal(c4):
    states = _c4_positions(c4, 16, 6, seed=0)
    analysis = jit_optimised(uct.uct_bot(c4, 64).analyse)(jax.random.key(0), states)
    policy, legal = np.asarray(analysis.policy), np.asarray(states.legal_action_mask)
    np.testing.assert_allclose(policy.sum(-1), 1.0, atol=1e-6)
    assert np.all(policy[~legal] == 0.0) and np.all(legal[np.arange(16), np.asarray(analysis.action)])
    values = np.asarray(analysis.action_values)
    assert np.all(np.isnan(values[~legal])) and np.all(np.abs(values[legal]) <= 1.0)
    assert np.all(np.abs(np.asarray(analysis.value)) <= 1.0)


def test_uct_searches_as_the_mctx_version_does(c4):
    """The tree search of `uct_analysis` against the mctx-based one it replaced (tests/uct_reference.py): the
    same rules with other random numbers, so over many copies of each position the mean visit shares and root
    values agree within sampling noise."""
    from uct_reference import mctx_uct_analysis

    states = _c4_positions(c4, 8, 8, seed=1)
    many = jax.tree.map(lambda x: jnp.repeat(x, 48, axis=0), states)  # 48 copies of each of 8 positions
    ours = jit_optimised(functools.partial(uct.uct_analysis, game=c4, num_simulations=200))(jax.random.key(1), many)
    theirs = jit_optimised(functools.partial(mctx_uct_analysis, game=c4, num_simulations=200))(jax.random.key(2), many)
    copies = lambda x: np.asarray(x, np.float64).reshape(8, 48, *np.shape(x)[1:])  # noqa: E731
    mean = lambda x: copies(x).mean(axis=1)  # noqa: E731
    for field in ("policy", "value"):
        a, b = copies(getattr(ours, field)), copies(getattr(theirs, field))
        # Each mean's own sampling error, from the 48 copies' spread: two means of one distribution differ by
        # more than 4.5 standard errors in one element of 56 about once in 4,000 runs.
        error = np.sqrt(a.var(axis=1, ddof=1) / 48 + b.var(axis=1, ddof=1) / 48)
        assert np.all(np.abs(a.mean(axis=1) - b.mean(axis=1)) <= 4.5 * error + 0.01), (field, a.mean(1), b.mean(1))
    # And the moves each plays are chosen alike: the same favourite in most positions.
    favourite = lambda a: mean(jax.nn.one_hot(a.action, 7)).argmax(-1)  # noqa: E731
    assert np.sum(favourite(ours) == favourite(theirs)) >= 6


@pytest.mark.slow  # a match of many games; the default suite keeps UCT's equality with the mctx version
def test_uct_more_simulations_win(ttt, uct200):
    """UCT with 200 simulations against UCT with 10, half the games in each seat."""
    result = arena.play(jax.random.key(4), ttt, uct200, uct.uct_bot(ttt, 10), 120)
    low, _ = result.score_interval
    assert result.games == 120
    assert low > 0.6, results.format_match(result)
    assert result.elo > 100


# --------------------------------------------------------------------------------------------------------------
# The perfect player


@pytest.fixture(scope="module")
def perfect(ttt):
    return perfect_lib.perfect_bot(ttt)


@pytest.mark.parametrize("opponent", ["random", "onestep"])
def test_perfect_never_loses(ttt, perfect, opponent):
    result = arena.play(jax.random.key(5), ttt, perfect, agent_specs.make_bot(opponent, ttt), 400)
    assert result.losses == 0
    assert result.wins > 0


def test_perfect_against_itself_draws_from_sound_openings(ttt, perfect):
    result = arena.play(jax.random.key(6), ttt, perfect, perfect, 200, opening_moves=4, opening_agent=perfect.act)
    assert result.draws == 200


@pytest.mark.slow  # the default suite keeps a match shown as it plays in tests/test_evaluation.py
def test_a_match_reports_its_progress_and_plays_the_same_games(ttt):
    """`progress` is told after every step how many games still play; the games are the same as without it."""
    import io

    stream = io.StringIO()
    progress = progress_lib.MatchProgress(stream, every=0.0)
    bot_a, bot_b = uct.uct_bot(ttt, 4), bots.onestep_bot(ttt)
    shown = arena.play(jax.random.key(7), ttt, bot_a, bot_b, 16, opening_moves=2, progress=progress)
    plain = arena.play(jax.random.key(7), ttt, bot_a, bot_b, 16, opening_moves=2)
    assert shown.to_dict() == plain.to_dict()
    reports = [report for report in stream.getvalue().split("\r") if "games finished" in report]
    assert len(reports) == progress.lines >= 3  # a report a step; a game lasts 3 moves at least after 2
    assert all(report.startswith(f"{bot_a.name} against {bot_b.name}: ") for report in reports)
    finished = [int(report.split(": ")[1].split(" of ")[0]) for report in reports]
    assert finished == sorted(finished) and finished[0] < 16 and finished[-1] == 16
    assert stream.getvalue().endswith("\r\x1b[K")  # the line is cleared after the match


def test_perfect_analysis(ttt, perfect):
    analysis = jax.jit(perfect.analyse)(jax.random.key(0), copies(ttt.from_ascii(TTT_BLOCK), 1))
    assert int(analysis.action[0]) == 5
    assert float(analysis.action_values[0, 1]) == -1.0  # b1 loses
    assert np.isnan(analysis.action_values[0, 0])  # a1 is taken


def test_connect_four_perfect_giving_up_stops_the_match_with_solve_timeout(c4):
    """The solver's SolveTimeout crosses `jax.pure_callback` as a JaxRuntimeError; the match raises it as
    SolveTimeout again, saying what to do. The empty board takes minutes: a 0.05 s limit runs out at once."""
    from azjax.solver.connect_four import SolveTimeout

    impatient = perfect_lib.perfect_bot(c4, max_seconds=0.05)
    with pytest.raises(SolveTimeout, match="gave up on a position: solving a position with") as error:
        arena.play(jax.random.key(0), c4, impatient, bots.random_bot(), 2)
    assert f"--opening-moves {perfect_lib.CONNECT_FOUR_PERFECT_MIN_STONES}" in str(error.value)
    with pytest.raises(ValueError, match="other"), perfect_lib.solve_timeouts_raised():  # other errors pass unchanged
        raise ValueError("other")


# --------------------------------------------------------------------------------------------------------------
# Specs


def test_make_bot_specs(ttt):
    assert agent_specs.make_bot("random", ttt).name == "random"
    assert agent_specs.make_bot("onestep", ttt).name == "onestep"
    assert agent_specs.make_bot(" mcts:25 ", ttt).name == "mcts:25"
    assert agent_specs.game_of_spec("mcts:25") is None


@pytest.mark.parametrize(
    "spec, message",
    [
        ("mcts", "not a whole number"),
        ("mcts:abc", "not a whole number"),
        ("mcts:0", "not a whole number"),
        ("bogus", "cannot read agent"),
        ("greedy:", "no run directory"),
        ("az:/no/such/run", "/no/such/run"),
        ("/no/such/run", "/no/such/run does not exist; pass a training run's directory"),  # a path, not a name
    ],
)
def test_malformed_specs_give_one_line_errors(ttt, spec, message):
    with pytest.raises(SpecError, match=message) as error:
        agent_specs.make_bot(spec, ttt)
    assert "\n" not in str(error.value)


def test_perfect_refuses_large_games():
    with pytest.raises(SpecError, match="small games such as tic_tac_toe") as error:
        agent_specs.make_bot("perfect", games.make("othello"))
    assert "\n" not in str(error.value)
