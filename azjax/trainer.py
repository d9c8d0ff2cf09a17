"""The host loop of a training run: `train(config, run_dir)`.

It jits the training iteration once, then only logs (one `device_get` per iteration), checkpoints and reports
progress. A run directory holds `config.json`, `metrics.jsonl` (one JSON record per iteration), TensorBoard event
files under `tensorboard/`, orbax checkpoints under `checkpoints/` and, at the end, `learning_curves.png`.

Stopping is safe: the first Ctrl-C (SIGINT) or SIGTERM lets the current iteration finish, then a checkpoint is
written and `train` returns; calling it again on the same directory resumes bitwise-exactly. A NaN or infinite
loss or parameter stops training at once (`NonFiniteError`) and never reaches a checkpoint.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from azjax import checkpointing, evaluation, memory, networks, parallel, pretrained, rundir
from azjax.config import TIME_BUDGET_ITERATIONS, Config, ConfigError
from azjax.text import counted, figure
from azjax.training import (
    RunState,
    budget_progress,
    init_run_state,
    learning_rate,
    make_train_iteration,
    shard_run_state,
    split_batches,
)

if TYPE_CHECKING:
    from tqdm import tqdm

_clock = time.perf_counter  # the loop's clock for --seconds and the logged times (tests substitute a fake one)


@dataclasses.dataclass
class TrainResult:
    """What `train` returns: the final run state and the metrics records of this session."""

    run_state: RunState
    history: list[dict]
    resumed_from: int | None  # the iteration the run resumed from, or None for a fresh run
    stop_reason: str  # "iterations" (all done), "seconds" (max_seconds), "interrupted" (SIGINT / SIGTERM) or
    # "perfect" (an evaluation found perfect play: `plays_perfectly`)
    last_checkpoint: int | None = None  # the iteration of the newest checkpoint when training stopped


class NonFiniteError(RuntimeError):
    """Training produced a NaN or infinite loss or parameter; the message names the iteration and the metric."""

    def __init__(self, message: str, *, iteration: int, problems: list[str], last_checkpoint: int | None):
        super().__init__(message)
        self.iteration = iteration
        self.problems = problems
        self.last_checkpoint = last_checkpoint


def train(
    config: Config,
    run_dir: str | Path,
    *,
    max_seconds: float | None = None,
    checkpoint_every: int = 10,
    keep_checkpoints: int = 3,
    best_metric: str | None = checkpointing.DEFAULT_BEST_METRIC,
    eval_every: int = 0,
    evaluator: Callable[[jax.Array, dict], dict[str, float]] | None = None,
    eval_games: int = evaluation.EVAL_GAMES,
    eval_opponents: tuple[str, ...] | None = None,
    progress: bool = True,
    num_devices: int | None = None,
    init_from: str | Path | None = None,
    stop_when_perfect: bool = True,
    log: Callable[[str], None] = print,
    network=None,
) -> TrainResult:
    """Trains until `config.num_iterations` iterations in total, or `max_seconds` of this session, are spent.

    `max_seconds` is None (no time limit) or a finite number of seconds > 0. A scheduled learning rate
    (`train.lr_schedule`) spans the run's budget: its iterations, or, with `max_seconds`, what remained of its
    schedule when this session began spread over `max_seconds`, whichever runs out first; the share of the budget
    spent is saved in the run state (`time_progress`).

    If `run_dir` already holds a checkpoint, the run resumes from it: its game and seed, and every setting that
    shapes the checkpoint's arrays (the network's architecture, the number of games, the replay capacity and what
    the replay records, the optimizer; `checkpointing.compare_configs`), must match `config` (CheckpointError
    otherwise); other settings may change and are logged. A run resumed with the same config reproduces an
    uninterrupted one bitwise. `config.json` is written when training proceeds, not when the run has already
    trained `config.num_iterations`.

    The loop checkpoints every `checkpoint_every` iterations, whenever an iteration's record sets a new high of
    `best_metric` (an evaluation metric such as "eval/score"), and when it stops; it keeps the last
    `keep_checkpoints` checkpoints and the best. The first SIGINT or SIGTERM stops it after the current iteration
    (stop_reason "interrupted"); a second one stops at once. It writes the learning-curve plot when it stops.

    Every `eval_every` iterations (0 = never), and after the last iteration of a run that `max_seconds` stops (so
    that its final network is scored), the current network plays fixed baselines: `evaluator(key, variables)`
    (default `evaluation.make_evaluator(config)` with `eval_games` games (even) against each of `eval_opponents`,
    else `evaluation.default_opponents`: random, one-ply, UCT-100 for games shorter than 100 moves and, for
    tic-tac-toe, the perfect player; its games split over the run's devices; for games with labelled positions,
    also the network's optimal-move rate and value accuracy on them) returns "eval/..." figures, which go into
    that iteration's record (and so the metrics log, TensorBoard, the plot and the choice of the best
    checkpoint), with "eval_seconds". The variables it gets are replicated over the run's devices.

    An evaluation never costs training: before the first one of this process the run is checkpointed, and an
    evaluation that fails (one whose program would not fit in memory, `memory.MemoryBudgetError`, or any other
    error) is reported in one line, after which training goes on without evaluations.

    Data parallelism: the games and the SGD batch are split over `num_devices` of `jax.devices()` (None:
    `default_layout(config)`, logged with its reason: as many as divide both `selfplay.num_games` and
    `train.batch_size`, but one CPU device where the network is too small for the split to pay); the network is
    replicated and XLA adds the gradient all-reduce. On a CPU, jax shows one device unless
    XLA_FLAGS=--xla_force_host_platform_device_count=N is set before jax starts (`azjax train` sets it to the
    number of cores). The device count changes float rounding, not the algorithm: a resumed run reproduces an
    uninterrupted one bitwise when both use the same count.

    Several processes (`parallel.initialize_distributed`, e.g. `azjax train --coordinator-address ...`): every
    process calls `train` alike; the mesh spans all their devices (`num_devices`: all of them by default), each
    process plays its devices' share of the games, and process 0 alone logs and writes the run directory's files
    (checkpoints: every process its shards, through orbax). The evaluation's games are split over them too. All
    follow process 0's clock (the schedule over `max_seconds`, when to stop) and stop together when any of them
    is asked to (SIGINT, SIGTERM).

    Raises:
      NonFiniteError: an iteration's loss, another metric or the parameters were NaN or infinite; nothing of that
        iteration or later is saved.
      checkpointing.CheckpointError: `run_dir` is a file, or holds an incompatible or damaged checkpoint.
      ConfigError: `max_seconds` is not a finite number > 0, or `num_devices` is more than there are, or does not
        divide the games and the SGD batch.

    With `stop_when_perfect`, a run stops after an evaluation that finds perfect play (`plays_perfectly`: on a
    solved game, the optimal move in every labelled position and no loss to the perfect player), with stop_reason
    "perfect" and a line that says so: more training cannot improve it.

    `init_from` (a run directory, an export or "pretrained:GAME") starts a new run from that network's weights
    (its params and batch-norm statistics; the optimizer, replay and games start fresh, as does the schedule);
    `warm_start_config` fits a config to the source (its network shape, a longer warm-up), as `azjax train` does.
    CheckpointError if `run_dir` already holds a run, if the source is of another game, or if any of its arrays
    has another shape than `config`'s network (the message names the first and the settings to change).

    `network` is any Flax module with the network contract (`azjax.networks`), e.g. `MLP(num_actions=9)`; by
    default the config's (`networks.network_of`: the ResNet, or `config.network.module`'s, which the run records
    so that later commands build it again). A module given here is not recorded: pass it again to resume the run
    and to `load_agent(run_dir, network=...)`. It is checked against the contract before anything runs
    (`networks.NetworkError`, naming the output that is wrong).
    """
    config.validate()
    game = config.make_game()
    checked = network if network is not None else networks.network_of(config, game)
    networks.check_network(checked, game, reply_policy=config.train.reply_policy_weight > 0,
                           name=config.network.module or None)
    if max_seconds is not None and not (math.isfinite(max_seconds) and max_seconds > 0):
        raise ConfigError(f"max_seconds must be a finite number of seconds > 0 (or None: no limit), got {max_seconds}")
    primary = parallel.is_primary()  # over several processes, process 0 alone writes files and talks
    if not primary:
        log, progress = (lambda _: None), False
    if jax.process_count() > 1:  # every process's devices take part: the mesh spans them all
        devices = run_devices(config, num_devices or len(jax.devices()))
        log(f"Devices: {len(devices)} {devices[0].platform} devices over {jax.process_count()} processes.")
    elif num_devices is None:
        devices, reason = default_layout(config, own_network=network is not None)
        log(f"Devices: {reason}.")
    else:
        devices = run_devices(config, num_devices)
    run_dir = Path(run_dir)
    checkpoints = checkpointing.CheckpointManager(run_dir, keep=keep_checkpoints, best_metric=best_metric)
    resumed_from, config = _check_run_dir(run_dir, config, checkpoints, log)
    if init_from is not None and resumed_from is not None:
        raise checkpointing.CheckpointError(
            f"--init-from starts a new run, but {run_dir} holds one (iteration {resumed_from}): pass a new --out, "
            "or resume it without --init-from"
        )
    console = _Console(log)  # every line of the loop goes through it, beside the progress bar once one shows
    with _StopSignals(console.write) as stop:  # until train returns, SIGINT / SIGTERM ask to stop between iterations
        if resumed_from is not None:
            run_state = checkpoints.restore(config, network=network)
        else:
            weights = None if init_from is None else warm_start_weights(config, init_from, log, network=network)
            run_state = init_run_state(config, network=network)
            if weights is not None:  # the optimizer's state does not depend on the weights' values
                run_state = run_state.replace(train_state=run_state.train_state.with_variables(weights))
        start_iteration = int(run_state.iteration)
        if resumed_from is not None and start_iteration < config.num_iterations:
            until = ("until its time is spent" if config.num_iterations >= TIME_BUDGET_ITERATIONS
                     else f"training to {config.num_iterations}")  # a run that --seconds alone ends counts none
            log(f"Resuming {run_dir} from iteration {resumed_from} ({until}).")
        # Where the schedule stands, when that means something: not for fewer iterations than already trained.
        if resumed_from is not None and config.train.lr_schedule == "cosine" and (
                start_iteration <= config.num_iterations):
            log(_schedule_note(config, run_state))
        if start_iteration >= config.num_iterations:  # nothing to do: the run directory stays as it is
            log(f"{run_dir} has already trained {counted(start_iteration, 'iteration')}; pass more --iterations to "
                "go on.")
            return TrainResult(run_state, [], resumed_from, "iterations", checkpoints.latest_step())
        mesh = parallel.make_mesh(devices) if len(devices) > 1 else None
        if mesh is not None:
            run_state = shard_run_state(run_state, mesh)
            log(f"Data parallel over {len(devices)} devices ({devices[0].platform}).")
        if primary:
            rundir.write_config(run_dir, config)
            rundir.truncate_metrics(run_dir, start_iteration)  # iterations after the checkpoint are redone

        start = _clock()  # the session's clock (--seconds, the records' "time") counts the compilation too
        with stop.holding():
            iteration_fn = _compile_iteration(config, run_state, mesh, devices, console.write, network)
        positions_per_iteration = config.selfplay.positions_per_iteration
        history: list[dict] = []
        writer = _tensorboard_writer(run_dir, purge_step=start_iteration + 1) if primary else None
        if progress:
            console.show_bar(start_iteration, config.num_iterations)
        # The budget already spent, by iterations or time: the rest of it is spread over this session's seconds.
        time_start = float(budget_progress(run_state, config.num_iterations))
        stop_reason = "iterations"
        evaluating, evaluated, saved_before_evaluation = eval_every > 0, False, None
        try:
            for iteration in range(start_iteration + 1, config.num_iterations + 1):
                elapsed, interrupted = _agreed_progress(start, stop)
                if interrupted:  # checked between iterations: a donated, jitted iteration is never cut short
                    stop_reason = "interrupted"
                    break
                if max_seconds is not None:  # the schedule spans what remained of it when this session began
                    spent = min(elapsed / max_seconds, 1.0)
                    time_progress = np.float32(time_start + (1.0 - time_start) * spent)
                    run_state = run_state.replace(
                        time_progress=parallel.put(time_progress, run_state.time_progress.sharding))
                tick = _clock()
                run_state, metrics = iteration_fn(run_state)
                metrics = {name: float(value) for name, value in jax.device_get(metrics).items()}
                seconds = _clock() - tick
                _check_finite(metrics, iteration, run_dir, config, checkpoints)
                record = {
                    "iteration": iteration,
                    "time": round(_clock() - start, 3),
                    "iteration_seconds": round(seconds, 4),
                    "positions_per_second": positions_per_iteration / seconds,
                    "simulations_per_second": positions_per_iteration * config.search.num_simulations / seconds,
                    **metrics,
                }
                out_of_time = max_seconds is not None and _agreed_progress(start, stop)[0] >= max_seconds
                if evaluating and (iteration % eval_every == 0 or out_of_time):  # the last network is scored
                    if not evaluated:  # its first run in this process: the training is saved before it
                        saved_before_evaluation = _save_once(checkpoints, run_state, config, record)
                    try:
                        evaluator = evaluator or evaluation.make_evaluator(
                            config, mesh=mesh, num_games=eval_games, opponents=eval_opponents, network=network)
                        record.update(_evaluate(evaluator, config, iteration, run_state, console.write))
                        evaluated = True
                    except Exception as error:  # noqa: BLE001 - whatever fails in the evaluation, training goes on
                        evaluating = False
                        console.write(_evaluation_failed(error, iteration, checkpoints.latest_step()))
                if record.get("sgd_steps", 1) == 0 and (not history or history[-1].get("sgd_steps", 1) > 0):
                    console.write(_no_sgd_note(record, config))
                history.append(record)
                if primary:
                    _log_record(run_dir, writer, record)
                console.advance(_summary(record))
                # Evaluation metrics ("eval/...") belong in `record` by here, so that a new best is saved at once.
                if iteration % checkpoint_every == 0 or checkpoints.is_new_best(record):
                    checkpoints.save(run_state, config, record, replace=saved_before_evaluation == iteration)
                if out_of_time:
                    stop_reason = "seconds"
                    break
                if plays_perfectly(record):  # said at the last iteration too, where there is nothing left to stop
                    stops = stop_when_perfect and iteration < config.num_iterations
                    console.write(f"iteration {iteration}: the network plays perfectly (its top move is optimal in "
                                  "every labelled position and it never lost to the perfect player)"
                                  + (", so training stops here." if stops else "."))
                    if stops:
                        stop_reason = "perfect"
                        break
        finally:
            console.close_bar()
            if writer is not None:
                writer.close()
        if int(run_state.iteration) > (checkpoints.latest_step() or 0):
            checkpoints.save(run_state, config, history[-1] if history else None)
    if primary:
        _plot(run_dir)
    return TrainResult(run_state, history, resumed_from, stop_reason, checkpoints.latest_step())


# Splitting a CPU run over one jax device per core pays only when each batched network evaluation is large:
# XLA already spreads one device's convolutions over the cores. experiments/bench_layout.py, 2-core CPU,
# 2026-11-24 (experiments/results/bench_layout_cpu.txt): tic-tac-toe's preset (26M multiply-adds per evaluation)
# ran 2.0x faster on one device; Connect Four (248M), Othello 6x6 (212M), Brandub (202M) and Gomoku 9x9 (478M)
# 1.08-1.33x faster on two.
CPU_SPLIT_MIN_MACS = 100e6


def evaluation_macs(config: Config, board_cells: int) -> float:
    """Multiply-adds of the network's 3x3 convolutions in one evaluation of all `selfplay.num_games` positions
    (the stem and two per residual block; the heads are small beside them), on a board of `board_cells` cells."""
    net = config.network
    return config.selfplay.num_games * board_cells * 9 * net.num_channels**2 * (2 * net.num_blocks + 1)


def default_layout(config: Config, devices: list[jax.Device] | None = None, *,
                   own_network: bool = False) -> tuple[list[jax.Device], str]:
    """The devices a run uses when none are asked for, and why: of `devices` (default `jax.devices()`), as many
    as divide the batches evenly; on a CPU, one device when the network's evaluations are too small to gain from
    the split (below CPU_SPLIT_MIN_MACS multiply-adds, measured by experiments/bench_layout.py), and for a network
    of one's own (`config.network.module`, or `own_network`: one given to `train`), whose cost the rule does not
    know."""
    chosen = parallel.most_devices(*split_batches(config).values(), devices=devices)
    platform = chosen[0].platform
    if len(chosen) == 1:
        return chosen, f"one {platform} device"
    if platform != "cpu":
        return chosen, f"{len(chosen)} {platform} devices, the games and the SGD batch split over them"
    if own_network or config.network.module:
        return chosen[:1], ("one CPU device: XLA spreads one device's work over the cores, and the rule that splits "
                            "a CPU run knows the ResNet's cost, not your network's; --devices N splits it")

    cells = math.prod(config.make_game().observation_shape[:-1])
    macs = evaluation_macs(config, cells)
    if macs < CPU_SPLIT_MIN_MACS:
        return chosen[:1], (
            f"one CPU device: a network evaluation of the {config.selfplay.num_games} games is "
            f"{macs / 1e6:.0f}M multiply-adds, below the {CPU_SPLIT_MIN_MACS / 1e6:.0f}M at which splitting over "
            "the cores pays (XLA spreads one device's convolutions over them); --devices overrides"
        )
    return chosen, (
        f"{len(chosen)} CPU devices (one per core): a network evaluation of the {config.selfplay.num_games} games is "
        f"{macs / 1e6:.0f}M multiply-adds, enough for the split to pay; --devices overrides"
    )


def run_devices(config: Config, num_devices: int | None = None) -> list[jax.Device]:
    """The devices a run uses: `num_devices` of `jax.devices()`, or (None) `default_layout(config)`'s.

    Raises:
      ConfigError: `num_devices` is < 1, more than there are, or does not divide `selfplay.num_games` and
        `train.batch_size`.
    """
    if num_devices is None:
        return default_layout(config)[0]
    try:
        return parallel.choose_devices(num_devices, split_batches(config))
    except ValueError as error:
        raise ConfigError(str(error)) from None


def plays_perfectly(record: dict) -> bool:
    """Whether an iteration's record shows perfect play: an evaluation with the network's top move optimal in every
    labelled position ("eval/optimal_move_rate" 1) and no loss to the perfect player ("eval/perfect" 0.5: it
    cannot win, so a score of a half is all draws). Only games with both (tic-tac-toe's default evaluation)."""
    return record.get("eval/optimal_move_rate") == 1.0 and record.get("eval/perfect", 0.0) >= 0.5


def warm_start_config(config: Config, source: Config, keep: frozenset[str] = frozenset()) -> tuple[Config, list[str]]:
    """The settings a new run that starts from `source`'s network (`train(init_from=...)`) should train with, and a
    line for each change; fields named in `keep` ("network.num_channels", ...: those a user set) stay as they are.
    `azjax train --init-from` applies this to the preset with the command line's options.

    - The network's shape is the source's (blocks, channels, heads), its precision (`compute_dtype`) `config`'s: the
      weights fit without a --network option.
    - The learning rate warms up until the replay buffer first fills (`replay_capacity` / (num_games x num_steps)
      iterations of `num_sgd_steps`), not over `warmup_steps` only: a fresh replay holds one iteration's positions,
      and the preset's peak rate on them undoes a trained network at once (Connect Four's shipped agent: 95.4% optimal
      moves, 92.5% after one iteration at the preset's 100 steps of warm-up, 95.2% with 2,000).
    - The observation version is the source's (`observation_version`): the network reads the planes it learnt on.
    Nothing changes for a source of another game (`warm_start_weights` refuses it).
    """
    if source.game != config.game:
        return config, []
    changes = []
    if "observation_version" not in keep and source.observation_version != config.observation_version:
        version = checkpointing.observation_version(source)
        if version != checkpointing.observation_version(config):
            changes.append(f"observation_version={version} (the source's input planes)")
        config = dataclasses.replace(config, observation_version=version)
    network = dataclasses.replace(source.network, **{
        field.name: getattr(config.network, field.name) for field in dataclasses.fields(config.network)
        if field.name == "compute_dtype" or f"network.{field.name}" in keep})
    if network != config.network:
        changes.append(f"the source's network ({network.num_blocks} blocks x {network.num_channels} channels)")
    fill_iterations = math.ceil(config.train.replay_capacity / config.selfplay.positions_per_iteration)
    fill = fill_iterations * config.train.num_sgd_steps
    train = config.train
    if "train.warmup_steps" not in keep and fill > train.warmup_steps:
        changes.append(f"train.warmup_steps={fill} (the learning rate warms up until the replay buffer first fills)")
        train = dataclasses.replace(train, warmup_steps=fill)
    return dataclasses.replace(config, network=network, train=train), changes


def warm_start_weights(config: Config, source: str | Path, log: Callable[[str], None] = print, *,
                       network=None) -> dict:
    """The network weights ({"params", "batch_stats"}) of `source` (a run directory, an export or "pretrained:GAME"),
    checked to fit `config`'s network before anything is built (`train(init_from=...)` starts from them).

    Raises:
      CheckpointError: the source cannot be loaded, is of another game, or one of its arrays has another shape
        than `config`'s network (the message names the first and what to change).
    """
    saved, variables = checkpointing.restore_model(source)
    if saved.game != config.game:
        raise checkpointing.CheckpointError(
            f"--init-from {source}: it was trained on {saved.game}, and this run plays {config.game}; start from a "
            f"network of {config.game}, or pass --game {saved.game}"
        )
    template = pretrained.model_template(config, network)
    mismatch = pretrained.first_mismatch(template, variables)
    if mismatch is not None:
        changed = [(f"network.{field.name}", getattr(saved.network, field.name), getattr(config.network, field.name))
                   for field in dataclasses.fields(saved.network)
                   if getattr(saved.network, field.name) != getattr(config.network, field.name)]
        there, here = checkpointing.observation_version(saved), checkpointing.observation_version(config)
        if there != here:
            changed.append(("observation_version", there, here))
        differences = ", ".join(f"{name} ({there} there, {here} here)" for name, there, here in changed)
        options = " ".join(f"--{name} {there}" for name, there, _ in changed)
        fix = (f"its network differs in {differences}: pass {options}" if changed
               else "the game's observation or actions differ from those it was trained on")
        raise checkpointing.CheckpointError(f"cannot start from {source}: {mismatch}; {fix}")
    log(f"Starting from the network of {source}; the optimizer, replay buffer and games start fresh.")
    return jax.tree.map(lambda new, like: jnp.asarray(new, like.dtype), variables, template)


def _check_run_dir(
    run_dir: Path, config: Config, checkpoints: checkpointing.CheckpointManager, log: Callable[[str], None]
) -> tuple[int | None, Config]:
    """The iteration to resume from, if `run_dir` holds a checkpoint `config` can continue (errors otherwise), and
    `config`, whose observation version, where it leaves it to the game (None), is the checkpoint's: a run goes on
    reading the planes it started on when its game has since moved to other ones."""
    if run_dir.exists() and not run_dir.is_dir():
        raise checkpointing.CheckpointError(f"{run_dir} is a file, not a run directory; pass a directory as --out")
    if (run_dir / checkpointing.EXPORT_FILE).is_file():
        raise checkpointing.CheckpointError(
            f"{run_dir} is an exported model, not a run directory: it cannot be trained further; pass a new --out"
        )
    latest = checkpoints.latest_step()
    if latest is None:
        return None, config
    saved = checkpoints.config(latest)
    if config.observation_version is None:
        config = dataclasses.replace(config, observation_version=saved.observation_version)
    other = checkpointing.check_resumable(saved, config, run_dir, latest)
    if other:
        log(f"Resuming with changed settings: {'; '.join(other)}.")
    if (config.train.lr_schedule == "cosine" and saved.num_iterations != config.num_iterations
            and config.num_iterations > latest):  # not when there is nothing left to train
        log(
            f"Note: the cosine learning-rate schedule now spans {config.num_iterations} iterations instead of "
            f"{saved.num_iterations} (or this session's --seconds, if sooner), so the learning rate changes from "
            "where it was."
        )
    return latest, config


def _schedule_note(config: Config, run_state: RunState) -> str:
    """Where a resumed run's cosine schedule stands: a run that spent its budget (e.g. a finished `--seconds` run)
    goes on at the schedule's floor unless trained anew, which a user should hear before the session starts."""
    spent = budget_progress(run_state, config.num_iterations)
    progress, rate = float(spent), float(learning_rate(config.train, run_state.train_state.step, spent))
    note = (f"The cosine learning-rate schedule is {progress:.0%} spent: this session starts at {rate:.2g} "
            f"(peak {config.train.learning_rate:g}).")
    if progress >= 0.9:
        note += (" Little of it is left: for a full schedule train a new --out, or pass --train.lr_schedule constant "
                 "to go on at the peak.")
    return note


def _check_finite(
    metrics: dict, iteration: int, run_dir: Path, config: Config, checkpoints: checkpointing.CheckpointManager
) -> None:
    """Raises NonFiniteError if any metric of the iteration, or the network's parameters, is NaN or infinite."""
    problems = [f"{name} is {value}" for name, value in metrics.items() if not math.isfinite(value)]
    if metrics.get("params_finite", 1.0) != 1.0:
        problems.append("the network's parameters or optimizer state are not all finite (params_finite = 0)")
    if not problems:
        return
    last = checkpoints.latest_step()
    lower = f"{config.train.learning_rate / 10:g}"
    if last is None:
        advice = f"No checkpoint was written; train again with a lower --train.learning_rate (e.g. {lower})."
    else:
        advice = (
            f"The last good checkpoint, iteration {last}, is kept; resume from it with a lower learning rate, e.g. "
            f"`azjax train --out {run_dir} --train.learning_rate {lower}`."
        )
    raise NonFiniteError(
        f"iteration {iteration}: {', '.join(problems)}; training stopped without saving it. {advice}",
        iteration=iteration,
        problems=problems,
        last_checkpoint=last,
    )


class _StopSignals:
    """Turns the first SIGINT (Ctrl-C) or SIGTERM into a request, `requested`, to stop between iterations.

    The handler only sets a flag: the iteration is a jitted call on donated buffers, and cutting it short would
    lose the run state. A second signal stops at once, through the handler that was there before (Python's Ctrl-C
    raises KeyboardInterrupt, SIGTERM terminates; `azjax train` installs one that exits at once); checkpoints are
    written atomically, so the last one stays loadable. While JAX traces and compiles (`holding()`), a
    KeyboardInterrupt waits until it is done: one raised inside the tracing leaves XLA's half-built program to be
    freed as the exception unwinds, which crashes the interpreter. Outside the main thread (where Python delivers
    signals) it installs nothing, and a signal the process was told to ignore (e.g. SIGINT of a background job)
    stays ignored.
    """

    def __init__(self, log: Callable[[str], None]):
        self.requested: str | None = None  # the name of the signal that asked to stop
        self._log = log
        self._previous: dict[int, Callable | int | None] = {}
        self._holding = False
        self._held: int | None = None  # a second signal that waits for the end of `holding()`

    def __enter__(self) -> _StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(signum) is not signal.SIG_IGN:
                    self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        self._restore()

    @contextlib.contextmanager
    def holding(self):
        """A section (JAX's tracing and compilation) out of which a second Ctrl-C's KeyboardInterrupt is kept."""
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
        if self._held is not None:
            self._stop_at_once(self._held)

    def _handle(self, signum: int, frame) -> None:
        if self.requested is None:
            self.requested = signal.Signals(signum).name
            self._log(
                f"\n{self.requested} received: stopping after this iteration and saving a checkpoint "
                "(send it again to stop at once; the last checkpoint is kept)."
            )
        elif self._holding and self._previous.get(signum) is signal.default_int_handler:
            self._held = signum
        else:
            self._stop_at_once(signum)

    def _stop_at_once(self, signum: int) -> None:
        """Hands `signum` to the handler that was there before: it raises, exits or terminates the process."""
        previous = self._previous.get(signum)
        self._restore()
        if callable(previous):
            previous(signum, None)
        else:  # the default action (SIGTERM terminates), which only the signal itself can take
            signal.raise_signal(signum)

    def _restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self._previous = {}


def _agreed_progress(start: float, stop: _StopSignals) -> tuple[float, bool]:
    """Seconds since `start` and whether a stop was asked, the same in every process of a run: process 0's clock
    (so that all follow one schedule and stop at the same iteration) and a stop asked of any of them."""
    seen = parallel.gather(np.array([_clock() - start, stop.requested is not None], np.float64))  # [P, 2]
    return float(seen[0, 0]), bool(seen[:, 1].any())


def describe_iteration(config: Config) -> str:
    """What one training iteration of `config` does, in a phrase: its self-play, Reanalyse and SGD steps."""
    selfplay, train = config.selfplay, config.train
    reanalyse = ""
    if train.reanalyse_positions:
        opening = ("" if train.reanalyse_max_moves is None
                   else f" of the first {counted(train.reanalyse_max_moves, 'move')}")
        reanalyse = (f", Reanalyse of {counted(train.reanalyse_positions, 'replayed position')}{opening} at "
                     f"{counted(train.reanalyse_simulations or config.search.num_simulations, 'simulation')}")
    return (f"{counted(selfplay.num_games, 'game')} x {counted(selfplay.num_steps, 'move')} of self-play at "
            f"{counted(config.search.num_simulations, 'simulation')}{reanalyse}, then "
            f"{counted(train.num_sgd_steps, 'SGD step')} of {train.batch_size}")


def _compile_iteration(config: Config, run_state: RunState, mesh, devices: list[jax.Device],
                       log: Callable[[str], None], network=None) -> jax.stages.Compiled:
    """The training iteration compiled ahead (it takes `run_state`, donated, and returns the next one and the
    metrics), after checking that it fits in the devices' memory; says that it compiles, and for how long.

    Raises:
      memory.MemoryBudgetError: it would need more memory than the devices have (nothing ran).
    """
    selfplay, train = config.selfplay, config.train
    log(f"Compiling the training iteration ({describe_iteration(config)}); the first one takes a while ...")
    tick = time.perf_counter()
    compiled = memory.compile_within_memory(
        jax.jit(make_train_iteration(config, mesh=mesh, network=network), donate_argnums=0).lower(run_state),
        what=f"the training iteration of {config.game} ({selfplay.num_games} games, replay of "
             f"{train.replay_capacity} positions)",
        lower_it="fewer games (--selfplay.num_games), fewer moves per iteration (--selfplay.num_steps), a smaller "
                 "replay buffer (--train.replay_capacity) or SGD batch (--train.batch_size), or a smaller network",
        devices=devices)
    needed = memory.needed_memory(compiled)
    log(f"Compiled in {time.perf_counter() - tick:.1f} s"
        + (f"; it needs {memory.format_size(needed)} of memory per device." if needed is not None else "."))
    return compiled


def _save_once(checkpoints: checkpointing.CheckpointManager, run_state: RunState, config: Config,
               record: dict) -> int | None:
    """Checkpoints the run state unless its iteration is saved already; the iteration saved, or None."""
    iteration = int(run_state.iteration)
    if checkpoints.latest_step() == iteration:
        return None
    checkpoints.save(run_state, config, record)
    return iteration


def _evaluation_failed(error: Exception, iteration: int, saved: int | None) -> str:
    """One line on an evaluation that failed: what happened, that training goes on, where the run is saved."""
    from azjax.memory import MemoryBudgetError

    what = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if not isinstance(error, MemoryBudgetError):
        what = f"{type(error).__name__}: {what}" if what else type(error).__name__
    kept = f"the run is saved at iteration {saved}" if saved is not None else "no checkpoint yet"
    return (f"iteration {iteration} evaluation failed, so training goes on without evaluations ({kept}): {what}"
            " (--eval-every 0 skips them)")


def _evaluate(
    evaluator: Callable[[jax.Array, dict], dict[str, float]],
    config: Config,
    iteration: int,
    run_state: RunState,
    log: Callable[[str], None],
) -> dict[str, float]:
    """Runs the evaluator on the current network (before the next iteration donates it); the "eval/..." results
    and the seconds they took, also logged as one line."""
    tick = time.perf_counter()
    key = jax.random.fold_in(jax.random.fold_in(jax.random.key(config.seed), 0xE7A1), iteration)
    results = evaluator(key, run_state.train_state.play_variables)  # replicated over the run's devices
    seconds = time.perf_counter() - tick
    # The headline figures; the per-stratum ones ("eval/optimal_move_rate/begin-easy", ...) go to the metrics only.
    shown = ", ".join(f"{name.removeprefix('eval/')} {figure(value)}" for name, value in results.items()
                      if name.count("/") <= 1 and name.startswith("eval/"))
    log(f"iteration {iteration} evaluation: {shown} ({seconds:.1f} s)")
    return {**results, "eval_seconds": round(seconds, 3)}


def _log_record(run_dir: Path, writer, record: dict) -> None:
    with rundir.metrics_path(run_dir).open("a") as f:
        f.write(json.dumps(record) + "\n")
    if writer is not None:
        for name, value in record.items():
            if name != "iteration":
                writer.add_scalar(name, value, record["iteration"])
        writer.flush()


def _no_sgd_note(record: dict, config: Config) -> str:
    """Why an iteration trained nothing: the replay holds fewer positions of finished games than an SGD batch."""
    pending = int(record.get("positions_pending", 0))
    waiting = f"; {pending:,} positions wait for their games to end" if pending else ""
    return (f"iteration {record['iteration']} took no SGD step: the replay holds {int(record.get('replay_size', 0)):,} "
            f"positions of finished games, fewer than a batch of {config.train.batch_size}{waiting}. Training starts "
            f"once enough games have ended (each iteration plays {config.selfplay.num_steps} moves of every game).")


def _summary(record: dict) -> str:
    loss = (f"loss {record['loss']:.3f} (policy {record['policy_loss']:.3f}, value {record['value_loss']:.3f})"
            if record.get("sgd_steps", 1) > 0 else "no SGD step yet")
    return f"{record['positions_per_second']:,.0f} pos/s  {loss}  draws {record['draw_rate']:.0%}"


def _tensorboard_writer(run_dir: Path, purge_step: int):
    try:
        from tensorboardX import SummaryWriter
    except ImportError:  # TensorBoard logs are a convenience; the JSONL log always exists
        return None
    # purge_step hides events a resumed run redoes (logged after its checkpoint by the interrupted session).
    return SummaryWriter(str(run_dir / "tensorboard"), purge_step=purge_step)


class _Console:
    """Where the training loop's lines go: `log`, and while a progress bar shows, beside it.

    A line written while the bar shows clears the bar, goes to `log` and redraws the bar under it (tqdm's
    `external_write_mode`), so a custom `log` (a notebook's, a test's) gets every line either way. The bar is never
    asked for its truth value: a bar without a total (a run that its time budget alone ends) has none.
    """

    def __init__(self, log: Callable[[str], None]):
        self._log = log
        self._bar: tqdm | None = None

    def write(self, line: str) -> None:
        if self._bar is None:
            self._log(line)
            return
        with self._bar.external_write_mode():
            self._log(line)

    def show_bar(self, start: int, total: int) -> None:
        """A bar from iteration `start`, to `total` iterations unless time alone ends the run (it then counts)."""
        from tqdm import tqdm

        shown = None if total >= TIME_BUDGET_ITERATIONS else total
        self._bar = tqdm(total=shown, initial=start, desc="iterations", unit="it", dynamic_ncols=True)

    def advance(self, summary: str) -> None:
        """One iteration done: the bar moves on and shows `summary` (nothing without a bar)."""
        if self._bar is not None:
            self._bar.update(1)
            self._bar.set_postfix_str(summary)

    def close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _plot(run_dir: Path) -> Path | None:
    """Writes `learning_curves.png` from the run's whole metrics log; returns its path."""
    records = rundir.read_metrics(run_dir)
    if not records:
        return None
    # A bare Figure, not pyplot: no global backend switch, so plots in a notebook that trains still show.
    from matplotlib.figure import Figure

    iterations = [r["iteration"] for r in records]
    panels = [
        ("loss", ["loss", "policy_loss", "value_loss"]),
        ("self-play outcomes", ["player0_win_rate", "draw_rate"]),
        ("game length (moves)", ["game_length"]),
        ("throughput (positions/s)", ["positions_per_second"]),
    ]
    evals = sorted({k for r in records for k in r if k.startswith("eval/")})
    judged = ("eval/optimal_move_rate", "eval/value_accuracy")  # on labelled positions: its own panel
    scores = [name for name in evals if not name.startswith(judged)]
    if scores:
        panels.append(("evaluation score", scores))
        panels.append(("evaluation score vs wall clock", scores))
    perfect_play = [name for name in evals if name.startswith(judged[0]) and "can_err" not in name]
    if perfect_play:
        panels.append(("optimal-move rate vs wall clock", perfect_play + [n for n in evals if n == judged[1]]))
    # Wall-clock minutes since the run began; "time" restarts with each resumed session, so sessions are chained.
    minutes, offset, previous = [], 0.0, 0.0
    for r in records:
        if r.get("time", 0.0) < previous:
            offset += previous
        previous = r.get("time", 0.0)
        minutes.append((offset + previous) / 60.0)
    fig = Figure(figsize=(4.2 * len(panels), 3.4))
    axes = fig.subplots(1, len(panels))
    for ax, (title, names) in zip(axes, panels, strict=True):
        x_values, x_label = (minutes, "wall clock (minutes)") if "wall clock" in title else (iterations, "iteration")
        for name in names:
            points = [(x, r[name]) for x, r in zip(x_values, records, strict=True) if name in r]
            if points:
                marker = "." if title.startswith(("evaluation", "optimal")) else None
                ax.plot(*zip(*points, strict=True), label=name.removeprefix("eval/"), marker=marker)
        ax.set_title(title)
        ax.set_xlabel(x_label)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = run_dir / "learning_curves.png"
    fig.savefig(path, dpi=110)
    return path
