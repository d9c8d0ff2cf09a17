"""Evaluation: agents play each other in batches; agents are judged against an exact solver.

An agent here is any function `(key, states [B]) -> actions [B]` (jittable), e.g. `Agent.act` with its options
bound, or `solver.perfect_agent(solution)`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from azjax import solver as solver_lib
from azjax.games import Game, State

AgentFn = Callable[[jax.Array, State], jax.Array]


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
