"""Training benchmark: one training iteration and its SGD steps, with azjax's convolution gradient and XLA's own.

XLA:CPU runs the gradient of a convolution 10-15x slower inside a loop body than outside one
(https://github.com/jax-ml/jax/issues/12868), and a training iteration runs its SGD steps in a `lax.scan`.
azjax's network therefore differentiates its convolutions with `azjax.networks.conv_with_matmul_grad` on the
CPU. This script times, side by side in one run, for a game's preset:

* `sgd`: the iteration's `lax.scan` of `train.num_sgd_steps` SGD steps (replay sampling with symmetries, loss,
  gradient, Adam), reported as ms per SGD step and positions/s (batch_size per step);
* `iteration`: the whole jitted training iteration (self-play with search, value targets, replay insert, SGD),
  reported in seconds;

for azjax's network (`conv_fn=conv_with_matmul_grad`) and the same network with XLA's gradient
(`conv_fn=jax.lax.conv_general_dilated`), the same variables and the same keys. Compilation happens once per
implementation before timing and is reported apart. Timed calls alternate between the two implementations; the
table shows the median of `--repeats` calls.

    python experiments/benchmarks/bench_train.py  # Connect Four and tic-tac-toe CPU presets
    python experiments/benchmarks/bench_train.py --games connect_four --set network.num_channels=64 --repeats 5
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import pathlib
import statistics
import sys

import jax

from azjax import config as config_lib
from azjax import training

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # experiments/, for the shared benchmark module
from benchmark import Table, machine_info, preset_config, run_main, timed, write_json


def bench_game(config: config_lib.Config, repeats: int) -> list[dict]:
    """Rows for azjax's and XLA's convolution gradient on `config`'s game and preset."""
    ours = training.make_components(config)
    xla = dataclasses.replace(ours, network=ours.network.clone(conv_fn=jax.lax.conv_general_dilated))
    run_state = training.init_run_state(config)
    # Fill the replay buffer with one iteration's positions, so that sampling reads real data.
    run_state, _ = jax.jit(training.make_train_iteration(config, parts=ours))(run_state)
    rows = []
    for label, parts in (("azjax", ours), ("xla-grad", xla)):
        sgd = functools.partial(training.run_sgd_steps, parts=parts, config=config)
        sgd_compile, sgd_times = timed(sgd, (jax.random.key(1), run_state.train_state, run_state.replay), repeats)
        iteration = training.make_train_iteration(config, parts=parts)
        it_compile, it_times = timed(iteration, (run_state,), repeats)
        step_s = statistics.median(sgd_times) / config.train.num_sgd_steps
        rows.append({
            "game": config.game,
            "conv_gradient": label,
            "sgd_ms_per_step": round(step_s * 1000, 2),
            "sgd_positions_per_s": round(config.train.batch_size / step_s),
            "iteration_s": round(statistics.median(it_times), 3),
            "compile_s": round(sgd_compile + it_compile, 1),
            "sgd_times_s": sgd_times,
            "iteration_times_s": it_times,
        })
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=["connect_four", "tic_tac_toe"], help="games (CPU presets)")
    parser.add_argument("--preset", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="config overrides")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per implementation")
    parser.add_argument("--json", type=pathlib.Path, help="also write the results here")
    args = parser.parse_args(argv)

    results = {"machine": machine_info(), "rows": []}
    print(json.dumps(results["machine"]))
    table = Table([("game", "14s"), ("conv gradient", "14s"), ("sgd ms/step", "11.2f"), ("sgd pos/s", "10d"),
                   ("iteration s", "11.3f"), ("compile s", "9.1f")])
    print(table.header())
    for game in args.games:
        rows = bench_game(preset_config(game, args.preset, args.set), args.repeats)
        for row in rows:
            print(table.row(row["game"], row["conv_gradient"], row["sgd_ms_per_step"], row["sgd_positions_per_s"],
                            row["iteration_s"], row["compile_s"]))
        ours, xla = rows
        print(f"{game}: iteration {xla['iteration_s'] / ours['iteration_s']:.2f}x faster with azjax's gradient")
        results["rows"].extend(rows)
    write_json(args.json, results)
    return results


if __name__ == "__main__":
    run_main(main)
