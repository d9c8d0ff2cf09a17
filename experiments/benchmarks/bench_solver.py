"""How fast is the Connect Four solver? Seconds per position of the shipped labelled sets, per stratum: the exact
score of the position, and a perfect player's move (every move's outcome, then the exact scores of the best
ones). The transposition table is emptied before every position, so each figure is a cold start.

    python experiments/benchmarks/bench_solver.py                    # the first 50 positions of each set
    python experiments/benchmarks/bench_solver.py --per-stratum 200

A last row times the perfect player where it starts to be allowed (`azjax eval ... --opening-moves 10`):
random-play positions of exactly 10 stones (--stones).
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys
import time

import numpy as np

from azjax.solver import connect_four as c4
from azjax.solver import connect_four_sets as sets

# experiments/, for the shared benchmark module (imported late, where it is used)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-stratum", type=int, default=50, help="positions timed per set (default 50)")
    parser.add_argument("--stones", type=int, default=10, help="the last row's positions: random play of this many "
                        "moves (default 10, the perfect player's minimum in azjax eval and play)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the last row's positions (default 0)")
    args = parser.parse_args(argv)
    solver = c4.Solver()
    solver.solve([3, 3, 3, 3, 3, 3, 2])  # compile (or load numba's cache) before timing
    print(f"{platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d')}; cold transposition table, "
          f"first {args.per_stratum} positions of each set")
    print(f"{'stratum':14} {'exact score (s): mean':>22} {'median':>8} {'max':>8}   "
          f"{'perfect move (s): mean':>22} {'median':>8} {'max':>8}")
    rng = np.random.default_rng(args.seed)
    rows = {name: sets.read(sets.DATA_DIR / f"{name}.txt")[0][: args.per_stratum] for name in sets.STRATA}
    rows[f"{args.stones} stones"] = [sets.random_position(rng, args.stones) for _ in range(args.per_stratum)]
    results = {}
    for name, lines in rows.items():
        exact, perfect = [], []
        for line in lines:
            bits = c4.encode_moves(line)
            solver.reset()
            tick = time.perf_counter()
            solver.solve_bits(*bits)
            exact.append(time.perf_counter() - tick)
            solver.reset()
            tick = time.perf_counter()
            solver.best_moves_bits(*bits)
            perfect.append(time.perf_counter() - tick)
        results[name] = {"exact": exact, "perfect": perfect}
        print(f"{name:14} {np.mean(exact):22.4f} {np.median(exact):8.4f} {np.max(exact):8.4f}   "
              f"{np.mean(perfect):22.4f} {np.median(perfect):8.4f} {np.max(perfect):8.4f}", flush=True)
    return results


if __name__ == "__main__":
    from benchmark import run_main

    run_main(main)
