"""The host loop of a training run: `train(config, run_dir)`.

It jits the training iteration once, then only logs (one `device_get` per iteration), checkpoints and reports
progress. A run directory holds `config.json`, `metrics.jsonl` (one JSON record per iteration), TensorBoard event
files under `tensorboard/`, orbax checkpoints under `checkpoints/` and, at the end, `learning_curves.png`.

Stopping is safe: the first Ctrl-C (SIGINT) or SIGTERM lets the current iteration finish, then a checkpoint is
written and `train` returns; calling it again on the same directory resumes bitwise-exactly. A NaN or infinite
loss or parameter stops training at once (`NonFiniteError`) and never reaches a checkpoint.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from pathlib import Path

import jax
import numpy as np

from azjax import checkpointing, evaluation, exports, memory, parallel, rundir
from azjax.config import TIME_BUDGET_ITERATIONS, Config, ConfigError
from azjax.interrupts import StopSignals
from azjax.layout import default_layout, run_devices
from azjax.run_log import Console, append_record, plot_learning_curves, tensorboard_writer
from azjax.text import counted, figure
from azjax.training import (
    Components,
    RunState,
    budget_progress,
    init_run_state,
    learning_rate,
    make_components,
    make_train_iteration,
    shard_run_state,
)
from azjax.warm_start import warm_start_weights

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
    the replay records, the optimizer; `compatibility.compare_configs`), must match `config` (CheckpointError
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
    if max_seconds is not None and not (math.isfinite(max_seconds) and max_seconds > 0):
        raise ConfigError(f"max_seconds must be a finite number of seconds > 0 (or None: no limit), got {max_seconds}")
    primary = parallel.is_primary()  # over several processes, process 0 alone writes files and talks
    if not primary:
        log, progress = (lambda _: None), False
    devices = _session_devices(config, num_devices, own_network=network is not None, log=log)
    run_dir = Path(run_dir)
    checkpoints = checkpointing.CheckpointManager(run_dir, keep=keep_checkpoints, best_metric=best_metric)
    resumed_from, config = _check_run_dir(run_dir, config, checkpoints, log)
    if init_from is not None and resumed_from is not None:
        raise checkpointing.CheckpointError(
            f"--init-from starts a new run, but {run_dir} holds one (iteration {resumed_from}): pass a new --out, "
            "or resume it without --init-from"
        )
    parts = make_components(config, network)  # checks the network against the contract before anything runs
    console = Console(log)  # every line of the loop goes through it, beside the progress bar once one shows
    with StopSignals(console.write) as stop:  # until train returns, SIGINT / SIGTERM ask to stop between iterations
        run_state = _starting_run_state(config, checkpoints, resumed_from, init_from, network, log)
        start_iteration = int(run_state.iteration)
        _say_where_it_resumes(config, run_dir, run_state, resumed_from, log)
        if start_iteration >= config.num_iterations:  # nothing to do: the run directory stays as it is
            log(f"{run_dir} has already trained {counted(start_iteration, 'iteration')}; pass more --iterations to "
                "go on.")
            return TrainResult(run_state, [], resumed_from, "iterations", checkpoints.latest_step())
        mesh = parallel.make_mesh(devices) if len(devices) > 1 else None
        if mesh is not None:
            run_state = shard_run_state(run_state, mesh)
            log(f"Data parallel over {len(devices)} devices ({devices[0].platform}).")
        else:  # placed alike whether fresh or restored, so that a resumed run compiles the program a fresh one did
            run_state = jax.device_put(run_state, devices[0])
        if primary:
            rundir.write_config(run_dir, config)
            rundir.truncate_metrics(run_dir, start_iteration)  # iterations after the checkpoint are redone
        loop = _Loop(
            config=config, run_dir=run_dir, checkpoints=checkpoints, console=console, stop=stop,
            start=_clock(),  # the session's clock (--seconds, the records' "time") counts the compilation too
            max_seconds=max_seconds, checkpoint_every=checkpoint_every, stop_when_perfect=stop_when_perfect,
            evaluations=_Evaluations(
                every=eval_every, evaluator=evaluator, checkpoints=checkpoints, config=config,
                make_evaluator=functools.partial(evaluation.make_evaluator, config, mesh=mesh, num_games=eval_games,
                                                 opponents=eval_opponents, network=network)),
        )
        with stop.holding():
            iteration_fn = _compile_iteration(config, run_state, mesh, devices, console.write, parts)
        writer = tensorboard_writer(run_dir, purge_step=start_iteration + 1) if primary else None
        if progress:
            console.show_bar(start_iteration, config.num_iterations)
        try:
            run_state, history, stop_reason = loop.run(iteration_fn, run_state, writer)
        finally:
            console.close_bar()
            if writer is not None:
                writer.close()
        if int(run_state.iteration) > (checkpoints.latest_step() or 0):
            checkpoints.save(run_state, config, history[-1] if history else None)
    if primary:
        plot_learning_curves(run_dir, num_players=parts.game.num_players)
    return TrainResult(run_state, history, resumed_from, stop_reason, checkpoints.latest_step())


def _session_devices(config: Config, num_devices: int | None, *, own_network: bool,
                     log: Callable[[str], None]) -> list[jax.Device]:
    """The devices this session trains on: over several processes all of theirs (or `num_devices`), else
    `num_devices` of this process's or, when none is asked for, `default_layout`'s (said with its reason)."""
    if jax.process_count() > 1:  # every process's devices take part: the mesh spans them all
        devices = run_devices(config, num_devices or len(jax.devices()))
        log(f"Devices: {len(devices)} {devices[0].platform} devices over {jax.process_count()} processes.")
        return devices
    if num_devices is None:
        devices, reason = default_layout(config, own_network=own_network)
        log(f"Devices: {reason}.")
        return devices
    return run_devices(config, num_devices)


def _starting_run_state(config: Config, checkpoints: checkpointing.CheckpointManager, resumed_from: int | None,
                        init_from: str | Path | None, network, log: Callable[[str], None]) -> RunState:
    """The run state the session starts from: the checkpoint it resumes, or a fresh one (from `init_from`'s weights
    where given)."""
    if resumed_from is not None:
        return checkpoints.restore(config, network=network)
    weights = None if init_from is None else warm_start_weights(config, init_from, log, network=network)
    run_state = init_run_state(config, network=network)
    if weights is not None:  # the optimizer's state does not depend on the weights' values
        run_state = run_state.replace(train_state=run_state.train_state.with_variables(weights))
    return run_state


def _say_where_it_resumes(config: Config, run_dir: Path, run_state: RunState, resumed_from: int | None,
                          log: Callable[[str], None]) -> None:
    """For a resumed run with iterations left: where it resumes, how far it goes and where its schedule stands."""
    start_iteration = int(run_state.iteration)
    if resumed_from is None or start_iteration > config.num_iterations:
        return
    if start_iteration < config.num_iterations:
        until = ("until its time is spent" if config.num_iterations >= TIME_BUDGET_ITERATIONS
                 else f"training to {config.num_iterations}")  # a run that --seconds alone ends counts none
        log(f"Resuming {run_dir} from iteration {resumed_from} ({until}).")
    if config.train.lr_schedule == "cosine":
        log(_schedule_note(config, run_state))


@dataclasses.dataclass
class _Evaluations:
    """The evaluations of a session: every `every` iterations (0: never) and after a timed run's last one. The
    first of the process saves the run before it; one that fails is said in a line and turns them off."""

    every: int
    evaluator: Callable[[jax.Array, dict], dict[str, float]] | None  # None: `make_evaluator()`, made when first due
    make_evaluator: Callable[[], Callable[[jax.Array, dict], dict[str, float]]]
    checkpoints: checkpointing.CheckpointManager
    config: Config
    done: bool = False  # one has run in this process
    saved_before: int | None = None  # the iteration saved before the first one, if it was not saved already

    def __post_init__(self):
        self.on = self.every > 0

    def due(self, iteration: int, out_of_time: bool) -> bool:
        return self.on and (iteration % self.every == 0 or out_of_time)

    def run(self, iteration: int, run_state: RunState, record: dict, write: Callable[[str], None]) -> None:
        """Adds the evaluation's "eval/..." figures to `record` (or turns evaluations off if it fails)."""
        if not self.done:
            self.saved_before = _save_once(self.checkpoints, run_state, self.config, record)
        try:
            self.evaluator = self.evaluator or self.make_evaluator()
            record.update(_evaluate(self.evaluator, self.config, iteration, run_state, write))
            self.done = True
        except Exception as error:  # noqa: BLE001 - whatever fails in the evaluation, training goes on
            self.on = False
            write(_evaluation_failed(error, iteration, self.checkpoints.latest_step()))


