"""Pig judged by its exact solution: a trained run's decisions (its network's top move and its search's move) and
its score against the optimal player from both seats.

    azjax train --game pig --seconds 600 --out runs/pig
    python experiments/studies/pig/pig_judge.py runs/pig                 # 256 own games, 4000 against perfect

Decisions are judged on two sets of positions: every decision of `--own-games` games of the agent (with search)
against itself, the yardstick of training's evaluation (`evaluation.pig_decisions_in_own_games`); and
`--positions` decisions drawn from 256 games between two optimal players. A decision is optimal where its chance
of winning is that of the best move (`perfect.pig_decisions`: both moves at a tie); a wrong one counts by the
chance of winning it loses. The match: `--games` games (half in each seat) of the run's agent with its search
against `perfect`, scored 1 a win, 0.5 a draw, 0 a loss, with a 95% interval.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from azjax import arena, evaluation, load_agent, perfect
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


def decision_share(tables, states, bot, key: jax.Array) -> dict[str, float]:
    """`bot`'s decisions on `states` judged by the exact solution: the share optimal and the mean chance of winning
    lost."""
    states = jax.tree.map(jnp.asarray, states)
    actions = jax.jit(bot.act)(key, states)
    optimal, lost = jax.device_get(jax.jit(perfect.pig_decisions)(states, actions, tables))
    return {"optimal_decisions": float(np.mean(optimal)), "win_probability_lost": float(np.mean(lost))}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", help="a run directory of Pig (azjax train --game pig --out RUN)")
    parser.add_argument("--positions", type=int, default=2000, help="decisions of optimal play judged (default 2000)")
    parser.add_argument("--own-games", type=int, default=256, help="games of the agent against itself whose "
                        "decisions are judged (default 256)")
    parser.add_argument("--games", type=int, default=4000, help="games against the optimal player (default 4000)")
    parser.add_argument("--simulations", type=int, default=None, help="the search's simulations (default: the run's)")
    parser.add_argument("--out", default=None, help="where to write the record (default: print only)")
    args = parser.parse_args(argv)

    agent = load_agent(args.run)
    game = agent.game
    tables = perfect.pig_tables(game)
    solution = exact.solve(pig.goal_of(game))
    states = optimal_play_positions(game, jax.random.key(0))
    chosen = np.random.default_rng(0).choice(len(states.turn_total), size=min(args.positions, len(states.turn_total)),
                                             replace=False)
    states = jax.tree.map(lambda x: x[chosen], states)
    search_bot = alphazero_bot(agent, num_simulations=args.simulations)
    network_bot = greedy_bot(agent)
    own = jax.device_get(jax.jit(functools.partial(
        evaluation.pig_decisions_in_own_games, game=game, agent=search_bot.act, num_games=args.own_games,
        tables=tables, network=network_bot.act))(jax.random.key(4)))
    record = {
        "run": str(args.run),
        "simulations": args.simulations or agent.config.search.num_simulations,
        "own_games": {name: float(value) for name, value in own.items()},
        "optimal_play_positions": len(chosen),
        "on_optimal_play": {"network": decision_share(tables, states, network_bot, jax.random.key(1)),
                            "search": decision_share(tables, states, search_bot, jax.random.key(2))},
        "first_player_optimum": float(solution.win[0, 0, 0]),
    }
    print(json.dumps(record, indent=2), flush=True)
    if args.games:
        result = arena.play(jax.random.key(3), game, search_bot, perfect.pig_perfect_bot(game), args.games)
        record.update({"games": result.games, "wins_draws_losses": [result.wins, result.draws, result.losses],
                       "score_against_perfect": result.score, "score_interval_95": list(result.score_interval)})
        print(f"against perfect: {result.score:.3f} [{result.score_interval[0]:.3f}, {result.score_interval[1]:.3f}]"
              f" over {result.games} games ({result.wins}-{result.draws}-{result.losses})")
    if args.out:
        path = Path(args.out) / f"{results_stem('pig_judge')}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {path}")
    return record


if __name__ == "__main__":
    run_main(main)
