"""Device layout benchmark: one training iteration on one device against the same iteration split over several.

On a CPU, `azjax train` can show jax one device per core (XLA_FLAGS=--xla_force_host_platform_device_count=N) and
split the games and the SGD batch over them, or keep one device, whose convolutions XLA already spreads over the
cores. Which is faster depends on the network and the batch, so this script times both, side by side in one
process, for each game's preset: the whole jitted iteration (self-play with search, value targets, replay, SGD),
the same run state and keys, calls alternating between the layouts, the median of --repeats calls. Compilation
is timed apart. The default layout of `azjax train` (layout.default_layout) follows these figures.

    python experiments/benchmarks/bench_layout.py  # the CPU presets of every catalog game
    python experiments/benchmarks/bench_layout.py --games connect_four --devices 1 2 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

from azjax import parallel

if __name__ == "__main__":
    parallel.expose_cpu_cores()  # before jax starts: one device per core

import jax

from azjax import config as config_lib
from azjax import training

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
from benchmark import Table, machine_info, preset_config, run_main, write_json

GAMES = ("tic_tac_toe", "connect_four", "gomoku9", "othello6", "brandub")


def bench_game(config: config_lib.Config, device_counts: list[int], repeats: int) -> list[dict]:
    """One row per device count: the median iteration seconds and the compile seconds on `config`."""
    compiled, states, compile_s = {}, {}, {}
    for count in device_counts:
        training.check_splits(config, count)
        mesh = parallel.make_mesh(jax.devices()[:count]) if count > 1 else None
        run_state = training.init_run_state(config)
        run_state = training.shard_run_state(run_state, mesh) if mesh is not None else run_state
        start = time.perf_counter()
        compiled[count] = jax.jit(training.make_train_iteration(config, mesh=mesh)).lower(run_state).compile()
        compile_s[count] = time.perf_counter() - start
        run_state, _ = compiled[count](run_state)  # first call: allocations, and a replay holding positions
        states[count] = jax.block_until_ready(run_state)
    times: dict[int, list[float]] = {count: [] for count in device_counts}
    for _ in range(repeats):  # alternate, so that a slow moment of the machine hits every layout alike
        for count in device_counts:
            start = time.perf_counter()
            jax.block_until_ready(compiled[count](states[count]))
            times[count].append(time.perf_counter() - start)
    positions = config.selfplay.num_games * config.selfplay.num_steps
    return [
        {
            "game": config.game,
            "devices": count,
            "iteration_s": round(statistics.median(times[count]), 3),
            "positions_per_s": round(positions / statistics.median(times[count])),
            "compile_s": round(compile_s[count], 1),
            "iteration_times_s": times[count],
        }
        for count in device_counts
    ]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=list(GAMES), help="games (their presets)")
    parser.add_argument("--preset", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--devices", nargs="+", type=int, help="device counts to compare (default: 1 and all)")
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="config overrides")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per layout")
    parser.add_argument("--json", type=pathlib.Path, help="also write the results here")
    args = parser.parse_args(argv)
    device_counts = args.devices or sorted({1, len(jax.devices())})

    results = {"machine": machine_info(), "rows": []}
    print(json.dumps(results["machine"]))
    table = Table([("game", "14s"), ("devices", "7d"), ("iteration s", "11.3f"), ("positions/s", "11d"),
                   ("compile s", "9.1f")])
    print(table.header())
    for game in args.games:
        rows = bench_game(preset_config(game, args.preset, args.set), device_counts, args.repeats)
        for row in rows:
            print(table.row(row["game"], row["devices"], row["iteration_s"], row["positions_per_s"], row["compile_s"]))
        fastest = min(rows, key=lambda row: row["iteration_s"])
        print(f"{game}: fastest on {fastest['devices']} device(s)")
        results["rows"].extend(rows)
    write_json(args.json, results)
    return results


if __name__ == "__main__":
    run_main(main)
