"""Pig, a two-player game with chance: its rules against a plain-Python Pig over many random games with random
rolls, the rolls `step` draws, its exact solution (value iteration) against the published figure and a plain
recursive solver, the checker's chance contracts catching planted bugs, and the search's chance nodes valued
from the side of the player to move."""

from __future__ import annotations

import dataclasses
import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiny import jit_optimised, run_cli

from azjax import agent_specs, arena, evaluation, games, perfect, search
from azjax.config import ConfigError
from azjax.games import pig
from azjax.games.base import chance_game_steps
from azjax.games.checker import GameCheckError, GameCheckWarning
from azjax.solver import pig as exact

GOAL = 20


def _reference_move(scores: list[int], mover: int, total: int, action: int, face: int, goal: int):
    """Plain Python: (scores, mover, turn total, winner or None) after `action` (0 roll, 1 hold) and, for a roll,
    the die's `face`."""
    scores = list(scores)
    if action == pig.HOLD:
        scores[mover] += total
        return scores, 1 - mover, 0, None
    if face == 1:
        return scores, 1 - mover, 0, None
    total += face
    if scores[mover] + total >= goal:
        scores[mover] += total
        return scores, mover, 0, mover
    return scores, mover, total, None


def _play_random(key: jax.Array, game: games.Game, num_games: int, num_moves: int):
    """Random legal moves and uniformly random outcomes (through step_outcome): the states [T + 1, B], actions and
    outcomes [T, B]."""
    init_key, move_key = jax.random.split(key)
    states = jax.vmap(game.init)(jax.random.split(init_key, num_games))

    def body(states, step_key):
        action_key, outcome_key = jax.random.split(step_key)
        noise = jax.random.uniform(action_key, (num_games, 2))
        actions = jnp.argmax(jnp.where(states.legal_action_mask, noise, -1.0), axis=-1).astype(jnp.int32)
        outcomes = jax.random.randint(outcome_key, (num_games,), 0, pig.FACES)
        following = jax.vmap(game.step_outcome)(states, actions, outcomes)
        return following, (states, actions, outcomes)

    last, (states, actions, outcomes) = jax.lax.scan(body, states, jax.random.split(move_key, num_moves))
    return jax.tree.map(lambda xs, x: jnp.concatenate([xs, x[None]]), states, last), actions, outcomes


@pytest.fixture(scope="module")
def game():
    return games.make("pig", goal=GOAL, max_moves=80)


def test_random_games_follow_a_plain_python_pig(game):
    states, actions, outcomes = jax.device_get(
        jit_optimised(functools.partial(_play_random, game=game, num_games=300, num_moves=80))(jax.random.key(0)))
    finished = 0
    for b in range(300):
        scores, mover, total, winner = [0, 0], 0, 0, None
        for t in range(80):
            assert states.scores[t, b].tolist() == scores and int(states.turn_total[t, b]) == total
            assert bool(states.terminated[t, b]) == (winner is not None)
            if winner is not None:
                break
            assert int(states.current_player[t, b]) == mover
            assert states.legal_action_mask[t, b].tolist() == [True, total > 0]
            scores, mover, total, winner = _reference_move(scores, mover, total, int(actions[t, b]),
                                                           int(outcomes[t, b]) + 1, GOAL)
            paid = states.rewards[t + 1, b].tolist()
            assert paid == ([0.0, 0.0] if winner is None else [1.0 if p == winner else -1.0 for p in (0, 1)])
        finished += winner is not None
    assert finished > 250  # random games of Pig to 20 seldom last 80 moves


