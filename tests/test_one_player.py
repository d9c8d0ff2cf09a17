"""One-player games through the core: the search adds rewards along a line of play (no sign flip), value targets
are returns, the network's [-1, 1] maps onto the game's return bounds, episodes and their exact judge, and a
training iteration and its evaluation on the sliding puzzle."""

from __future__ import annotations

import dataclasses
import functools
import json
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from azjax import core, evaluation, games, perfect, presets, trainer, training
from azjax.config import ConfigError
from azjax.solver import sliding_puzzle as exact


@pytest.fixture(scope="module")
def game():
    return games.make("sliding_puzzle")


def _constant_network(value: float):
    """An 'untrained' network: uniform logits and the same value everywhere (in the network's units)."""
    def apply_fn(variables, observations):
        del variables
        count = observations.shape[0]
        return jnp.zeros((count, 4)), jnp.full((count,), value)
    return apply_fn


def test_returns_and_network_values_map_both_ways():
    values = jnp.linspace(-1.0, 1.0, 9)
    assert games.value_to_return((-1.0, 1.0), values) is values  # the default: no mapping at all
    returns = games.value_to_return((-40.0, 0.0), values)
    np.testing.assert_allclose(returns[np.array([0, 4, 8])], [-40.0, -20.0, 0.0])
    np.testing.assert_allclose(games.return_to_value((-40.0, 0.0), returns), values, atol=1e-6)


def test_the_sqrt_scaling_maps_returns_both_ways_and_spreads_the_small_ones():
    """Game.return_scaling "sqrt": MuZero's h before the linear map, the bounds onto -1 and 1, the maps inverse to
    each other, and small returns of a wide range further from -1 than the linear map puts them."""
    bounds = (0.0, 95_834.0)
    values = jnp.linspace(-1.0, 1.0, 41)
    returns = games.value_to_return(bounds, values, "sqrt")
    np.testing.assert_allclose(returns[np.array([0, 40])], bounds, rtol=1e-5, atol=1e-2)
    assert np.all(np.diff(np.asarray(returns)) > 0)
    np.testing.assert_allclose(games.return_to_value(bounds, returns, "sqrt"), values, atol=2e-5)
    h = lambda x: np.sqrt(x + 1.0) - 1.0 + 1e-3 * x  # noqa: E731  MuZero's h for x >= 0
    np.testing.assert_allclose(games.return_to_value(bounds, jnp.float32(2000.0), "sqrt"),
                               2.0 * h(2000.0) / h(bounds[1]) - 1.0, rtol=1e-5)
    assert float(games.return_to_value(bounds, jnp.float32(2000.0), "sqrt")) > -0.8 > float(
        games.return_to_value(bounds, jnp.float32(2000.0)))
    with pytest.raises(ValueError, match="return_scaling 'log'"):
        dataclasses.replace(games.make("sliding_puzzle"), return_scaling="log")
    with pytest.raises(ValueError, match="linear for a two-player game"):
        dataclasses.replace(games.make("tic_tac_toe"), return_scaling="sqrt")


@pytest.mark.parametrize("board, first_move, fewest", [
    ("1 2 3\n4 5 6\n7 . 8", "right", 1),
    ("1 2 3\n4 5 6\n. 7 8", "right", 2),
    ("1 2 3\n4 . 6\n7 5 8", "down", 2),
])
def test_the_search_finds_the_shortest_solution_without_flipping_signs(game, board, first_move, fewest):
    """With a network that knows nothing (the same value everywhere), only the rewards tell the moves apart: a
    search that flipped the value's sign at every ply, as in a two-player game, would prefer the long way."""
    states = jax.tree.map(lambda x: jnp.stack([x] * 4), game.from_ascii(board))
    search = jax.jit(functools.partial(core.run_search, game=game, apply_fn=_constant_network(0.0),
                                       num_simulations=64, gumbel_scale=0.0))
    searched = search({}, jax.random.key(0), states)
    assert [game.action_to_string(a) for a in np.asarray(searched.action)] == [first_move] * 4
    # The move played has the best value of the visited ones: -1 a move, then solved, less what exploring below it
    # costs (the network's -20 at positions not yet solved); one move from the solution, exactly -1.
    best = np.nanmax(np.asarray(searched.action_values), axis=1)
    np.testing.assert_allclose(searched.action_value, best)
    assert np.all(np.asarray(searched.action_value) <= -fewest + 1e-5)
    if fewest == 1:
        np.testing.assert_allclose(searched.action_value, -1.0)


