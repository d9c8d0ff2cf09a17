"""How fast is the Connect Four solver? Seconds per position of the shipped labelled sets, per stratum: the exact
score of the position, and a perfect player's move (every move's outcome, then the exact scores of the best
ones). The transposition table is emptied before every position, so each figure is a cold start.

    python experiments/bench_solver.py                    # the first 50 positions of each set
    python experiments/bench_solver.py --per-stratum 200
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from azjax.solver import connect_four as c4, connect_four_sets as sets


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-stratum", type=int, default=50, help="positions timed per set (default 50)")
    args = parser.parse_args(argv)
    solver = c4.Solver()
    solver.solve([3, 3, 3, 3, 3, 3, 2])  # compile (or load numba's cache) before timing
    print(f"{platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d')}; cold transposition table, "
          f"first {args.per_stratum} positions of each set")
    print(f"{'stratum':14} {'exact score (s): mean':>22} {'median':>8} {'max':>8}   "
          f"{'perfect move (s): mean':>22} {'median':>8} {'max':>8}")
    results = {}
    for name in sets.STRATA:
        moves, _, _ = sets.read(sets.DATA_DIR / f"{name}.txt")
        exact, perfect = [], []
        for line in moves[: args.per_stratum]:
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
    main()
