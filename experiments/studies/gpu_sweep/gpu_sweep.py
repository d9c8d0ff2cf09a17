"""Variants of a game's GPU preset, each trained for the same wall time, then set against each other: the measurement
that picks an accelerator's preset, sized to fit one accelerator call (about 9 minutes in all by default).

    python experiments/studies/gpu_sweep/gpu_sweep.py --game connect_four   # every variant, sized to ~9 minutes
    python experiments/studies/gpu_sweep/gpu_sweep.py --game connect_four --variants preset,old,short --minutes 2
    python experiments/studies/gpu_sweep/gpu_sweep.py --game connect_four --set train.learning_rate=3e-3  # all variants
    python experiments/studies/gpu_sweep/gpu_sweep.py --game tic_tac_toe --variants preset,short --minutes 0.1 \\
        --games 4 \\
        --set network.num_blocks=1 network.num_channels=8 selfplay.num_games=16   # a tiny version, e.g. on a CPU

A variant is the preset (--preset, default gpu) with the overrides named in VARIANTS, then --set's (applied to every
variant, so that they can shrink everything). Each trains in a process of its own, one after another, for --minutes
(compilation included, as `azjax train --seconds` counts it):

    azjax train --game G --preset P --seconds S --out RUNS/VARIANT --no-progress --eval-every 0 --iterations 1000000
        --SECTION.FIELD VALUE ...

(--iterations so that the time alone ends every run and spans its learning-rate schedule). Then, in one process
each: where the game has labelled positions (tic-tac-toe, Connect Four), every final agent judged on them, its
network's top move (`greedy:RUN`) and its search's (`RUN`): `azjax eval --positions ... --json`; and a round robin
of the final agents with search (`azjax eval RUN ... --games N --opening-moves K --json`). Both search at the same
simulations, the base preset's (--eval-simulations), so that the networks are set against each other rather than
their searches. Writes experiments/studies/gpu_sweep/results/<game>-<device>-<date>.md and .json (--results-dir):
the device, the versions, each variant's overrides, iterations reached, seconds an iteration, optimal-move rates and
Elo, every command run and its wall time. The per-step times are estimates until a sweep has run on an accelerator: its
JSON records what each step took. After the first run the sweep says what the rest takes at that run's measured pace; on
a CPU it announces no total before then, since a run ends only after a whole iteration of the preset.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import math
import os
import pathlib
import shlex
import statistics
import subprocess
import sys
import time
from typing import Any

import jax

from azjax import config as config_lib
from azjax import presets
from azjax.solver import positions as positions_lib
from azjax.text import counted

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))  # experiments/, for the shared benchmark module
from benchmark import machine_info, note_written, results_stem, run_main

# The candidates per game, as config overrides on the game's GPU preset. "preset" is the preset itself; "old" the GPU
# preset before it took the CPU's lessons (azjax/presets.py), field for field; "short" half the moves an iteration
# (and half the SGD steps: the same samples per played position); "small-net" a smaller network; "more-sims" twice
# the simulations; Connect Four's "value-head" a larger value head.
_OLD_TRAIN = {"train.learning_rate": 2e-3, "train.lr_schedule": "constant", "train.value_target_mix": 0.0,
              "train.policy_surprise_weight": 0.0, "selfplay.keep_unfinished": False, "selfplay.opening_moves": 0}
VARIANTS: dict[str, dict[str, dict[str, Any]]] = {
    "tic_tac_toe": {
        "preset": {},
        "old": {**_OLD_TRAIN, "network.num_blocks": 4, "network.num_channels": 64,
                "network.compute_dtype": "float32", "search.num_simulations": 64, "selfplay.num_games": 2048,
                "selfplay.num_steps": 16, "train.batch_size": 1024, "train.num_sgd_steps": 64,
                "train.learning_rate": 1e-3, "train.replay_capacity": 262_144},
        "short": {"selfplay.num_steps": 8, "train.num_sgd_steps": 32},
        "small-net": {"network.num_blocks": 2, "network.num_channels": 16},
        "more-sims": {"search.num_simulations": 64},
    },
    "connect_four": {
        "preset": {},
        # On one H200 (2026-11-26): about 30 s an iteration;
        # experiments/benchmarks/results/accelerator_suite-gpu-nvidia-h200-2026-11-26.md.
        "old": {**_OLD_TRAIN, "network.num_blocks": 6, "network.num_channels": 128,
                "network.compute_dtype": "bfloat16", "search.num_simulations": 128, "selfplay.num_games": 4096,
                "selfplay.num_steps": 64, "train.batch_size": 2048, "train.num_sgd_steps": 256,
                "train.replay_capacity": 1_048_576},
        "short": {"selfplay.num_steps": 8, "train.num_sgd_steps": 128},
        "small-net": {"network.num_blocks": 4, "network.num_channels": 64},
        "more-sims": {"search.num_simulations": 64},
        # The value head of 4 channels and 256 units that won its matches at 10 CPU-minutes (three seeds, 0.558 of
        # 600 games; experiments/studies/budget_curve/results/connect_four-cpu-2026-11-27.md): unmeasured on an
        # accelerator.
        "value-head": {"network.value_channels": 4, "network.value_hidden": 256},
    },
    "gomoku": {
        "preset": {},
        "old": {**_OLD_TRAIN, "network.num_blocks": 8, "network.num_channels": 96,
                "network.compute_dtype": "bfloat16", "search.num_simulations": 64,
                "search.max_num_considered_actions": 32, "selfplay.num_games": 1024, "selfplay.num_steps": 64,
                "train.batch_size": 2048, "train.num_sgd_steps": 64, "train.replay_capacity": 1_048_576},
        "short": {"selfplay.num_steps": 8, "train.num_sgd_steps": 32},
        "small-net": {"network.num_blocks": 4, "network.num_channels": 64},
        "more-sims": {"search.num_simulations": 64},
    },
    "othello": {
        "preset": {},
        "old": {**_OLD_TRAIN, "network.num_blocks": 6, "network.num_channels": 128,
                "network.compute_dtype": "bfloat16", "search.num_simulations": 64, "selfplay.num_games": 2048,
                "selfplay.num_steps": 64, "train.batch_size": 2048, "train.num_sgd_steps": 128,
                "train.replay_capacity": 1_048_576},
        "short": {"selfplay.num_steps": 8, "train.num_sgd_steps": 64},
        "small-net": {"network.num_blocks": 4, "network.num_channels": 64},
        "more-sims": {"search.num_simulations": 64},
    },
    "brandub": {
        "preset": {},
        "old": {**_OLD_TRAIN, "network.num_blocks": 6, "network.num_channels": 128,
                "network.compute_dtype": "bfloat16", "search.num_simulations": 64,
                "search.max_num_considered_actions": 32, "selfplay.num_games": 1024, "selfplay.num_steps": 64,
                "train.batch_size": 2048, "train.num_sgd_steps": 64, "train.replay_capacity": 524_288},
        "short": {"selfplay.num_steps": 8, "train.num_sgd_steps": 32},
        "small-net": {"network.num_blocks": 4, "network.num_channels": 64},
        "more-sims": {"search.num_simulations": 64},
    },
}

# The wall time the default --minutes aims at, and what the sweep spends beside the training itself. The overheads
# are estimates, not yet measured on an accelerator (each sweep's JSON records its steps' wall times): a training
# process's start, device set-up, last checkpoint and plots; an evaluation process's start; judging one agent on the
# labelled positions and playing one pairing of the round robin, mostly their compilation.
BUDGET_MINUTES = 9.0
RUN_OVERHEAD_MINUTES = 0.4
EVAL_START_MINUTES = 0.25
JUDGE_MINUTES = 0.05
PAIRING_MINUTES = 0.1
MIN_MINUTES = 0.25
# Random moves that open each pair of round-robin games: agents with search but no root noise replay one game per
# seat otherwise.
OPENING_MOVES = {"tic_tac_toe": 2}
DEFAULT_OPENING_MOVES = 4
NO_LIMIT_ITERATIONS = 1_000_000
RUN_TIMEOUT_SLACK_S = 600.0  # a training process still running this long after its --seconds is stopped


def variant_overrides(game: str, name: str, extra: dict[str, str]) -> dict[str, Any]:
    """The overrides of variant `name` of `game`, then `extra` (--set's), which win."""
    return {**VARIANTS[game][name], **extra}


def variant_config(game: str, preset: str, name: str, extra: dict[str, str]) -> config_lib.Config:
    """The validated config that variant `name` trains (raises ConfigError naming the field)."""
    return config_lib.with_overrides(presets.get_config(game, preset), variant_overrides(game, name, extra))


def eval_minutes(num_variants: int, with_positions: bool) -> float:
    """The estimated minutes of the evaluation: its processes, each agent judged, each pairing played."""
    pairings = num_variants * (num_variants - 1) // 2
    judged = 2 * num_variants if with_positions else 0
    starts = (2 if with_positions else 1) if num_variants else 0
    return starts * EVAL_START_MINUTES + judged * JUDGE_MINUTES + (PAIRING_MINUTES * pairings if num_variants > 1
                                                                   else 0.0)


def default_minutes(num_variants: int, with_positions: bool) -> float:
    """The minutes of training per variant that fit BUDGET_MINUTES with the overheads, in quarters of a minute (at
    least MIN_MINUTES)."""
    spare = BUDGET_MINUTES - eval_minutes(num_variants, with_positions) - num_variants * RUN_OVERHEAD_MINUTES
    return max(MIN_MINUTES, math.floor(4 * spare / num_variants) / 4)


def device_platform() -> str:
    """The platform of the device jax gives a process here ("cpu", "gpu", "tpu"; "unknown" where jax fails), asked
    of a process of its own: this one starts no backend before the runs, whose device memory it would share."""
    probe = subprocess.run([sys.executable, "-c", "import jax; print(jax.devices()[0].platform)"],
                           capture_output=True, text=True, check=False,
                           env={**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    lines = probe.stdout.split()
    return lines[-1] if probe.returncode == 0 and lines else "unknown"


def announcement(game: str, preset: str, num_variants: int, minutes: float, with_positions: bool,
                 runs_dir: pathlib.Path, platform: str) -> str:
    """The sweep's first line: what it trains and, with the estimated overheads, how long it takes in all; on a CPU,
    that no total is known until the first run has trained (`first_run_line` says it then)."""
    estimate = num_variants * (minutes + RUN_OVERHEAD_MINUTES) + eval_minutes(num_variants, with_positions)
    head = f"Sweep of {game}'s {preset} preset: {num_variants} variants x {minutes:g} min of training"
    if platform != "cpu":
        return f"{head}, about {estimate:.1f} min in all with the estimated overheads; runs in {runs_dir}."
    sizes = "these sizes are an accelerator's, and " if preset == "gpu" else ""
    return (f"{head}; runs in {runs_dir}. On a CPU: {sizes}a run stops only after a whole iteration (its "
            f"compilation first), which here can take far longer than {minutes:g} min: the {estimate:.1f} min "
            "estimated for an accelerator say nothing here, and the total is known once the first run has trained "
            "(it is printed then).")


def first_run_line(wall_seconds: float, run: dict[str, Any], num_left: int, num_variants: int,
                   with_positions: bool, platform: str) -> str:
    """What the rest of the sweep takes, from the first run as measured: its wall seconds (`run_step`'s) and
    iterations (`read_run`'s), for each of the `num_left` runs after it, then the evaluation's estimate (an
    accelerator's: on a CPU the evaluation takes longer, by how much no figure here says)."""
    seconds, count = run["median_iteration_seconds"], run["iterations"]
    iterations = (f"{counted(count, 'iteration')} of {seconds:.1f} s" if seconds is not None
                  else "no iteration recorded")
    evaluation = eval_minutes(num_variants, with_positions)
    rest = (f"the evaluation, {evaluation:.1f} min estimated for an accelerator and longer on this CPU"
            if platform == "cpu" else f"about {evaluation:.1f} min of evaluation")
    return (f"The first run took {wall_seconds / 60:.1f} min ({iterations}): {counted(num_left, 'more run')} "
            f"as long take about {num_left * wall_seconds / 60:.1f} min, then {rest}.")


def override_arguments(overrides: dict[str, Any]) -> list[str]:
    """`{"search.num_simulations": 64}` as `azjax train`'s arguments: ["--search.num_simulations", "64"]."""
    arguments = []
    for key, value in overrides.items():
        text = "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        arguments += [f"--{key}", text]
    return arguments


def shown(command: list[str]) -> str:
    """The command as a user types it: `azjax ...` for `python -m azjax.cli ...`."""
    if command[:3] == [sys.executable, "-m", "azjax.cli"]:
        command = ["azjax", *command[3:]]
    return shlex.join(command)


def run_step(command: list[str], timeout: float | None = None) -> dict[str, Any]:
    """Runs one command, its output to this process's; its display form, exit code and wall seconds."""
    print(f"\n$ {shown(command)}", flush=True)
    start = time.perf_counter()
    try:
        code = subprocess.run(command, check=False, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        code = None
    return {"command": shown(command), "exit_code": code, "wall_seconds": round(time.perf_counter() - start, 1)}


def read_run(run_dir: pathlib.Path) -> dict[str, Any]:
    """What a run's metrics.jsonl says: iterations reached, median seconds an iteration and positions/s, the last
    loss; whether it left a checkpoint to evaluate."""
    records = []
    metrics = run_dir / "metrics.jsonl"
    if metrics.is_file():
        records = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    trained = [r for r in records if "iteration_seconds" in r]
    checkpoints = run_dir / "checkpoints"
    return {
        "iterations": max((int(r["iteration"]) for r in trained), default=0),
        "median_iteration_seconds": statistics.median(r["iteration_seconds"] for r in trained) if trained else None,
        "median_positions_per_second": (statistics.median(r["positions_per_second"] for r in trained)
                                        if trained else None),
        "last_loss": trained[-1].get("loss") if trained else None,
        "has_checkpoint": checkpoints.is_dir() and any(checkpoints.iterdir()),
    }


def versions() -> dict[str, str]:
    found = {}
    for package in ("jax", "jaxlib", "flax", "optax", "mctx"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def parse_sets(items: list[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals:
            raise SystemExit(f"--set takes SECTION.FIELD=VALUE, got {item!r}")
        pairs[key] = value
    return pairs


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="connect_four", choices=sorted(VARIANTS))
    parser.add_argument("--preset", default="gpu", choices=["cpu", "gpu"], help="the preset the variants override "
                        "(default: gpu)")
    parser.add_argument("--variants", help="comma-separated, of VARIANTS[game] (default: all of them)")
    parser.add_argument("--minutes", type=float, help="training minutes per variant, compilation included (default: "
                        f"what fits {BUDGET_MINUTES:g} minutes in all, by the estimated overheads)")
    parser.add_argument("--set", nargs="+", action="extend", default=[], metavar="SECTION.FIELD=VALUE",
                        help="config overrides applied to every variant, after its own")
    parser.add_argument("--games", type=int, default=200, help="round-robin games per pairing, even (default: 200)")
    parser.add_argument("--opening-moves", type=int, help="random moves opening each pair of round-robin games "
                        f"(default: {DEFAULT_OPENING_MOVES}; tic-tac-toe {OPENING_MOVES['tic_tac_toe']})")
    parser.add_argument("--eval-simulations", type=int, help="simulations of every search judged or played "
                        "(default: the base preset's with --set; 0: each run's own)")
    parser.add_argument("--runs-dir", type=pathlib.Path, help="where the runs go, one directory per variant "
                        "(default: runs/sweep-GAME-DATE-TIME); it must not hold them already")
    parser.add_argument("--results-dir", type=pathlib.Path, default=pathlib.Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    names = args.variants.split(",") if args.variants else list(VARIANTS[args.game])
    unknown = [name for name in names if name not in VARIANTS[args.game]]
    if unknown or not names:
        parser.error(f"--variants: {', '.join(unknown) or 'none given'}; {args.game} has "
                     f"{', '.join(VARIANTS[args.game])}")
    if args.games < 2 or args.games % 2:
        parser.error(f"--games must be even and >= 2, got {args.games}")
    extra = parse_sets(args.set)
    configs = {name: variant_config(args.game, args.preset, name, extra) for name in names}  # errors before any run
    with_positions = positions_lib.has_positions(args.game)
    minutes = args.minutes if args.minutes is not None else default_minutes(len(names), with_positions)
    if not minutes > 0:
        parser.error(f"--minutes must be > 0, got {minutes}")
    base = config_lib.with_overrides(presets.get_config(args.game, args.preset), extra)
    eval_sims = base.search.num_simulations if args.eval_simulations is None else args.eval_simulations
    opening = args.opening_moves if args.opening_moves is not None else OPENING_MOVES.get(args.game,
                                                                                         DEFAULT_OPENING_MOVES)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    runs_dir = args.runs_dir or pathlib.Path("runs") / f"sweep-{args.game}-{stamp}"
    taken = [name for name in names if (runs_dir / name).exists()]
    if taken:  # `azjax train --out` would resume them instead of starting afresh
        parser.error(f"{runs_dir} already holds {', '.join(taken)}: give another --runs-dir")

    platform = device_platform()
    print(announcement(args.game, args.preset, len(names), minutes, with_positions, runs_dir, platform))
    for name, config in configs.items():
        net, play, train = config.network, config.selfplay, config.train
        print(f"  {name:10} {net.num_blocks}x{net.num_channels} {net.compute_dtype}, {config.search.num_simulations} "
              f"sims, {play.num_games} games x {play.num_steps} moves, {train.num_sgd_steps} SGD steps of "
              f"{train.batch_size}, lr {train.learning_rate:g} {train.lr_schedule}; overrides "
              f"{variant_overrides(args.game, name, extra) or 'none'}")
    print(f"Then: {'the labelled positions and ' if with_positions else ''}a round robin of {args.games} games a "
          f"pairing, openings of {opening} moves, searches of {eval_sims or 'their own'} simulations.", flush=True)

    cli = [sys.executable, "-m", "azjax.cli"]
    steps: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for name in names:
        run_dir = runs_dir / name
        command = [*cli, "train", "--game", args.game, "--preset", args.preset, "--seconds", f"{minutes * 60:g}",
                   "--out", str(run_dir), "--no-progress", "--eval-every", "0", "--iterations",
                   str(NO_LIMIT_ITERATIONS), *override_arguments(variant_overrides(args.game, name, extra))]
        note_written(runs_dir)
        step = run_step(command, timeout=minutes * 60 + RUN_TIMEOUT_SLACK_S)
        steps.append(step)
        rows.append({"variant": name, "overrides": VARIANTS[args.game][name], "run_dir": str(run_dir),
                     "config": config_lib.to_dict(configs[name]), **step, **read_run(run_dir)})
        if len(rows) == 1:
            print(first_run_line(step["wall_seconds"], rows[0], len(names) - 1, len(names), with_positions,
                                 platform), flush=True)

    ready = [row for row in rows if row["has_checkpoint"]]
    sims = ["--simulations", str(eval_sims)] if eval_sims else []
    positions_json, round_robin_json = None, None
    if with_positions and ready:
        path = runs_dir / "positions.json"
        specs = [spec for row in ready for spec in (f"greedy:{row['run_dir']}", row["run_dir"])]
        steps.append(run_step([*cli, "eval", "--positions", *specs, "--game", args.game, *sims, "--json",
                               str(path)]))
        positions_json = json.loads(path.read_text()) if path.is_file() else None
    if len(ready) > 1:
        path = runs_dir / "round_robin.json"
        steps.append(run_step([*cli, "eval", *(row["run_dir"] for row in ready), "--game", args.game, "--games",
                               str(args.games), "--opening-moves", str(opening), *sims, "--json", str(path)]))
        round_robin_json = json.loads(path.read_text()) if path.is_file() else None
    for row in rows:
        judged = (positions_json or {}).get("positions", {})
        row["network_optimal_move_rate"] = judged.get(f"greedy:{row['run_dir']}", {}).get("optimal_move_rate")
        row["search_optimal_move_rate"] = judged.get(row["run_dir"], {}).get("optimal_move_rate")
        elo = (round_robin_json or {}).get("elo", {}).get(row["run_dir"])
        row["elo"] = elo["elo"] if elo else None
        row["elo_standard_error"] = elo["standard_error"] if elo else None

    # Only now does this process start jax's backend (for the device's name), never beside a run, whose device
    # memory it would share; and without taking most of that memory, as jax does by default on a GPU.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    device = jax.devices()[0]
    results = {
        "game": args.game, "preset": args.preset, "minutes": minutes, "set": extra, "games_per_pairing": args.games,
        "opening_moves": opening, "eval_simulations": eval_sims or None, "device_kind": device.device_kind,
        "platform": device.platform, "machine": machine_info(), "versions": versions(), "variants": rows,
        "positions": positions_json, "round_robin": round_robin_json, "steps": steps,
    }
    stem = results_stem(args.game)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / f"{stem}.md").write_text(report(results))
    (args.results_dir / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"\n{report(results)}\nWritten: {args.results_dir / (stem + '.md')} and .json")
    return results


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def report(results: dict[str, Any]) -> str:
    """The sweep as markdown: the setting, one row per variant, then every command."""
    info = results["machine"]
    simulations = results["eval_simulations"] or "each run's own"
    anchor = (results["round_robin"] or {}).get("anchor")
    extra = ", ".join(f"{k}={v}" for k, v in results["set"].items()) or "none"
    packages = ", ".join(f"{name} {version}" for name, version in results["versions"].items())
    lines = [
        f"# Sweep of {results['game']}'s {results['preset']} preset: {results['device_kind']} "
        f"({results['platform']}), {info['date'][:10]}",
        "",
        f"{info['date']}; {packages}; azjax {info['azjax']} ({info['azjax_commit']}); host {info['cpu']}.",
        f"Each variant trained {results['minutes']:g} min (compilation included), one after another; --set on "
        f"every variant: {extra}. Judged at {simulations} simulations; the round robin {results['games_per_pairing']} "
        f"games a pairing from openings of {results['opening_moves']} random moves (Elo against the first variant "
        "evaluated, +- 95%). Optimal moves: the share of the labelled positions where the move keeps the "
        "game-theoretic outcome (`azjax eval --positions`).",
        "",
        "| variant | overrides | iterations | s / iteration | positions/s | network optimal | search optimal | Elo |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in results["variants"]:
        overrides = ", ".join(f"{k}={v}" for k, v in row["overrides"].items()) or "(the preset)"
        seconds = row["median_iteration_seconds"]
        rate = row["median_positions_per_second"]
        error = row["elo_standard_error"]
        elo = ("-" if row["elo"] is None else "0 (anchor)" if row["run_dir"] == anchor
               else f"{row['elo']:+.0f} +- {1.96 * error:.0f}" if error is not None and math.isfinite(error)
               else f"{row['elo']:+.0f}")
        failed = "" if row["exit_code"] == 0 else f" (exit {row['exit_code']})"
        lines.append(f"| {row['variant']}{failed} | {overrides} | {row['iterations']} | "
                     f"{'-' if seconds is None else f'{seconds:.2f}'} | {'-' if rate is None else f'{rate:,.0f}'} | "
                     f"{_rate(row['network_optimal_move_rate'])} | {_rate(row['search_optimal_move_rate'])} | {elo} |")
    lines += ["", "Commands, as run (`azjax` is `python -m azjax.cli`), with their wall time:", "", "```"]
    lines += [f"{step['command']}    # {step['wall_seconds']:.0f} s, exit {step['exit_code']}"
              for step in results["steps"]]
    lines += ["```", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    run_main(main)
