"""UCT benchmark: what a move of the `mcts:N` baseline costs, azjax's tree search against the mctx-based one it
replaced (tests/uct_reference.py), side by side in one run.

For each game and each number of simulations it times one call of each search on --batch positions (after
--opening-moves random moves, the arena's batch: half the games of a 200-game match) and prints milliseconds per
call and microseconds per simulation and position. The two make the same choices by the same rules with other
random numbers (tests/test_bots.py checks it); mctx's backward pass, a while loop under vmap, rewrites its
[B, nodes, actions] arrays at every step, so its simulations cost more as its tree grows.

Times are the median of --repeats calls after a warm-up; run it on a quiet machine, one job at a time.

    python experiments/benchmarks/bench_uct.py  # Connect Four and Othello 6x6, 200-1600
    python experiments/benchmarks/bench_uct.py --games gomoku9 --simulations 400 --repeats 1
    python experiments/benchmarks/bench_uct.py --games brandub --simulations 100 --rollouts
    python experiments/benchmarks/bench_uct.py --simulations 200 --match 200  # the two searches against each other
    python experiments/benchmarks/bench_uct.py --quick                        # tic-tac-toe, 16 and 64: seconds
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import sys
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp

from azjax import arena, bots, games, openings, parallel, uct
from azjax.results import format_match

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
# the first UCT, kept in tests/ as the reference tests/test_bots.py compares azjax.uct against
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests"))
from benchmark import machine_info, median, run_main, timed, write_json
from uct_reference import mctx_uct_analysis

SEARCHES = {"azjax": uct.uct_analysis, "mctx": mctx_uct_analysis}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=["connect_four", "othello6"], help="the games (default: "
                        "connect_four othello6)")
    parser.add_argument("--simulations", nargs="+", type=int, default=[200, 400, 1600])
    parser.add_argument("--batch", type=int, default=100, help="positions per search (default: 100)")
    parser.add_argument("--opening-moves", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3, help="timed calls of each search (default: 3)")
    parser.add_argument("--rollouts", action="store_true", help="also time one random rollout of the positions "
                        "with the rollouts' sampler (one random number a state) and with jax.random.categorical "
                        "(one an action), as they sampled before")
    parser.add_argument("--match", type=int, metavar="GAMES", help="also play the two searches against each other, "
                        "GAMES games (even) per game at the first --simulations, after 4 random moves: the same "
                        "algorithm scores about 0.5")
    parser.add_argument("--quick", action="store_true", help="tic-tac-toe, 16 and 64 simulations, 8 positions")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if args.match is not None and (args.match < 2 or args.match % 2):
        parser.error(f"--match must be even and at least 2 (half the games in each seat), got {args.match}")
    if args.quick:
        args.games, args.simulations, args.batch, args.repeats, args.opening_moves = (
            ["tic_tac_toe"], [16, 64], 8, 1, 2)
    return args


def positions(game: games.Game, batch: int, opening_moves: int):
    key = jax.random.key(0)
    states = jax.vmap(game.init)(jax.random.split(key, batch))
    return openings.play_opening(jax.random.fold_in(key, 1), game, states, jnp.full(batch, opening_moves),
                              opening_moves)


def categorical_sample(key: jax.Array, mask: jax.Array) -> jax.Array:
    """The uniform legal move of `bots.sample_uniform` drawn by `jax.random.categorical` over every entry."""
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


def rollout_times(game: games.Game, states, repeats: int) -> dict[str, float]:
    """Milliseconds per random rollout of `states` to their games' ends (10 rollouts in one jitted loop, the median
    of `repeats` calls), with the rollouts' sampler (`bots.sample_uniform`, one random number a row) and with
    `jax.random.categorical` (one a move)."""
    times = {}
    for label, sampler in (("by_rank", bots.sample_uniform), ("categorical", categorical_sample)):
        def ten(key, states, sampler=sampler):
            roll = functools.partial(uct.rollout_values, game=game, sample=sampler)
            return jax.lax.fori_loop(0, 10, lambda i, total: total + roll(jax.random.fold_in(key, i), states=states)
                                     .sum(), 0.0)
        _, calls = timed(ten, (jax.random.key(2), states), repeats)
        times[label] = 1000 * median(calls) / 10
    return times


def main(argv: Sequence[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.match:  # before jax starts: the match splits its games over the cores, as azjax eval does
        parallel.expose_cpu_cores()
    info = machine_info()
    print(f"# UCT benchmark, {info['date']}; {info['cpu']}, jax {info['jax']} {info['backend']}, commit "
          f"{info['azjax_commit']}")
    print(f"# {args.batch} positions a call after {args.opening_moves} random moves; median of {args.repeats} calls")
    print(f"{'game':<14} {'simulations':>11}  {'azjax ms':>9} {'us/sim':>7}  {'mctx ms':>9} {'us/sim':>7}  "
          f"{'speed-up':>8}")
    rows = []
    for name in args.games:
        game = games.make(name)
        states = positions(game, args.batch, args.opening_moves)
        for simulations in args.simulations:
            row = {"game": name, "simulations": simulations}
            for label, search in SEARCHES.items():
                fn = functools.partial(search, game=game, num_simulations=simulations)
                compile_s, times = timed(lambda s, f=fn: f(jax.random.key(1), s).action, (states,), args.repeats)
                row[label] = {"compile_s": compile_s, "ms": 1000 * median(times),
                              "us_per_simulation": 1e6 * median(times) / (simulations * args.batch)}
            row["speed_up"] = row["mctx"]["ms"] / row["azjax"]["ms"]
            rows.append(row)
            print(f"{name:<14} {simulations:>11}  {row['azjax']['ms']:>9.0f} {row['azjax']['us_per_simulation']:>7.1f}"
                  f"  {row['mctx']['ms']:>9.0f} {row['mctx']['us_per_simulation']:>7.1f}  {row['speed_up']:>7.1f}x",
                  flush=True)
    results = {"machine": info, "batch": args.batch, "opening_moves": args.opening_moves, "rows": rows}
    if args.match:
        results["matches"] = {}
        for name in args.games:
            game, simulations = games.make(name), args.simulations[0]
            ours = uct.uct_bot(game, simulations)
            theirs = bots.Bot(f"mctx-mcts:{simulations}", functools.partial(
                mctx_uct_analysis, game=game, num_simulations=simulations))
            match = arena.play(jax.random.key(0), game, ours, theirs, args.match, opening_moves=4,
                               mesh=parallel.mesh_for(args.match // 2))
            results["matches"][name] = match.to_dict()
            print(f"{name}: {format_match(match)}", flush=True)
    if args.rollouts:
        results["rollouts_ms"] = {}
        for name in args.games:
            game = games.make(name)
            times = rollout_times(game, positions(game, args.batch, args.opening_moves), args.repeats)
            results["rollouts_ms"][name] = times
            print(f"{name}: one rollout of the {args.batch} positions {times['by_rank']:.1f} ms sampling by rank, "
                  f"{times['categorical']:.1f} ms with jax.random.categorical", flush=True)
    write_json(args.json, results)
    return results


if __name__ == "__main__":
    run_main(main)
