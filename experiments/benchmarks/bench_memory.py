"""Memory benchmark: what each game's default run asks of the machine, before and while it runs.

For every game's CPU preset, in a process of its own (so that its peak is its own): the training iteration and
the default evaluation during training (`evaluation.make_evaluator`: 64 games against each default opponent),
compiled ahead, with the memory each compiled program needs by XLA's analysis (`azjax.memory.needed_memory`,
what `azjax train` checks against the machine before running anything), then one iteration and one evaluation
run, with their seconds and the process's peak resident memory (ru_maxrss). A reference row per game: the memory
onestep would need had it stepped every move and every reply at once, as it did before `games.lookahead` (XLA's
analysis of that program, compiled but never run).

    python experiments/benchmarks/bench_memory.py                   # every native game, one after another
    python experiments/benchmarks/bench_memory.py --games brandub --json runs/bench_memory_brandub.json
    python experiments/benchmarks/bench_memory.py --games tic_tac_toe --set network.num_channels=8   # as the test
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

# experiments/, for the shared benchmark module (imported late, where it is used)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

GAMES = ("tic_tac_toe", "connect_four", "gomoku9", "othello6", "othello", "gomoku", "brandub")


def onestep_all_at_once(key, states, *, game):
    """onestep's old program, for its memory alone: every move and every reply stepped at once (B * A * A)."""
    import jax
    import jax.numpy as jnp

    actions = jnp.arange(game.num_actions)
    step_all = jax.vmap(game.step, in_axes=(None, 0))
    children = jax.vmap(step_all, in_axes=(0, None))(states, actions)
    replies = jax.vmap(jax.vmap(step_all, in_axes=(0, None)), in_axes=(0, None))(children, actions)
    mover = states.current_player[:, None, None, None]
    return jnp.any(jnp.take_along_axis(replies.rewards, mover, axis=3)[..., 0] < 0, axis=-1)


def measure(game_name: str, overrides: list[str]) -> dict:
    """One game's row (run in a fresh process: see `main`), on its CPU preset with `overrides` (FIELD=VALUE)."""
    import jax

    from azjax import bots, evaluation, games, memory, training

    from benchmark import preset_config

    config = preset_config(game_name, "cpu", overrides)
    game = games.make(game_name)
    row: dict = {"game": game_name, "actions": game.num_actions, "games": config.selfplay.num_games}

    start = time.perf_counter()
    run_state = training.init_run_state(config)
    compiled = jax.jit(training.make_train_iteration(config), donate_argnums=0).lower(run_state).compile()
    row["iteration_compile_s"] = time.perf_counter() - start
    row["iteration_needs"] = memory.needed_memory(compiled)
    start = time.perf_counter()
    run_state, _ = jax.block_until_ready(compiled(run_state))
    row["iteration_s"] = time.perf_counter() - start

    evaluator = evaluation.make_evaluator(config)
    row["opponents"] = list(evaluation.default_opponents(game))
    start = time.perf_counter()
    results = evaluator(jax.random.key(0), run_state.train_state.play_variables)
    row["evaluation_s"] = time.perf_counter() - start  # its compilation included
    row["evaluation_needs"] = results.get("eval_memory_bytes")
    row["eval_score"] = results.get("eval/score")
    row["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    half = evaluation.EVAL_GAMES // 2  # the batch onestep sees in the evaluation: one state per pair of games
    states = jax.vmap(game.init)(jax.random.split(jax.random.key(1), half))
    bounded = jax.jit(bots.onestep_bot(game).analyse).lower(jax.random.key(0), states).compile()
    old = jax.jit(functools.partial(onestep_all_at_once, game=game)).lower(jax.random.key(0), states).compile()
    row["onestep_needs"] = memory.needed_memory(bounded)
    row["onestep_all_at_once_needs"] = memory.needed_memory(old)
    return row


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=list(GAMES))
    parser.add_argument("--json", help="also write the rows and the machine as JSON")
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="config overrides of every "
                        "preset (the tests shrink them)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure this game here and print its row
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one, args.set)))
        return []

    from azjax.memory import format_size

    from benchmark import Table, machine_info, write_json

    machine = machine_info()
    print(f"machine: {json.dumps(machine)}", flush=True)
    table = Table([("game", "13s"), ("actions", "7d"), ("iteration needs", "15s"), ("iteration s", "11.1f"),
                   ("evaluation needs", "16s"), ("evaluation s", "12.1f"), ("peak RSS", "9s"),
                   ("onestep needs", "13s"), ("all at once", "11s")])
    print(table.header(), flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for game in args.games:
            done = subprocess.run([sys.executable, __file__, "--one", game, "--set", *args.set], capture_output=True,
                                  text=True, cwd=scratch)
            if done.returncode != 0:
                print(f"{game}: failed ({done.stderr.strip().splitlines()[-1] if done.stderr.strip() else '?'})")
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append(row)

            def size(value):
                return "-" if value is None else format_size(value)

            print(table.row(row["game"], row["actions"], size(row["iteration_needs"]), row["iteration_s"],
                            size(row["evaluation_needs"]), row["evaluation_s"], size(row["peak_rss"]),
                            size(row["onestep_needs"]), size(row["onestep_all_at_once_needs"])), flush=True)
    write_json(args.json, {"machine": machine, "rows": rows})
    return rows


if __name__ == "__main__":
    from benchmark import run_main

    run_main(main)