def test_value_targets_are_the_returns_from_each_position(game):
    """Four moves to the solution (a detour of two, then the two that solve it): targets -4, -3, -2, -1."""
    state = game.from_ascii("1 2 3\n4 5 6\n. 7 8")
    states = jax.tree.map(lambda x: x[None], state)
    rewards, terminated, players = [], [], []
    for action in ("up", "down", "right", "right"):
        states = jax.vmap(game.step)(states, jnp.array([game.string_to_action(action)]))
        rewards.append(states.rewards), terminated.append(states.terminated), players.append(jnp.zeros(1, jnp.int32))
    trajectory = core.Trajectory(
        observation=jnp.zeros((4, 1, 1)), policy_target=jnp.zeros((4, 1, 4)), current_player=jnp.stack(players),
        move_number=jnp.zeros((4, 1), jnp.int32), root_value=jnp.zeros((4, 1)), action_value=jnp.zeros((4, 1)),
        policy_surprise=jnp.zeros((4, 1)), terminated=jnp.stack(terminated), rewards=jnp.stack(rewards),
        resigned=jnp.zeros((4, 1), bool), would_have_resigned=jnp.zeros((4, 1, 2), bool),
        false_positive=jnp.zeros((4, 1, 2), bool))
    assert not bool(terminated[2][0]) and bool(terminated[3][0])
    targets = core.compute_value_targets(trajectory)
    np.testing.assert_allclose(targets.value_target[:, 0], [-4.0, -3.0, -2.0, -1.0])
    assert bool(targets.value_mask.all())


def test_episodes_judged_exactly(game):
    """A perfect agent (the breadth-first distances) solves every start in the fewest moves; the random agent
    seldom solves one; both returns are minus the moves played."""
    distances = exact.distances(3)
    neighbours = jnp.asarray(games.sliding_puzzle.neighbour_table(3))

    def perfect(key, states):
        del key
        boards = states.board
        blank = jnp.argmax(boards == 0, axis=1)
        following = []
        for action in range(4):
            target = neighbours[blank, action]
            moved = jax.vmap(lambda b, z, t: b.at[z].set(b[t]).at[t].set(0))(boards, blank, jnp.maximum(target, 0))
            following.append(jnp.where(target >= 0, _distance(moved), 99))
        return jnp.argmin(jnp.stack(following, axis=1), axis=1).astype(jnp.int32)

    def _distance(boards):
        return jax.pure_callback(lambda b: distances[exact.rank(np.asarray(b))].astype(np.int32),
                                 jax.ShapeDtypeStruct(boards.shape[:1], jnp.int32), boards)

    starts = evaluation.episode_starts(jax.random.key(1), game, 64)
    played = jax.jit(functools.partial(core.play_episodes, game=game, agent=perfect))(jax.random.key(2), starts)
    judged = evaluation.judge_by_yardstick(game, starts, played)
    assert judged == {"solved": 1.0, "solved_optimally": 1.0, "excess_moves": 0.0}
    np.testing.assert_allclose(played.returns, -np.asarray(played.length, np.float32))
    randomly = core.play_episodes(jax.random.key(3), starts, game=game, agent=core.random_agent)
    assert evaluation.judge_by_yardstick(game, starts, randomly)["solved"] < 0.2
    np.testing.assert_allclose(randomly.returns, -np.asarray(randomly.length, np.float32))
    with pytest.raises(ValueError, match="one-player games"):
        core.play_episodes(jax.random.key(0), starts, game=games.make("tic_tac_toe"), agent=core.random_agent)


