"""Pig judged by its exact solution: a trained run's share of optimal decisions (the network alone and its search)
on positions of optimal play, and its score against the optimal player from both seats.

    azjax train --game pig --seconds 600 --out runs/pig
    python experiments/studies/pig/pig_judge.py runs/pig --positions 2000 --games 400

Positions: every decision of 256 games between two optimal players (the dice drawn by the games' own keys), of
which `--positions` are drawn at random. A decision counts as optimal where its chance of winning is within 1e-9
of the best move's (both moves are optimal at a tie). The match: `--games` games (half in each seat) of the run's
agent with its search against `perfect`, scored +1 a win, 0.5 a draw, 0 a loss, with a 95% interval.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from azjax import arena, load_agent, perfect
from azjax.games import pig
from azjax.network_bots import alphazero_bot, greedy_bot
from azjax.solver import pig as exact

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # experiments/, for the shared benchmark module
from benchmark import results_stem, run_main


def optimal_play_positions(game, key: jax.Array, num_games: int = 256):
    """Every live state of `num_games` games between two optimal players: a batch of states (host arrays)."""
    bot = perfect.pig_perfect_bot(game)

    @jax.jit
    def play(key):
        init_key, move_key = jax.random.split(key)
        states = jax.vmap(game.init)(jax.random.split(init_key, num_games))

        def body(states, step_key):
            actions = bot.act(step_key, states)
            return jax.vmap(game.step)(states, actions), states

        _, visited = jax.lax.scan(body, states, jax.random.split(move_key, game.max_length))
        return visited

    visited = jax.device_get(play(key))
    live = ~np.asarray(visited.terminated).reshape(-1)
    return jax.tree.map(lambda x: np.asarray(x).reshape(-1, *x.shape[2:])[live], visited)


def decision_share(solution, states, bot, key: jax.Array) -> float:
    actions = np.asarray(jax.jit(bot.act)(key, jax.tree.map(jnp.asarray, states)))
    index = exact.position_index(states.scores, states.current_player, states.turn_total)
    return exact.optimal_action_share(solution, index, actions)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a run directory of Pig (azjax train --game pig --out RUN)")
    parser.add_argument("--positions", type=int, default=2000, help="decisions judged (default 2000)")
    parser.add_argument("--games", type=int, default=400, help="games against the optimal player (default 400)")
    parser.add_argument("--simulations", type=int, default=None, help="the search's simulations (default: the run's)")
    parser.add_argument("--out", default=None, help="where to write the record (default: print only)")
    args = parser.parse_args(argv)

    agent = load_agent(args.run)
    game = agent.game
    solution = exact.solve(pig.goal_of(game))
    states = optimal_play_positions(game, jax.random.key(0))
    chosen = np.random.default_rng(0).choice(len(states.turn_total), size=min(args.positions, len(states.turn_total)),
                                             replace=False)
    states = jax.tree.map(lambda x: x[chosen], states)
    search_bot = alphazero_bot(agent, num_simulations=args.simulations)
    shares = {"network": decision_share(solution, states, greedy_bot(agent), jax.random.key(1)),
              "search": decision_share(solution, states, search_bot, jax.random.key(2))}
    result = arena.play(jax.random.key(3), game, search_bot, perfect.pig_perfect_bot(game), args.games)
    record = {
        "run": str(args.run),
        "positions": len(chosen),
        "optimal_decisions": shares,
        "games": result.games,
        "wins_draws_losses": [result.wins, result.draws, result.losses],
        "score_against_perfect": result.score,
        "score_interval_95": list(result.score_interval),
        "first_player_optimum": float(solution.win[0, 0, 0]),
    }
    print(json.dumps(record, indent=2))
    if args.out:
        path = Path(args.out) / f"{results_stem('pig_judge')}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {path}")
    return record


if __name__ == "__main__":
    run_main(main)
