"""Evaluation: agents play each other in batches; agents are judged against an exact solver; evaluation during
training (`make_evaluator`).

An agent here is any function `(key, states [B]) -> actions [B]` (jittable), e.g. `Agent.act` with its options
bound, `solver.perfect_agent(solution)` or a baseline's `agents.Bot.act`. The arena with confidence intervals, Elo
and round robins is `azjax.arena`; the baseline agents are `azjax.agents`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from azjax import agents as agents_lib, arena, games, solver as solver_lib
from azjax.agent import make_agent
from azjax.arena import random_agent
from azjax.config import Config
from azjax.games import Game, State

AgentFn = Callable[[jax.Array, State], jax.Array]
Evaluator = Callable[[jax.Array, dict], dict[str, float]]

__all__ = [
    "AgentFn",
    "Evaluator",
    "default_opponents",
    "head_to_head",
    "make_evaluator",
    "play_match",
    "random_agent",
    "score",
    "solver_report",
]


def play_match(key: jax.Array, game: Game, first: AgentFn, second: AgentFn, num_games: int) -> jax.Array:
    """Plays `num_games` games in parallel, `first` as player 0 (moving first) and `second` as player 1.

    Returns:
      float32 [num_games, 2]: each game's final rewards per player id (+1 win, -1 loss, 0 draw).
    """
    return _play_match(key, game, first, second, num_games)


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4))
def _play_match(key, game, first, second, num_games):
    init_key, play_key = jax.random.split(key)
    states = jax.vmap(game.init)(jax.random.split(init_key, num_games))

    def body(carry, step_key):
        states, outcome = carry
        key0, key1 = jax.random.split(step_key)
        actions = jnp.where(states.current_player == 0, first(key0, states), second(key1, states))
        # Finished games are absorbing; their (ignored) move is any action.
        actions = jnp.where(states.terminated, 0, actions)
        states = jax.vmap(game.step)(states, actions)
        return (states, outcome + states.rewards), None

    outcome = jnp.zeros((num_games, 2), jnp.float32)
    (_, outcome), _ = jax.lax.scan(body, (states, outcome), jax.random.split(play_key, game.max_length))
    return outcome


def score(outcome: jax.Array, player: int) -> dict[str, float]:
    """Wins, draws and losses of `player` (a player id) over the games of `play_match`."""
    rewards = np.asarray(outcome)[:, player]
    return {"wins": int(np.sum(rewards > 0)), "draws": int(np.sum(rewards == 0)), "losses": int(np.sum(rewards < 0))}


def solver_report(
    key: jax.Array,
    solution: solver_lib.Solution,
    game: Game,
    *,
    greedy: AgentFn,
    searcher: AgentFn,
    num_games: int = 1000,
) -> dict[str, float]:
    """How close an agent is to perfect play, judged by an exact solution of the game.

    Args:
      key: randomness for the games (the perfect player picks uniformly among optimal moves).
      solution: `solver.solve(game)`.
      greedy: the agent without search (e.g. the network's top move).
      searcher: the agent with search.
      num_games: games against the perfect player in each seat.
    Returns:
      greedy_accuracy / search_accuracy: the share of reachable non-terminal positions where the agent's move
        keeps the best outcome the position allows; losses_as_first / losses_as_second: games the searching
        agent lost to the perfect player as player 0 / player 1, with draws_* likewise.
    """
    perfect = solver_lib.perfect_agent(solution)
    first_key, second_key = jax.random.split(key)
    report = {
        "greedy_accuracy": solver_lib.policy_accuracy(solution, lambda s: greedy(key, s)),
        "search_accuracy": solver_lib.policy_accuracy(solution, lambda s: searcher(key, s)),
    }
    as_first = score(play_match(first_key, game, searcher, perfect, num_games), player=0)
    as_second = score(play_match(second_key, game, perfect, searcher, num_games), player=1)
    report.update(
        losses_as_first=as_first["losses"],
        draws_as_first=as_first["draws"],
        losses_as_second=as_second["losses"],
        draws_as_second=as_second["draws"],
    )
    return report


def head_to_head(key: jax.Array, game: Game, agent: AgentFn, opponent: AgentFn, num_games: int) -> dict:
    """`agent` against `opponent`, `num_games` games with each seat; wins/draws/losses from `agent`'s side.

    Returns the counts, `score` (wins + draws / 2 over all games) and the same per seat.
    """
    first_key, second_key = jax.random.split(key)
    as_first = score(play_match(first_key, game, agent, opponent, num_games), player=0)
    as_second = score(play_match(second_key, game, opponent, agent, num_games), player=1)
    total = {k: as_first[k] + as_second[k] for k in as_first}
    result = dict(total, games=2 * num_games, score=(total["wins"] + total["draws"] / 2) / (2 * num_games))
    result["as_first"], result["as_second"] = as_first, as_second
    return result


# --------------------------------------------------------------------------------------------------------------
# Evaluation during training


def default_opponents(game_name: str) -> tuple[str, ...]:
    """The baselines a run of `game_name` is measured against while it trains (agent specs, see
    `agents.make_bot`): random, one-ply tactics and UCT with 100 simulations, plus the perfect player for
    tic-tac-toe."""
    opponents = ("random", "onestep", "mcts:100")
    return opponents + ("perfect",) if game_name == "tic_tac_toe" else opponents


def make_evaluator(
    config: Config,
    *,
    opponents: Sequence[str] | None = None,
    num_games: int = 64,
    num_simulations: int | None = None,
) -> Evaluator:
    """Builds `evaluate(key, variables) -> {"eval/<opponent>": score, ...}` for a run's network.

    The run's agent (its network with its search, `num_simulations` or the run's, no root noise) plays
    `num_games` games (half in each seat) against each opponent; a score is (wins + draws / 2) / games, from the
    agent's side. "eval/score" is the mean over the opponents. For tic-tac-toe the exact solution also gives
    "eval/optimal_move_rate": the share of the 4520 non-terminal positions where the network's top move (no
    search) is optimal. Everything runs as one program, compiled at the first call; later calls (new variables,
    same shapes) reuse it.

    Args:
      config: the run's config.
      opponents: agent specs without run directories (default: `default_opponents(config.game)`).
      num_games: games against each opponent (even).
      num_simulations: the agent's simulations per move (default: the run's).
    """
    game = games.make(config.game)
    specs = tuple(opponents) if opponents is not None else default_opponents(config.game)
    solution = solver_lib.solve(game) if "perfect" in specs or config.game == "tic_tac_toe" else None
    bots = [agents_lib.make_bot(spec, game, solution=solution) for spec in specs]
    names = ["eval/" + spec.replace(":", "") for spec in specs]
    evaluate = jax.jit(
        functools.partial(
            _evaluate,
            config=config,
            game=game,
            bots=tuple(bots),
            names=tuple(names),
            num_games=num_games,
            num_simulations=num_simulations,
            solution=solution,
        )
    )

    def evaluator(key: jax.Array, variables: dict) -> dict[str, float]:
        return {name: float(value) for name, value in jax.device_get(evaluate(key, variables)).items()}

    return evaluator


def _evaluate(
    key: jax.Array,
    variables: dict,
    *,
    config: Config,
    game: Game,
    bots: tuple[agents_lib.Bot, ...],
    names: tuple[str, ...],
    num_games: int,
    num_simulations: int | None,
    solution: solver_lib.Solution | None,
) -> dict[str, jax.Array]:
    agent = make_agent(config, variables)
    player = agents_lib.alphazero_bot(agent, num_simulations=num_simulations)
    results = {}
    for match_key, name, bot in zip(jax.random.split(key, len(bots)), names, bots, strict=True):
        outcome = arena.run_games(match_key, game, player.act, bot.act, num_games).outcome
        results[name] = jnp.mean((outcome + 1.0) / 2.0)
    if results:
        results["eval/score"] = jnp.mean(jnp.stack(list(results.values())))
    if solution is not None:
        positions = np.flatnonzero(~np.asarray(solution.terminal))
        states = jax.tree.map(lambda x: x[positions], solution.states)
        actions = agents_lib.greedy_bot(agent).act(key, states)
        results["eval/optimal_move_rate"] = jnp.mean(solution.optimal_actions[positions, actions])
    return results