@pytest.fixture(scope="module")
def tiny():
    config = presets.get_config("sliding_puzzle")
    return dataclasses.replace(
        config, num_iterations=2,
        network=dataclasses.replace(config.network, num_blocks=1, num_channels=8),
        search=dataclasses.replace(config.search, num_simulations=4),
        selfplay=dataclasses.replace(config.selfplay, num_games=8, num_steps=8),
        train=dataclasses.replace(config.train, batch_size=16, num_sgd_steps=2, replay_capacity=512))


def test_a_training_iteration_and_its_evaluation_run_on_the_puzzle(tiny):
    state = training.init_run_state(tiny)
    iteration = jax.jit(training.make_train_iteration(tiny))
    for _ in range(2):
        state, metrics = iteration(state)
    assert bool(metrics["params_finite"])
    scores = evaluation.make_evaluator(tiny, num_games=8, num_simulations=4)(jax.random.key(0),
                                                                            state.train_state.play_variables)
    assert scores["eval/score"] == scores["eval/return"]
    assert -40.0 <= scores["eval/return/random"] <= scores["eval/return"] + 40.0 and 0.0 <= scores["eval/solved"] <= 1
    line = trainer._headline(scores)  # training's evaluation line: the random player's return beside the agent's
    assert "return/random " in line and "return " in line and "solved " in line
    with pytest.raises(ValueError, match="one-player game"):
        evaluation.make_evaluator(tiny, opponents=("onestep",))


def test_settings_a_one_player_game_cannot_take_are_refused(tiny):
    resigning = dataclasses.replace(tiny, selfplay=dataclasses.replace(tiny.selfplay, resign_threshold=-0.9))
    with pytest.raises(ConfigError, match="no opponent to resign to"):
        training.make_components(resigning)
    wdl = dataclasses.replace(tiny, network=dataclasses.replace(tiny.network, value_head="wdl"))
    with pytest.raises(ConfigError, match="value_head scalar"):
        training.make_components(wdl)


def test_azjax_eval_plays_episodes_of_a_one_player_game(tmp_path, capsys):
    from azjax import cli

    out = tmp_path / "eval.json"
    assert cli.main(["eval", "random", "--game", "sliding_puzzle", "--games", "16", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "16 episodes each from the same starts" in printed and "random: mean return" in printed
    judged = json.loads(out.read_text())["agents"]["random"]
    assert -40.0 <= judged["return_low"] <= judged["return"] <= judged["return_high"] <= 0.0  # within return_bounds
    assert 0.0 <= judged["solved_optimally"] <= judged["solved"] <= 1.0
    assert cli.main(["eval", "random", "--game", "sliding_puzzle", "--opening-moves", "2"]) == 2
    assert "no openings" in capsys.readouterr().err


def test_a_person_solves_the_puzzle_alone(game):
    from azjax import play

    typed = iter(["help", "north", "down", "right"])
    shown = []
    state = game.from_ascii("1 2 3\n4 . 6\n7 5 8")
    alone = dataclasses.replace(game, yardstick=dataclasses.replace(game.yardstick, starts=lambda key: state))
    record = play.play_alone(alone, input_fn=lambda prompt: next(typed), output_fn=shown.append)
    assert record.moves == ["down", "right"] and record.outcome == -2.0
    assert any("Legal moves" in line for line in shown) and shown[-1] == "Over after 2 moves: return -2."
    with pytest.raises(ValueError, match="2 players"):
        play.play_alone(games.make("tic_tac_toe"))


# Every command; the default suite keeps the puzzle's training iteration and its evaluation, and azjax eval of its
# episodes.
@pytest.mark.slow
def test_the_commands_run_on_the_puzzle(tmp_path, capsys):
    """train (with its evaluation), eval of the run, export and check, from the command line."""
    from azjax import cli
    from azjax.agent import load_agent

    run, export = tmp_path / "run", tmp_path / "export"
    shrunk = ["--network.num_blocks", "1", "--network.num_channels", "8", "--search.num_simulations", "2",
              "--selfplay.num_games", "4", "--selfplay.num_steps", "4", "--train.batch_size", "8",
              "--train.num_sgd_steps", "1", "--train.replay_capacity", "64"]
    assert cli.main(["train", "--game", "sliding_puzzle", "--out", str(run), "--iterations", "1", "--eval-every",
                     "1", "--eval-games", "4", "--no-progress", "--no-compile-cache", "--devices", "1",
                     *shrunk]) == 0
    record = json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])
    assert -40.0 <= record["eval/return"] <= 0.0 and "eval/solved" in record and "eval/return/random" in record
    assert cli.main(["eval", str(run), "--games", "4", "--no-compile-cache"]) == 0
    assert f"{run}: mean return" in capsys.readouterr().out
    assert cli.main(["export", str(run), str(export)]) == 0
    assert load_agent(export).game.num_players == 1
    assert cli.main(["check", "sliding_puzzle", "--games", "8"]) == 0