@dataclasses.dataclass
class _Loop:
    """The iterations of a session and what follows each: its record, evaluation, log, checkpoint and stop rules."""

    config: Config
    run_dir: Path
    checkpoints: checkpointing.CheckpointManager
    console: Console
    stop: StopSignals
    start: float  # the session's clock at its start
    max_seconds: float | None
    checkpoint_every: int
    stop_when_perfect: bool
    evaluations: _Evaluations

    @functools.cached_property
    def two_players(self) -> bool:
        """The run's game is one of two players (else one: the progress bar shows game lengths, not draws)."""
        return self.config.make_game().num_players == 2

    def run(self, iteration_fn: Callable[[RunState], tuple[RunState, dict]], run_state: RunState,
            writer) -> tuple[RunState, list[dict], str]:
        """Trains from `run_state` until a stop rule ends the session: the run state, the records and the reason."""
        config = self.config
        time_start = float(budget_progress(run_state, config.num_iterations))  # the budget spent before this session
        history: list[dict] = []
        for iteration in range(int(run_state.iteration) + 1, config.num_iterations + 1):
            elapsed, interrupted = _agreed_progress(self.start, self.stop)
            if interrupted:  # checked between iterations: a donated, jitted iteration is never cut short
                return run_state, history, "interrupted"
            if self.max_seconds is not None:  # the schedule spans what remained of it when this session began
                spent = min(elapsed / self.max_seconds, 1.0)
                time_progress = np.float32(time_start + (1.0 - time_start) * spent)
                run_state = run_state.replace(
                    time_progress=parallel.put(time_progress, run_state.time_progress.sharding))
            run_state, record = self._iterate(iteration_fn, run_state, iteration)
            out_of_time = (self.max_seconds is not None
                           and _agreed_progress(self.start, self.stop)[0] >= self.max_seconds)
            if self.evaluations.due(iteration, out_of_time):  # the last network of a timed run is scored
                self.evaluations.run(iteration, run_state, record, self.console.write)
            self._report(record, history, writer)
            # Evaluation metrics ("eval/...") belong in `record` by here, so that a new best is saved at once.
            if iteration % self.checkpoint_every == 0 or self.checkpoints.is_new_best(record):
                self.checkpoints.save(run_state, config, record, replace=self.evaluations.saved_before == iteration)
            if out_of_time:
                return run_state, history, "seconds"
            if plays_perfectly(record) and self._stops_when_perfect(iteration):
                return run_state, history, "perfect"
        return run_state, history, "iterations"

    def _iterate(self, iteration_fn, run_state: RunState, iteration: int) -> tuple[RunState, dict]:
        """Runs one iteration; the next run state and the iteration's record (NonFiniteError if it diverged)."""
        tick = _clock()
        run_state, metrics = iteration_fn(run_state)
        metrics = {name: float(value) for name, value in jax.device_get(metrics).items()}
        seconds = _clock() - tick
        _check_finite(metrics, iteration, self.run_dir, self.config, self.checkpoints)
        positions = self.config.selfplay.positions_per_iteration
        return run_state, {
            "iteration": iteration,
            "time": round(_clock() - self.start, 3),
            "iteration_seconds": round(seconds, 4),
            "positions_per_second": positions / seconds,
            "simulations_per_second": positions * self.config.search.num_simulations / seconds,
            **metrics,
        }

    def _report(self, record: dict, history: list[dict], writer) -> None:
        """The record into the history, the metrics log and TensorBoard (process 0), and the progress bar."""
        if record.get("sgd_steps", 1) == 0 and (not history or history[-1].get("sgd_steps", 1) > 0):
            self.console.write(_no_sgd_note(record, self.config))
        history.append(record)
        if parallel.is_primary():
            append_record(self.run_dir, writer, record)
        self.console.advance(_summary(record, two_players=self.two_players))

    def _stops_when_perfect(self, iteration: int) -> bool:
        """Says that the network plays perfectly (at the last iteration too); whether the session stops for it."""
        stops = self.stop_when_perfect and iteration < self.config.num_iterations
        self.console.write(f"iteration {iteration}: the network plays perfectly (its top move is optimal in every "
                           "labelled position and it never lost to the perfect player)"
                           + (", so training stops here." if stops else "."))
        return stops


