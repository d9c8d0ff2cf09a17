"""The arena (seats, openings, counts), its statistics (Wilson intervals, Elo, the Bradley-Terry fit), evaluation
during training, and `azjax eval`."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import (
    arena,
    cli,
    evaluation,
    games,
    openings,
    presets,
    progress,
    ratings,
    results,
    round_robin,
    rundir,
    trainer,
)
from azjax import config as config_lib
from azjax.results import MatchResult


@pytest.fixture(scope="module")
def ttt():
    return games.make("tic_tac_toe")


def first_cell(key, states):
    """Deterministic: the lowest legal action."""
    del key
    return jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)


def last_cell(key, states):
    """Deterministic: the highest legal action."""
    del key
    num_actions = states.legal_action_mask.shape[-1]
    return (num_actions - 1 - jnp.argmax(states.legal_action_mask[:, ::-1], axis=-1)).astype(jnp.int32)


def run(game, agent_a, agent_b, num_games, opening_moves=0, seed=0, compact=None):
    fn = jax.jit(functools.partial(arena.run_games, game=game, agent_a=agent_a, agent_b=agent_b,
                                   num_games=num_games, opening_moves=opening_moves, compact=compact))
    return jax.device_get(fn(jax.random.key(seed)))


# --------------------------------------------------------------------------------------------------------------
# The arena


def test_seats_alternate_and_results_are_counted(ttt):
    # first_cell as X against last_cell: X a1, O c3, X b1, O b3, X c1 wins the top row (5 moves).
    # last_cell as X against first_cell: X c3, O a1, X b3, O b1, X a3 wins the bottom row (5 moves).
    games_ = run(ttt, first_cell, last_cell, 10)
    np.testing.assert_array_equal(games_.seat, [0] * 5 + [1] * 5)
    np.testing.assert_array_equal(games_.outcome, [1] * 5 + [-1] * 5)
    np.testing.assert_array_equal(games_.length, 5)
    result = results.summarize(games_, "first", "last")
    assert (result.wins, result.draws, result.losses, result.games) == (5, 0, 5, 10)
    assert (result.wins_as_first, result.draws_as_first, result.losses_as_first) == (5, 0, 0)
    assert result.score == 0.5 and result.elo == 0.0
    assert result.mean_length == 5.0


def test_same_agent_both_seats(ttt):
    # first_cell against itself: X takes a1 b1? no: X a1, O b1, X c1, O a2, X b2, O c2, X a3 wins a diagonal.
    games_ = run(ttt, first_cell, first_cell, 4)
    np.testing.assert_array_equal(games_.outcome, [1, 1, -1, -1])  # player 0 always wins
    np.testing.assert_array_equal(games_.length, 7)


def test_openings_vary_deterministic_games_and_pairs_share_them(ttt):
    games_ = run(ttt, first_cell, first_cell, 200, opening_moves=3, seed=1)
    half = 100
    # The same deterministic agent on both sides of the same opening plays the same game: A's result flips with
    # its seat and the lengths agree, which shows that the two games of a pair start from one opening.
    np.testing.assert_array_equal(games_.outcome[:half], -games_.outcome[half:])
    np.testing.assert_array_equal(games_.length[:half], games_.length[half:])
    np.testing.assert_array_equal(games_.moves[:half], games_.moves[half:])
    # 504 openings of 3 moves: the 100 pairs' are all different.
    assert len({tuple(row) for row in np.asarray(games_.moves[:half, :3])}) == half
    assert set(games_.outcome.tolist()) >= {-1.0, 1.0}


@pytest.mark.parametrize("compact", [pytest.param(False, marks=pytest.mark.slow), True])
def test_recorded_moves_replay_the_games(ttt, compact):
    games_ = run(ttt, evaluation.random_agent, first_cell, 20, opening_moves=2, seed=3, compact=compact)
    assert len(games_.seat) == 20
    for seat, moves, length, outcome in zip(games_.seat, games_.moves, games_.length, games_.outcome, strict=True):
        state = ttt.init(jax.random.key(0))
        played = [int(m) for m in moves if m >= 0]
        assert len(played) == length and np.all(moves[length:] == -1)
        for action in played:
            assert not state.terminated and state.legal_action_mask[action]
            state = ttt.step(state, action)
        assert state.terminated and float(state.rewards[seat]) == outcome


def test_compacting_the_last_games_plays_the_same_games():
    """Deterministic agents play the same games whether the last quarter of the pairs move to a smaller batch or
    not; the games end at different moves, so the smaller batch does play (Connect Four, 64 games)."""
    game = games.make("connect_four")

    def hashed(key, states):
        """Deterministic, but a different move in different positions: the legal move with the largest hash."""
        del key
        board = states.board.reshape(states.board.shape[0], -1).astype(jnp.float32)
        position = board @ jnp.sin(jnp.arange(1.0, board.shape[1] + 1))
        scores = jnp.sin(12.9898 * position[:, None] + 78.233 * jnp.arange(game.num_actions))
        return jnp.argmax(jnp.where(states.legal_action_mask, scores, -2.0), axis=-1).astype(jnp.int32)

    whole, compacted = (run(game, hashed, last_cell, 64, opening_moves=4, seed=5, compact=compact)
                        for compact in (False, True))
    assert len(set(whole.length.tolist())) > 8
    for field in ("outcome", "seat", "length", "moves"):
        np.testing.assert_array_equal(getattr(compacted, field), getattr(whole, field), err_msg=field)


@pytest.mark.parametrize("opening_moves, distinct", [(1, 18), (3, 200)])
def test_repeated_games_count_once(ttt, opening_moves, distinct):
    # Two deterministic agents: one game per opening and seat. With one opening move tic-tac-toe has 9 openings,
    # so 100 pairs repeat 18 games; with three there are 504 and every pair gets its own.
    games_ = run(ttt, first_cell, last_cell, 200, opening_moves=opening_moves, seed=2)
    result = results.summarize(games_, "first", "last")
    played_openings = {tuple(row) for row in np.asarray(games_.moves[:, :opening_moves])}
    assert result.games == 200 and result.distinct_games == 2 * len(played_openings) == distinct
    assert result.score_interval == pytest.approx(ratings.wilson_interval(result.score, distinct))
    if distinct < result.games:  # copies count once: the interval is wider than 200 games' would be
        low, high = result.score_interval
        low_200, high_200 = ratings.wilson_interval(result.score, 200)
        assert high - low > 1.5 * (high_200 - low_200)


def _opening_positions(moves: np.ndarray, num_moves: int) -> list[tuple]:
    """Tic-tac-toe: the position each opening (the first `num_moves` of each row) reaches, whatever the order."""
    return [(frozenset(row[0:num_moves:2].tolist()), frozenset(row[1:num_moves:2].tolist())) for row in moves]


def test_openings_are_distinct_positions_not_move_orders(ttt):
    """Three moves reach 252 positions of tic-tac-toe by 504 move orders (X a1 O b2 X c3 = X c3 O b2 X a1): 100
    pairs get 100 different positions, not only 100 different move lists."""
    games_ = run(ttt, first_cell, last_cell, 200, opening_moves=3, seed=7)
    assert len(set(_opening_positions(np.asarray(games_.moves[:100]), 3))) == 100


def test_transposed_openings_are_one_game_for_deterministic_agents(ttt):
    """With 300 pairs for 252 positions some must repeat, through other move orders too: deterministic agents
    play one game per position and seat, and that is what the distinct games count."""
    games_ = run(ttt, first_cell, last_cell, 600, opening_moves=3, seed=8)
    positions = _opening_positions(np.asarray(games_.moves[:300]), 3)
    assert len({tuple(row) for row in np.asarray(games_.moves[:300, :3])}) > len(set(positions))  # transpositions
    result = results.summarize(games_, "first", "last")
    assert result.distinct_games == 2 * len(set(positions)) and len(set(positions)) > 240
    # The same two games by other opening move orders: one game per seat.
    moves = np.array([[0, 4, 8, 1, 2, 7, -1], [8, 4, 0, 1, 2, 7, -1]])
    seat, start, opened = np.zeros(2, np.int32), np.ones((2, 2), np.uint32), np.full(2, 3)
    assert results.count_distinct(seat, moves, start=start, opening_length=opened) == 1
    assert results.count_distinct(seat, moves) == 2


def test_openings_have_the_length_asked_for(ttt):
    """Random 6-move openings of tic-tac-toe could win on move 5; those moves are not drawn, so every opening has
    6 moves and leaves the game going (the arena and `azjax play` share `non_ending_moves`)."""
    games_ = run(ttt, first_cell, last_cell, 200, opening_moves=6, seed=9)
    np.testing.assert_array_equal(games_.opening_length, 6)
    states = positions_after(ttt, np.asarray(games_.moves[:, :6]))
    assert not np.any(states.terminated)
    board = ttt.from_ascii("X X .\nO O .\n. . .")  # X to move: c1 wins, the rest go on
    keep_going = jax.jit(functools.partial(openings.non_ending_moves, ttt))(jax.tree.map(lambda x: x[None], board))
    assert np.flatnonzero(np.asarray(keep_going[0])).tolist() == [5, 6, 7, 8]


def positions_after(game, moves: np.ndarray):
    from azjax.solver import positions

    return positions.states_from_moves(game, moves.tolist())


def test_play_opening(ttt):
    states = jax.vmap(ttt.init)(jax.random.split(jax.random.key(0), 64))
    num_moves = jnp.arange(64) % 3  # 0, 1 or 2 moves: none of them can end a game
    opened = jax.jit(functools.partial(openings.play_opening, game=ttt, max_moves=2))(
        jax.random.key(1), states=states, num_moves=num_moves
    )
    stones = np.sum(np.asarray(opened.board) != 0, axis=1)
    np.testing.assert_array_equal(stones, np.asarray(num_moves))
    assert not np.any(opened.terminated)
    assert len({tuple(b) for b in np.asarray(opened.board)}) > 10


def test_run_games_needs_an_even_number(ttt):
    with pytest.raises(ValueError, match="even"):
        arena.run_games(jax.random.key(0), ttt, first_cell, first_cell, 3)


def test_head_to_head_counts_each_seat(ttt):
    result = evaluation.head_to_head(jax.random.key(0), ttt, evaluation.random_agent, evaluation.random_agent, 20)
    assert result["games"] == 40 and result["wins"] + result["draws"] + result["losses"] == 40
    # Lowest free cell against highest: whoever moves first completes its row (0-1-2 or 8-7-6) first.
    result = evaluation.head_to_head(jax.random.key(1), ttt, first_cell, last_cell, 3)
    assert result["as_first"] == {"wins": 3, "draws": 0, "losses": 0}
    assert result["as_second"] == {"wins": 0, "draws": 0, "losses": 3}
    assert result["score"] == 0.5


def test_head_to_head_openings_vary_deterministic_games(ttt):
    # Lowest free cell against itself replays one game from the start (the first player wins it); random
    # openings of 0..4 moves give many games, not all won by the first player.
    same = evaluation.head_to_head(jax.random.key(2), ttt, first_cell, first_cell, 50)
    assert same["as_first"] == {"wins": 50, "draws": 0, "losses": 0}
    varied = evaluation.head_to_head(jax.random.key(2), ttt, first_cell, first_cell, 50, opening_moves=4)
    assert varied["as_first"]["wins"] < 50 and varied["games"] == 100


# --------------------------------------------------------------------------------------------------------------
# Statistics, checked against values computed by hand


def test_wilson_interval():
    # 8 of 10: the textbook Wilson interval is [0.490, 0.943].
    low, high = ratings.wilson_interval(0.8, 10)
    assert low == pytest.approx(0.49016, abs=1e-5) and high == pytest.approx(0.94332, abs=1e-5)
    # The bounds are the roots of (p - x)^2 = z^2 x (1 - x) / n.
    z, n, p = ratings.Z_95, 100, 0.5
    for x in ratings.wilson_interval(p, n):
        assert (p - x) ** 2 == pytest.approx(z * z * x * (1 - x) / n)
    assert ratings.wilson_interval(1.0, 1000)[1] == 1.0
    assert ratings.wilson_interval(1.0, 1000)[0] == pytest.approx(0.99617, abs=1e-5)


@pytest.mark.parametrize("num_games", [10, 16, 64, 100])
def test_a_one_sided_match_has_intervals_that_mirror_each_other(num_games):
    """Every game won: the score's interval reaches 1 exactly and the Elo's +inf; every game lost, the mirror image
    (the rounding of the Wilson bounds once left +6261 or -6984 there, for some numbers of games only)."""
    won = MatchResult("a", "b", num_games, 0, 0, num_games // 2, 0, 0, 9.0, num_games)
    lost = MatchResult("a", "b", 0, 0, num_games, 0, 0, num_games // 2, 9.0, num_games)
    assert won.score_interval[1] == 1.0 and lost.score_interval[0] == 0.0
    assert won.score_interval[0] == pytest.approx(1.0 - lost.score_interval[1], abs=1e-12)
    (won_low, won_high), (lost_low, lost_high) = won.elo_interval, lost.elo_interval
    assert won_high == math.inf and lost_low == -math.inf
    assert won_low == pytest.approx(-lost_high) and 0 < won_low < math.inf
    low = f"{won_low:+.0f}"
    assert f"+inf  [{low}, +inf]" in results.format_match(won)
    assert f"-inf  [-inf, {f'{lost_high:+.0f}'}]" in results.format_match(lost)


def test_elo_from_score():
    assert ratings.elo_from_score(0.5) == 0.0
    assert ratings.elo_from_score(0.75) == pytest.approx(400 * math.log10(3))  # 190.85
    assert ratings.elo_from_score(0.25) == pytest.approx(-400 * math.log10(3))
    assert ratings.elo_from_score(1.0) == math.inf and ratings.elo_from_score(0.0) == -math.inf
    assert ratings.expected_score(400 * math.log10(3)) == pytest.approx(0.75)


def test_match_result_statistics():
    # 60 wins, 20 draws, 20 losses: score (60 + 10) / 100 = 0.7, Elo -400 log10(1/0.7 - 1) = 147.19.
    result = MatchResult("a", "b", 60, 20, 20, 35, 10, 5, 7.0, 100)
    assert result.games == 100 and result.score == pytest.approx(0.7)
    assert result.elo == pytest.approx(147.19, abs=0.01)
    low, high = result.score_interval
    assert (low, high) == pytest.approx(ratings.wilson_interval(0.7, 100))
    assert result.elo_interval == pytest.approx((ratings.elo_from_score(low), ratings.elo_from_score(high)))
    line = results.format_match(result)
    assert "60" in line and "0.700" in line and "+147" in line and "35/10/5" in line and "25/10/15" in line


def test_fit_elo_two_players_by_hand():
    # 75 points of 100: the maximum-likelihood gap is 400 log10(3); its standard error is
    # 1 / sqrt(n p (1 - p)) / (ln 10 / 400) = 40.12.
    fit = ratings.fit_elo(np.array([[0, 75], [25, 0]]), np.array([[0, 100], [100, 0]]), anchor=1)
    np.testing.assert_allclose(fit.ratings, [400 * math.log10(3), 0.0])
    scale = math.log(10) / 400
    assert fit.standard_errors[0] == pytest.approx(1 / math.sqrt(100 * 0.75 * 0.25) / scale)
    assert fit.standard_errors[1] == 0.0


def test_fit_elo_recovers_known_ratings():
    true = np.array([0.0, 150.0, 400.0, -120.0, 800.0])
    games_ = np.full((5, 5), 1000.0)
    np.fill_diagonal(games_, 0)
    expected = games_ * ratings.expected_score(true[:, None] - true[None, :])
    fit = ratings.fit_elo(expected, games_)  # exact expected results: the fit is the truth
    np.testing.assert_allclose(fit.ratings, true, atol=1e-6)
    # Sampled results (wins and losses drawn from the model): within three standard errors.
    rng = np.random.default_rng(0)
    wins = np.zeros_like(games_)
    for i in range(5):
        for j in range(i + 1, 5):
            wins[i, j] = rng.binomial(1000, ratings.expected_score(true[i] - true[j]))
            wins[j, i] = 1000 - wins[i, j]
    fit = ratings.fit_elo(wins, games_)
    assert np.all(np.abs(fit.ratings - true) <= 3 * fit.standard_errors + 1e-9)
    assert fit.ratings[0] == 0.0


def test_fit_elo_unbeaten_agents():
    scores = np.array([[0, 5, 10], [5, 0, 10], [0, 0, 0]])  # agent 2 lost every game
    games_ = np.array([[0, 10, 10], [10, 0, 10], [10, 10, 0]])
    fit = ratings.fit_elo(scores, games_)
    assert fit.ratings[2] == -math.inf and fit.ratings[1] == pytest.approx(0.0)
    with_prior = ratings.fit_elo(scores, games_, prior_draws=1.0)
    assert np.all(np.isfinite(with_prior.ratings)) and with_prior.ratings[2] < -200


def test_fit_elo_an_agent_that_won_every_game_is_infinitely_far():
    # Two agents, A won all 10 games: no finite maximum-likelihood gap (not a large finite one).
    scores, games_ = np.array([[0, 10], [0, 0]]), np.array([[0, 10], [10, 0]])
    fit = ratings.fit_elo(scores, games_)
    assert fit.ratings.tolist() == [0.0, -math.inf] and fit.standard_errors[0] == 0.0
    assert math.isnan(fit.standard_errors[1])
    assert ratings.fit_elo(scores, games_, anchor=1).ratings.tolist() == [math.inf, 0.0]
    assert np.all(np.isfinite(ratings.fit_elo(scores, games_, prior_draws=1.0).ratings))


def test_score_matrices_and_table():
    # x-y replayed 10 distinct games 4 times each: they weigh a quarter of their number of games.
    matches = [MatchResult("random", "x", 10, 0, 30, 5, 0, 15, 6.0, 40),
               MatchResult("x", "y", 20, 20, 0, 10, 10, 0, 7.0, 10),
               MatchResult("random", "y", 0, 0, 40, 0, 0, 20, 5.0, 40)]
    scores, games_ = round_robin.score_matrices(["random", "x", "y"], matches)
    np.testing.assert_array_equal(scores, [[0, 10, 0], [30, 0, 7.5], [40, 2.5, 0]])
    np.testing.assert_array_equal(games_, [[0, 40, 40], [40, 0, 10], [40, 10, 0]])
    table = round_robin.RoundRobin(["random", "x", "y"], matches, ratings.fit_elo(scores, games_, prior_draws=1.0))
    text = results.format_table(table)
    assert "random = 0" in text and "anchor" in text
    rows = text.splitlines()[-3:]
    # Best first: y's 40 wins over random outweigh its loss to x, which counts as 10 games.
    assert [row.split()[1] for row in rows] == ["y", "x", "random"]
    assert rows[1].split()[-3:] == ["0.750", "80", "50"]  # x: 30 + 30 of 80 points, 40 + 10 distinct games
    assert json.loads(json.dumps(table.to_dict()))["anchor"] == "random"


# --------------------------------------------------------------------------------------------------------------
# Evaluation during training, and `azjax eval`


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tiny_config):
    """A TINY tic-tac-toe run of 2 iterations that evaluates after each one."""
    path = tmp_path_factory.mktemp("eval_run")
    evaluator = evaluation.make_evaluator(tiny_config, opponents=("random",), num_games=4)
    trainer.train(tiny_config, path, eval_every=1, evaluator=evaluator, progress=False, log=lambda _: None)
    return path


def test_training_logs_evaluations(run_dir):
    records = rundir.read_metrics(run_dir)
    assert [r["iteration"] for r in records] == [1, 2]
    for record in records:
        for name in ("eval/random", "eval/score", "eval/optimal_move_rate", "eval/value_accuracy"):
            assert 0.0 <= record[name] <= 1.0, name
        assert record["eval/score"] == record["eval/random"]  # the mean over the opponents
        assert record["eval_seconds"] > record["positions_seconds"] > 0
    assert (run_dir / "learning_curves.png").is_file()


@pytest.mark.slow  # a timed run; the default suite keeps test_training_logs_evaluations
def test_a_run_that_seconds_stop_scores_its_last_network(run_dir, tiny_config, tmp_path):
    """--seconds ends a run at an iteration no eval_every names: that iteration is evaluated all the same, and
    the log shows the headline figures, not the per-stratum ones."""
    calls, lines = [], []

    def evaluator(key, variables):
        calls.append(key)
        return {"eval/random": 0.75, "eval/optimal_move_rate": 0.5, "eval/optimal_move_rate/begin": 0.25}

    run = shutil.copytree(run_dir, tmp_path / "run")  # resumed after its 2 iterations
    config = dataclasses.replace(tiny_config, num_iterations=1000)
    result = trainer.train(config, run, max_seconds=1e-9, eval_every=100, evaluator=evaluator,
                           progress=False, log=lines.append)
    assert result.stop_reason == "seconds" and len(calls) == 1
    last = rundir.read_metrics(run)[-1]
    assert last["iteration"] == 3 and last["eval/random"] == 0.75
    shown = next(line for line in lines if "evaluation:" in line)
    assert "random 0.750, optimal_move_rate 0.500" in shown and "begin" not in shown


def test_connect_four_evaluation_judges_the_network_per_stratum(tiny_overrides):
    from azjax.solver import connect_four_sets
    from azjax.training import init_run_state

    config = config_lib.with_overrides(presets.get_config("connect_four", "cpu"), tiny_overrides)
    variables = init_run_state(config).train_state.variables
    results = evaluation.make_evaluator(config, opponents=())(jax.random.key(0), variables)
    per_stratum = [results[f"eval/optimal_move_rate/{name}"] for name in connect_four_sets.STRATA]
    assert results["eval/optimal_move_rate"] == pytest.approx(np.mean(per_stratum))  # 1000 positions each
    assert 0.0 <= results["eval/value_accuracy"] <= 1.0
    assert "eval/score" not in results  # no opponents, no matches


def test_connect_four_evaluation_refuses_the_perfect_opponent():
    """The evaluation's games start from the empty board, where the solver takes minutes a move: it would stop
    training after a minute (SolveTimeout), so it is refused up front, saying why."""
    config = presets.get_config("connect_four", "cpu")
    with pytest.raises(ValueError, match="empty board") as error:
        evaluation.make_evaluator(config, opponents=("random", " perfect"))
    assert "eval/optimal_move_rate" in str(error.value) and "--opening-moves 10" in str(error.value)


def test_default_opponents():
    assert evaluation.default_opponents("tic_tac_toe") == ("random", "onestep", "mcts:100", "perfect")
    assert evaluation.default_opponents("connect_four") == ("random", "onestep", "mcts:100")
    # Long games: UCT's rollouts to the end cost seconds a move there.
    for name in ("brandub", "gomoku", "othello"):
        assert evaluation.default_opponents(name) == ("random", "onestep"), name
    assert evaluation.default_opponents("othello6") == ("random", "onestep", "mcts:100")


def test_cli_eval_prints_the_table(capsys, tmp_path):
    path = tmp_path / "results.json"
    # Openings by the perfect player never decide the game (random ones may: X corner, O beside it loses).
    assert cli.main(["eval", "random", "onestep", "perfect", "--games", "20", "--opening-moves", "2",
                     "--opening-agent", "perfect", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "tic_tac_toe: 3 agents, 20 games per pairing (10 in each seat)" in out
    assert "Elo (Bradley-Terry maximum likelihood, random = 0" in out
    elo_rows = out.split("Elo (Bradley-Terry")[1].splitlines()[2:5]
    assert [row.split()[1] for row in elo_rows][-1] == "random"
    data = json.loads(path.read_text())
    assert data["game"] == "tic_tac_toe" and len(data["matches"]) == 3 and data["elo"]["random"]["elo"] == 0.0
    perfect_vs_random = next(m for m in data["matches"] if {m["name_a"], m["name_b"]} == {"random", "perfect"})
    assert perfect_vs_random["losses" if perfect_vs_random["name_a"] == "perfect" else "wins"] == 0


def test_cli_eval_shows_a_match_as_it_plays_on_a_terminal_only(monkeypatch):
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(progress, "MatchProgress", functools.partial(progress.MatchProgress, every=0.0))
    for options, stream, shown in (([], Terminal(), True), (["--no-progress"], Terminal(), False),
                                   ([], io.StringIO(), False)):  # a log: no line, and the match stays cacheable
        monkeypatch.setattr(sys, "stderr", stream)
        assert cli.main(["eval", "random", "onestep", "--games", "4", *options]) == 0
        assert ("random against onestep: " in stream.getvalue()) == shown, (options, stream.getvalue())
        assert ("4 of 4 games finished" in stream.getvalue()) == shown


def test_judging_reports_each_batch_and_the_cli_shows_it_on_a_terminal(monkeypatch):
    import io
    import sys

    from azjax import bots
    from azjax.solver import positions

    labelled = positions.load("tic_tac_toe")
    seen: list[tuple[int, int]] = []
    evaluation.judge_bot(jax.random.key(0), bots.random_bot(), labelled, on_batch=lambda *done: seen.append(done))
    assert seen == [(1024, 4520), (2048, 4520), (3072, 4520), (4096, 4520), (4520, 4520)]

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for options, stream, shown in (([], Terminal(), True), (["--no-progress"], Terminal(), False),
                                   ([], io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        assert cli.main(["eval", "random", "--positions", *options]) == 0
        assert ("random: 4520 of 4520 positions judged" in stream.getvalue()) == shown, stream.getvalue()


def test_cli_eval_judges_agents_on_solved_positions(capsys, tmp_path):
    path = tmp_path / "positions.json"
    assert cli.main(["eval", "random", "perfect", "--positions", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "tic_tac_toe: 2 agent(s) judged on 4520 solved positions." in out
    data = json.loads(path.read_text())["positions"]
    assert data["perfect"]["optimal_move_rate"] == 1.0
    assert 0.3 < data["random"]["optimal_move_rate"] < 0.9
    assert data["random"]["optimal_move_rate_can_err"] < data["random"]["optimal_move_rate"]


def test_cli_eval_trained_agents(capsys, run_dir):
    # The game comes from the run directory.
    assert cli.main(["eval", f"az:{run_dir}:4", f"greedy:{run_dir}", "--games", "4"]) == 0
    out = capsys.readouterr().out
    assert "tic_tac_toe: 2 agents" in out and f"greedy:{run_dir}" in out and f"az:{run_dir}:4" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["eval", "random"], "at least two agents"),
        (["eval", "random", "mcts:x"], "not a whole number"),
        (["eval", "random", "nonsense"], "cannot read agent 'nonsense'"),
        (["eval", "random", "onestep", "--games", "7"], "--games must be even"),
        (["eval", "random", "onestep", "--game", "chess"], "unknown game 'chess'"),
        (["eval", "random", "onestep", "--devices", "64"], "asked for 64, but jax sees 1"),
        (["eval", "random", "onestep", "--devices", "0"], "asked for 0"),
        (["eval", "random", "--game", "othello", "--positions"], "othello has no labelled positions"),
        (["eval", "random", "perfect", "--game", "connect_four", "--opening-moves", "4"], "--opening-moves 10"),
        (["eval", "random", "onestep", "--game", "connect_four", "--opening-agent", "perfect"],
         "--opening-agent random"),
    ],
)
def test_cli_eval_errors(capsys, argv, message):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and err.startswith("azjax eval: error:")


@pytest.mark.slow
def test_default_evaluator(tiny_config):
    """The default evaluator (random, onestep, mcts:100 and perfect) on an untrained network."""
    from azjax.training import init_run_state

    variables = init_run_state(tiny_config).train_state.variables
    results = evaluation.make_evaluator(tiny_config, num_games=8)(jax.random.key(0), variables)
    assert set(results) == {"eval/random", "eval/onestep", "eval/mcts100", "eval/perfect", "eval/score",
                            "eval/optimal_move_rate", "eval/optimal_move_rate_can_err", "eval/value_accuracy",
                            "positions_seconds", "eval_memory_bytes"}
    assert results["eval/perfect"] <= 0.5 and results["eval_memory_bytes"] > 0