def test_the_learning_curves_show_a_puzzles_episodes_not_wins_and_draws():
    from azjax.run_log import learning_curve_panels

    records = [{"iteration": 1, "games_finished": 5, "player0_win_rate": 0.0, "eval/return": -30.0}]
    one, two = (dict(learning_curve_panels(records, num_players=n)) for n in (1, 2))
    assert one["self-play episodes ended"] == ["games_finished"] and "self-play outcomes" not in one
    assert "episode length (moves)" in one and "game length (moves)" in two
    assert two["self-play outcomes"] == ["player0_win_rate", "draw_rate"]
    assert one["evaluation score"] == ["eval/return"]


def test_a_game_of_ones_own_named_like_the_puzzle_gets_no_yardstick_of_the_puzzles():
    assert games.make("sliding_puzzle").yardstick is not None
    own = dataclasses.replace(games.make("tic_tac_toe"), name="sliding_puzzle_mine", num_players=1)  # another state
    assert own.yardstick is None
    assert evaluation.judge_by_yardstick(own, None, None) == {}


def test_a_yardstick_judges_puzzles_only_and_says_solved_alone_without_fewest_moves():
    yardstick = games.make("sliding_puzzle").yardstick
    with pytest.raises(ValueError, match="one player"):
        dataclasses.replace(games.make("tic_tac_toe"), yardstick=yardstick)
    fifteen = games.make("sliding_puzzle", size=4)
    assert fifteen.yardstick.fewest_moves is None
    assert fifteen.yardstick.judge(None, np.array([True, False]), np.array([50, 120])) == {"solved": 0.5}
    eight = games.make("sliding_puzzle").yardstick
    boards = SimpleNamespace(board=np.array([[1, 2, 3, 4, 5, 6, 7, 0, 8], [1, 2, 3, 4, 5, 6, 0, 7, 8]]))
    assert eight.judge(boards, np.array([True, True]), np.array([3, 2])) == {
        "solved": 1.0, "solved_optimally": 0.5, "excess_moves": 1.0}
    assert eight.judge(boards, np.array([False, False]), np.array([40, 40])) == {"solved": 0.0, "solved_optimally": 0.0}
    with pytest.raises(ValueError, match="one count of moves per start"):
        eight.judge(boards, np.array([True]), np.array([1]))


def test_the_perfect_player_refuses_a_puzzle_whose_start_varies_in_one_line(capsys):
    from azjax import cli

    with pytest.raises(ValueError, match="starts from a different position for each key"):
        perfect.perfect_bot(games.make("sliding_puzzle", size=2))
    assert cli.main(["eval", "perfect", "--game", "sliding_puzzle", "--games", "4"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "would play at random from the others" in err, err
