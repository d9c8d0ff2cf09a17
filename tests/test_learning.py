"""Does training learn? Judged by the exact tic-tac-toe solver, not by the loss.

The default suite runs a short training and requires a clear gain in the share of positions where the network's
top move is optimal. The slow test runs the README's main job (the default tic-tac-toe preset) and checks issue
3's bar: >= 97% optimal top moves without search, >= 99.5% with search, no loss to a perfect player.
"""

from __future__ import annotations

import functools

import jax
import pytest

from azjax import config as config_lib
from azjax import evaluation, presets, solver, trainer
from azjax.agent import make_agent


@pytest.fixture(scope="module")
def solution():
    from azjax import games

    return solver.solve(games.make("tic_tac_toe"))


def _greedy_rate(agent, solution) -> float:
    return solver.policy_accuracy(solution, lambda s: agent.act(jax.random.key(0), s, search=False))


@pytest.mark.slow  # the default suite keeps a loop that learns tic-tac-toe (tests/test_core.py)
def test_short_training_improves_the_optimal_move_rate(tmp_path, solution):
    config = config_lib.with_overrides(
        presets.get_config("tic_tac_toe"),
        {"num_iterations": 15, "selfplay.num_games": 128, "selfplay.num_steps": 16, "search.num_simulations": 8},
    )
    result = trainer.train(config, tmp_path / "run", progress=False, log=lambda _: None)
    untrained = make_agent(config, trainer.init_run_state(config).train_state.variables)
    trained = make_agent(config, result.run_state.train_state.variables)
    before, after = _greedy_rate(untrained, solution), _greedy_rate(trained, solution)
    assert after > before + 0.1, (before, after)


@pytest.mark.slow
def test_default_run_plays_tic_tac_toe_perfectly(tmp_path, solution):
    config = presets.get_config("tic_tac_toe")
    result = trainer.train(config, tmp_path / "run", progress=False, log=lambda _: None)
    agent = make_agent(config, result.run_state.train_state.variables)
    report = evaluation.solver_report(
        jax.random.key(1),
        solution,
        agent.game,
        greedy=functools.partial(agent.act, search=False),
        searcher=agent.act,
        num_games=500,
    )
    assert report["greedy_accuracy"] >= 0.97, report
    assert report["search_accuracy"] >= 0.995, report
    assert report["losses_as_first"] == 0 and report["losses_as_second"] == 0, report