def plays_perfectly(record: dict) -> bool:
    """Whether an iteration's record shows perfect play: an evaluation with the network's top move optimal in every
    labelled position ("eval/optimal_move_rate" 1) and no loss to the perfect player ("eval/perfect" 0.5: it
    cannot win, so a score of a half is all draws). Only games with both (tic-tac-toe's default evaluation)."""
    return record.get("eval/optimal_move_rate") == 1.0 and record.get("eval/perfect", 0.0) >= 0.5


def _check_run_dir(
    run_dir: Path, config: Config, checkpoints: checkpointing.CheckpointManager, log: Callable[[str], None]
) -> tuple[int | None, Config]:
    """The iteration to resume from, if `run_dir` holds a checkpoint `config` can continue (errors otherwise), and
    `config`, whose observation version, where it leaves it to the game (None), is the checkpoint's: a run goes on
    reading the planes it started on when its game has since moved to other ones."""
    if run_dir.exists() and not run_dir.is_dir():
        raise checkpointing.CheckpointError(f"{run_dir} is a file, not a run directory; pass a directory as --out")
    if (run_dir / exports.EXPORT_FILE).is_file():
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


def _agreed_progress(start: float, stop: StopSignals) -> tuple[float, bool]:
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
                       log: Callable[[str], None], parts: Components) -> jax.stages.Compiled:
    """The training iteration compiled ahead (it takes `run_state`, donated, and returns the next one and the
    metrics), after checking that it fits in the devices' memory; says that it compiles, and for how long.

    Raises:
      memory.MemoryBudgetError: it would need more memory than the devices have (nothing ran).
    """
    selfplay, train = config.selfplay, config.train
    log(f"Compiling the training iteration ({describe_iteration(config)}); the first one takes a while ...")
    tick = time.perf_counter()
    compiled = memory.compile_within_memory(
        jax.jit(make_train_iteration(config, mesh=mesh, parts=parts), donate_argnums=0).lower(run_state),
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
    log(f"iteration {iteration} evaluation: {_headline(results)} ({seconds:.1f} s)")
    return {**results, "eval_seconds": round(seconds, 3)}


def _headline(results: dict[str, float]) -> str:
    """The evaluation's headline figures as one line: every "eval/NAME", and a one-player game's baselines'
    returns ("eval/return/random"); the per-stratum figures ("eval/optimal_move_rate/begin-easy", ...) go to the
    metrics only."""
    return ", ".join(f"{name.removeprefix('eval/')} {figure(value)}" for name, value in results.items()
                     if name.startswith("eval/") and (name.count("/") <= 1 or name.startswith("eval/return/")))


def _no_sgd_note(record: dict, config: Config) -> str:
    """Why an iteration trained nothing: the replay holds fewer positions of finished games than an SGD batch."""
    pending = int(record.get("positions_pending", 0))
    waiting = f"; {pending:,} positions wait for their games to end" if pending else ""
    return (f"iteration {record['iteration']} took no SGD step: the replay holds {int(record.get('replay_size', 0)):,} "
            f"positions of finished games, fewer than a batch of {config.train.batch_size}{waiting}. Training starts "
            f"once enough games have ended (each iteration plays {config.selfplay.num_steps} moves of every game).")


def _summary(record: dict, *, two_players: bool = True) -> str:
    """The progress bar's text: speed, losses, and the share of self-play games drawn (a one-player game: their
    mean length)."""
    loss = (f"loss {record['loss']:.3f} (policy {record['policy_loss']:.3f}, value {record['value_loss']:.3f})"
            if record.get("sgd_steps", 1) > 0 else "no SGD step yet")
    outcome = f"draws {record['draw_rate']:.0%}" if two_players else f"{record['game_length']:.1f} moves a game"
    return f"{record['positions_per_second']:,.0f} pos/s  {loss}  {outcome}"


