"""Is a trained tic-tac-toe agent perfect? Judged by the exact solver over every reachable position.

    azjax train --out runs/ttt                      # the README's main job
    python experiments/studies/strength/tictactoe_perfect.py runs/ttt

Prints, for the run's latest checkpoint: the share of the 4520 reachable non-terminal positions where the
network's top move (no search) and the move chosen with search are optimal (keep the best outcome the position
allows), and the results of games against a perfect player (random among optimal moves) from either seat.
The bar (issue 3): >= 97% without search, >= 99.5% with search, no loss from either seat.
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import sys
import time

import jax

from azjax import evaluation, solver
from azjax.agent import load_agent

# experiments/, for the shared benchmark module (imported late, where it is used)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a tic-tac-toe run directory (azjax train --out DIR)")
    parser.add_argument("--games", type=int, default=1000, help="games against the perfect player in each seat")
    parser.add_argument("--simulations", type=int, default=None, help="simulations per move (default: the run's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    agent = load_agent(args.run_dir)
    if agent.game.name != "tic_tac_toe":
        parser.error(f"{args.run_dir} is a {agent.game.name} run, not tic_tac_toe")
    solution = solver.solve(agent.game)
    report = evaluation.solver_report(
        jax.random.key(args.seed),
        solution,
        agent.game,
        greedy=functools.partial(agent.act, search=False),
        searcher=functools.partial(agent.act, num_simulations=args.simulations),
        num_games=args.games,
    )
    print(json.dumps(report, indent=2))
    print(f"({time.perf_counter() - start:.1f} s)")
    return report


if __name__ == "__main__":
    from benchmark import run_main

    run_main(main)