def test_step_rolls_a_fair_die_from_the_state_s_own_key(game):
    starts = jax.vmap(game.init)(jax.random.split(jax.random.key(1), 6000))
    rolled = jax.jit(jax.vmap(game.step))(starts, jnp.zeros(6000, jnp.int32))
    faces = np.asarray(rolled.last_roll)
    counts = np.bincount(faces, minlength=7)[1:]
    assert counts.sum() == 6000 and np.all(np.abs(counts - 1000) < 5 * np.sqrt(1000 * 5 / 6))
    # The same state rolls the same face (the key is the state's); the key moves on, so the next roll differs.
    again = jax.jit(jax.vmap(game.step))(starts, jnp.zeros(6000, jnp.int32))
    assert np.array_equal(np.asarray(again.last_roll), faces)
    assert not np.array_equal(np.asarray(rolled.chance_key), np.asarray(starts.chance_key))
    # step is step_outcome with the outcome it drew, key included.
    replayed = jax.jit(jax.vmap(game.step_outcome))(starts, jnp.zeros(6000, jnp.int32), jnp.asarray(faces - 1))
    for a, b in zip(jax.tree.leaves(replayed), jax.tree.leaves(rolled), strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_render_and_from_ascii(game):
    state = game.from_ascii("pig to 20, player 1 (O) to move\nX 7  O 12  turn total 5  last roll 3  moves 9")
    assert state.scores.tolist() == [7, 12] and int(state.current_player) == 1 and int(state.turn_total) == 5
    assert game.from_ascii(game.render(state)).scores.tolist() == [7, 12]
    assert "turn total 5" in game.render(state)
    with pytest.raises(ValueError, match="scores below 20"):
        game.from_ascii("pig to 20, player 0 (X) to move\nX 15  O 12  turn total 5")


def _recursive_solution(goal: int, sweeps: int = 400) -> dict:
    """Plain Python value iteration over a dict of positions: P(i, j, k), the mover's chance of winning."""
    value = {(i, j, k): 0.0 for i in range(goal) for j in range(goal) for k in range(goal - i)}
    for _ in range(sweeps):
        for (i, j, k) in value:
            roll = (1.0 - value[(j, i, 0)]) / 6
            roll += sum(1.0 if i + k + r >= goal else value[(i, j, k + r)] for r in range(2, 7)) / 6
            value[(i, j, k)] = max(roll, 1.0 - value[(j, i + k, 0)]) if k > 0 else roll
    return value


def test_the_solution_matches_a_plain_recursive_solver():
    solution = exact.solve(12)
    reference = _recursive_solution(12)
    for (i, j, k), p in reference.items():
        assert solution.win[i, j, k] == pytest.approx(p, abs=1e-9)
    optimal = solution.optimal_actions()
    assert optimal[0, 0, 0].tolist() == [True, False]  # a turn starts with a roll


def test_pig_to_100_gives_the_first_player_the_published_53_06_percent():
    solution = exact.solve(100)
    assert solution.win[0, 0, 0] == pytest.approx(0.5306, abs=5e-5)


def test_the_checker_passes_pig(game):
    report = games.check_game(game, num_games=16)
    assert report.num_moves > 100


def _with_step(game, step):
    return dataclasses.replace(game, step=step)


def _biased_probabilities(state, action):  # a die that rolls a 1 half as often as it should
    fair = pig._chance_outcomes(state, action)
    weights = jnp.where(action == pig.ROLL, jnp.array([0.5, 1, 1, 1, 1, 1]) / 5.5, fair)
    return weights.astype(jnp.float32)


@pytest.mark.parametrize(
    "bug, check",
    [
        (lambda g: dataclasses.replace(g, chance_outcomes=lambda s, a: pig._chance_outcomes(s, a) * 1.2),
         "chance_probabilities"),
        (lambda g: _with_step(g, lambda s, a: g.step(s, a).replace(turn_total=g.step(s, a).turn_total * 2)),
         "chance_step"),
        (lambda g: _with_step(g, chance_game_steps(_biased_probabilities, lambda s, a, c: g.step_outcome(
            s, a, c).replace(chance_key=s.chance_key))[0]), "chance_frequencies"),
    ],
    ids=["probabilities_sum_to_1_2", "step_is_not_step_outcome", "a_biased_die"],
)
def test_the_checker_catches_planted_chance_bugs(game, bug, check):
    with pytest.raises(GameCheckError) as error:  # 256 games: about 2,500 rolls, enough to see the die's bias
        games.check_game(bug(game), num_games=256)
    assert error.value.check == check, str(error.value)


def _paid_after_the_turn_passes(game):
    """A copy of Pig with the classic sign error across the turn change: the turn passes at the winning roll too,
    and the win is paid to the player to move after it (the winner gets -1, the loser +1)."""

    def transition(state, action, outcome):
        after = game.step_outcome(state, action, outcome).replace(chance_key=state.chance_key)
        ended = after.terminated & ~state.terminated
        to_move = jnp.where(ended, 1 - after.current_player, after.current_player)
        paid = jnp.where(jnp.arange(2) == to_move, 1.0, -1.0).astype(after.rewards.dtype)
        return after.replace(current_player=to_move, rewards=jnp.where(ended, paid, after.rewards))

    step, step_outcome = chance_game_steps(pig._chance_outcomes, transition)
    return dataclasses.replace(game, step=step, step_outcome=step_outcome)


def test_the_checker_warns_of_a_sign_error_across_the_turn_change_in_one_line(game):
    with pytest.warns(GameCheckWarning):
        report = games.check_game(_paid_after_the_turn_passes(game), num_games=64)
    assert len(report.warnings) == 1 and "\n" not in report.warnings[0]
    assert "the player who made the final move lost all" in report.warnings[0]
    assert "is the reward's sign flipped" in report.warnings[0]
    assert not games.check_game(game, num_games=64).warnings  # the true game: no warning


def test_a_game_gives_its_chance_functions_with_its_outcomes_or_is_refused(game):
    with pytest.raises(ValueError, match="num_chance_outcomes > 0 together with chance_outcomes and step_outcome"):
        dataclasses.replace(game, step_outcome=None)
    with pytest.raises(ValueError, match="game without gives none"):
        dataclasses.replace(games.make("tic_tac_toe"), num_chance_outcomes=2)


def _exact_network(goal: int):
    """An apply_fn whose value is the exact solution's (for the mover, in [-1, 1]) and whose prior is uniform."""
    win = jnp.asarray(exact.solve(goal).win, jnp.float32)

    def apply_fn(variables, observations):
        del variables
        counts = jnp.sum(observations.reshape(-1, 4, goal), axis=-1).astype(jnp.int32)  # [B, 4]: thermometers
        i, j, k = (jnp.clip(counts[:, n], 0, goal - 1) for n in range(3))
        return jnp.zeros((observations.shape[0], 2)), 2.0 * win[i, j, k] - 1.0

    return apply_fn


def test_the_search_values_each_move_for_the_player_to_move_as_the_exact_solution_does(game):
    """With the exact values as the network, a move expanded once is worth exactly its exact value (the chance
    node's expectation over the die, the sign flipped where the turn passes); with more simulations the search
    plays the optimal move wherever the two moves' values differ clearly."""
    solution = exact.solve(GOAL)
    states, _, _ = jax.device_get(
        jit_optimised(functools.partial(_play_random, game=game, num_games=64, num_moves=12))(jax.random.key(3)))
    roots = jax.tree.map(lambda x: jnp.asarray(x[6]), states)
    live = ~np.asarray(roots.terminated)
    index = exact.position_index(np.minimum(np.asarray(roots.scores), GOAL - 1), np.asarray(roots.current_player),
                                 np.asarray(roots.turn_total) * live)  # finished games' entries are unused
    exact_q = 2.0 * np.stack([solution.roll[index], solution.hold[index]], axis=-1) - 1.0  # [B, 2], NaN: hold at 0
    searches = {}
    for simulations in (1, 2, 32):
        run = jax.jit(functools.partial(search.run_search, game=game, apply_fn=_exact_network(GOAL),
                                        num_simulations=simulations, policy="puct", temperature_moves=0))
        searches[simulations] = jax.device_get(run({}, jax.random.key(4), roots))
    for simulations in (1, 2):  # the root's noisy prior picks the first move: roll at some roots, hold at others
        once = live[:, None] & (searches[simulations].visit_counts == 1)
        assert once[:, 0].sum() > 5 and once[:, 1].sum() > 5
        np.testing.assert_allclose(searches[simulations].action_values[once], exact_q[once], atol=1e-5)
    np.testing.assert_allclose(searches[32].network_value[live], 2.0 * solution.win[index][live] - 1.0, atol=1e-6)
    clear = live & (np.abs(np.nan_to_num(exact_q[:, 0] - exact_q[:, 1], nan=1.0)) > 0.1)
    best = np.argmax(np.nan_to_num(exact_q, nan=-2.0), axis=-1)
    assert clear.sum() > 10 and np.array_equal(searches[32].action[clear], best[clear])


def test_a_chance_game_searches_with_puct_only(game):
    with pytest.raises(ValueError, match="chance events: its search is Stochastic MuZero's"):
        search.run_search({}, jax.random.key(0), jax.vmap(game.init)(jax.random.split(jax.random.key(0), 2)),
                          game=game, apply_fn=_exact_network(GOAL), num_simulations=4, policy="gumbel")


SHRUNK = ["--selfplay.num_games", "8", "--selfplay.num_steps", "16", "--search.num_simulations", "4",
          "--train.batch_size", "8", "--train.num_sgd_steps", "1", "--train.warmup_steps", "1",
          "--train.replay_capacity", "256"]


# Every command, trained at the preset's shapes; the default suite runs the commands on Brandub
# (tests/test_every_game.py) and Pig's search, evaluation and judge in this process.
@pytest.mark.slow
def test_the_commands_run_on_pig(tmp_path):
    """azjax train (its evaluation against random and the optimal player) and eval; onestep refused in one line."""
    run = tmp_path / "run"
    code, out, err = run_cli(["train", "--game", "pig", "--out", run, "--iterations", "1", "--eval-every", "1",
                              "--eval-games", "2", "--no-progress", "--devices", "1", *SHRUNK])
    assert code == 0, err[-3000:]
    metrics = (run / "metrics.jsonl").read_text()
    assert all(f'"eval/{name}"' in metrics for name in ("perfect", "hold20", "random", "optimal_decisions",
                                                         "optimal_decisions_network", "win_probability_lost"))
    code, out, err = run_cli(["eval", run, "perfect", "--games", "2", "--devices", "1"])
    assert code == 0 and "Decisions judged by the exact solution" in out, err[-3000:]
    assert re.search(r"^perfect +optimal 1\.000 of [\d,]+ decisions, chance of winning lost 0\.0000", out, re.M), out
    code, out, err = run_cli(["eval", run, "onestep", "--games", "2", "--devices", "1"])
    assert code != 0 and "would show it the dice" in out + err and "Traceback" not in out + err


def test_a_chance_game_refuses_gumbel_and_tree_reuse():
    from azjax import presets, training
    from azjax.config import with_overrides

    config = presets.get_config("pig")
    assert config.search.policy == "puct"
    for overrides, words in (({"search.policy": "gumbel"}, "set search.policy puct"),
                             ({"search.reuse_tree": True}, "leave search.reuse_tree off")):
        with pytest.raises(ConfigError, match=words):
            training.check_players(with_overrides(config, overrides), config.make_game())


def test_the_game_lengths_study_reports_each_player(load_experiment):
    """experiments/studies/pig/game_lengths.py: every player's games end well within Pig to 20's default limit."""
    with load_experiment("game_lengths") as script:
        found = script.main(["--games", "64", "--goal", str(GOAL), "--limit", "400"])
    assert sorted(found) == ["hold-at-20", "optimal", "random"]
    for row in found.values():
        assert 0 < row["mean"] <= row["max"] <= pig.make_pig(GOAL).max_length and row["over_default_limit"] == 0


@pytest.fixture(scope="module")
def pig100():
    return games.make("pig")


def test_pig_decisions_are_judged_by_the_exact_solution(pig100):
    """pig_decisions against the numpy solution's optimal actions, on positions of random play of Pig to 100."""
    game = pig100
    solution = exact.solve(100)
    states, _, _ = jax.device_get(
        jit_optimised(functools.partial(_play_random, game=game, num_games=64, num_moves=30))(jax.random.key(5)))
    flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), states)
    live = ~np.asarray(flat.terminated)
    flat = jax.tree.map(lambda x: x[live], flat)
    assert len(flat.turn_total) > 500
    tables = perfect.pig_tables(game)
    index = exact.position_index(flat.scores, flat.current_player, flat.turn_total)
    for action in (pig.ROLL, pig.HOLD):
        actions = np.full(len(flat.turn_total), action, np.int32)
        optimal, lost = jax.device_get(jax.jit(perfect.pig_decisions)(jax.tree.map(jnp.asarray, flat), actions,
                                                                     tables))
        legal = np.asarray(flat.legal_action_mask)[:, action]
        want = solution.optimal_actions(tie=1e-6)[index][:, action]
        assert np.array_equal(optimal[legal], want[legal]) and 0 < want[legal].mean() < 1
        best = np.fmax(solution.roll, solution.hold)[index]
        chosen = (solution.roll if action == pig.ROLL else solution.hold)[index]
        np.testing.assert_allclose(lost[legal], np.where(want, 0.0, best - chosen)[legal], atol=1e-6)


def test_the_players_own_games_judged_rank_them(pig100):
    """In their games of Pig to 100 against themselves, the optimal player's decisions are all optimal,
    hold-at-20's and the random player's less so, the random player's the worst."""
    game = pig100
    tables = perfect.pig_tables(game)
    judged = {}
    for spec in ("perfect", "hold:20", "random"):
        bot = agent_specs.make_bot(spec, game)
        judged[spec] = jax.device_get(jax.jit(functools.partial(
            evaluation.pig_decisions_in_own_games, game=game, agent=bot.act, num_games=64, tables=tables))(
            jax.random.key(6)))
    assert all(figures["optimal_decisions/judged"] > 300 for figures in judged.values())
    assert judged["perfect"]["optimal_decisions"] == 1.0 and judged["perfect"]["win_probability_lost"] == 0.0
    assert 0.5 < judged["hold:20"]["optimal_decisions"] < 1.0
    assert judged["random"]["optimal_decisions"] < judged["hold:20"]["optimal_decisions"]
    assert judged["random"]["win_probability_lost"] > judged["hold:20"]["win_probability_lost"] > 0.0


def test_the_optimal_player_beats_hold_at_20(pig100):
    """Pig to 100: the optimal player against hold-at-20 over 2,000 games, both seats."""
    result = arena.play(jax.random.key(7), pig100, perfect.pig_perfect_bot(pig100),
                        agent_specs.make_bot("hold:20", pig100), 2000)
    assert result.score_interval[0] > 0.5, result


def test_hold_is_a_player_of_pig_only(game):
    with pytest.raises(agent_specs.SpecError, match="is a player of pig"):
        agent_specs.make_bot("hold:20", games.make("tic_tac_toe"))
    with pytest.raises(agent_specs.SpecError, match="not a whole number of points"):
        agent_specs.make_bot("hold:x", game)
