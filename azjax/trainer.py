"""The host loop of a training run: `train(config, run_dir)`.

It jits the training iteration once, then only logs (one `device_get` per iteration), checkpoints and reports
progress. A run directory holds `config.json`, `metrics.jsonl` (one JSON record per iteration), TensorBoard event
files under `tensorboard/`, orbax checkpoints under `checkpoints/` and, at the end, `learning_curves.png`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path

import jax

from azjax import checkpointing
from azjax.config import Config
from azjax.training import RunState, init_run_state, make_train_iteration


@dataclasses.dataclass
class TrainResult:
    """What `train` returns: the final run state and the metrics records of this session."""

    run_state: RunState
    history: list[dict]
    resumed_from: int | None  # the iteration the run resumed from, or None for a fresh run
    stop_reason: str  # "iterations", "seconds" or "interrupted"


def train(
    config: Config,
    run_dir: str | Path,
    *,
    max_seconds: float | None = None,
    checkpoint_every: int = 10,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> TrainResult:
    """Trains until `config.num_iterations` iterations in total, or `max_seconds` of this session, are spent.

    If `run_dir` already holds a checkpoint of the same config, the run resumes from it. The loop checkpoints
    every `checkpoint_every` iterations and at the end, and writes the learning-curve plot when it stops.
    """
    config.validate()
    run_dir = Path(run_dir)
    resumed_from = _check_run_dir(run_dir, config)
    checkpointing.write_config(run_dir, config)
    manager = checkpointing.make_manager(run_dir)
    if resumed_from is not None:
        run_state = checkpointing.restore(manager, config)
        log(f"Resuming {run_dir} from iteration {resumed_from}.")
    else:
        run_state = init_run_state(config)

    iteration_fn = jax.jit(make_train_iteration(config), donate_argnums=0)
    positions_per_iteration = config.selfplay.num_games * config.selfplay.num_steps
    start_iteration = int(run_state.iteration)
    history: list[dict] = []
    writer = _tensorboard_writer(run_dir)
    bar = _progress_bar(progress, start_iteration, config.num_iterations)
    start = time.perf_counter()
    stop_reason = "iterations"
    try:
        for iteration in range(start_iteration + 1, config.num_iterations + 1):
            tick = time.perf_counter()
            run_state, metrics = iteration_fn(run_state)
            metrics = {name: float(value) for name, value in jax.device_get(metrics).items()}
            seconds = time.perf_counter() - tick
            record = {
                "iteration": iteration,
                "time": round(time.perf_counter() - start, 3),
                "iteration_seconds": round(seconds, 4),
                "positions_per_second": positions_per_iteration / seconds,
                "simulations_per_second": positions_per_iteration * config.search.num_simulations / seconds,
                **metrics,
            }
            history.append(record)
            _log_record(run_dir, writer, record)
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(_summary(record))
            if iteration % checkpoint_every == 0:
                checkpointing.save(manager, run_state)
            if max_seconds is not None and time.perf_counter() - start >= max_seconds:
                stop_reason = "seconds"
                break
    except KeyboardInterrupt:
        stop_reason = "interrupted"
    finally:
        if bar is not None:
            bar.close()
        if writer is not None:
            writer.close()
    if int(run_state.iteration) != (manager.latest_step() or 0):
        checkpointing.save(manager, run_state)
    _plot(run_dir)
    return TrainResult(run_state=run_state, history=history, resumed_from=resumed_from, stop_reason=stop_reason)


def _check_run_dir(run_dir: Path, config: Config) -> int | None:
    """The iteration to resume from, if `run_dir` holds a checkpoint of this config; errors on a mismatch."""
    latest = checkpointing.latest_iteration(run_dir)
    if latest is None:
        return None
    saved = checkpointing.read_config(run_dir)
    # The number of iterations may grow on resume; everything else must match the checkpoint.
    if dataclasses.replace(saved, num_iterations=0) != dataclasses.replace(config, num_iterations=0):
        raise checkpointing.CheckpointError(
            f"{run_dir} holds a run with a different config ({run_dir / checkpointing.CONFIG_FILE}); resume it "
            "with the same settings, or pass a new --out directory"
        )
    return latest


def _log_record(run_dir: Path, writer, record: dict) -> None:
    with checkpointing.metrics_path(run_dir).open("a") as f:
        f.write(json.dumps(record) + "\n")
    if writer is not None:
        for name, value in record.items():
            if name != "iteration":
                writer.add_scalar(name, value, record["iteration"])
        writer.flush()


def _summary(record: dict) -> str:
    return (
        f"{record['positions_per_second']:,.0f} pos/s  loss {record['loss']:.3f} "
        f"(policy {record['policy_loss']:.3f}, value {record['value_loss']:.3f})  "
        f"draws {record['draw_rate']:.0%}"
    )


def _tensorboard_writer(run_dir: Path):
    try:
        from tensorboardX import SummaryWriter
    except ImportError:  # TensorBoard logs are a convenience; the JSONL log always exists
        return None
    return SummaryWriter(str(run_dir / "tensorboard"))


def _progress_bar(enabled: bool, start: int, total: int):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=start, desc="iterations", unit="it", dynamic_ncols=True)


def _plot(run_dir: Path) -> Path | None:
    """Writes `learning_curves.png` from the run's whole metrics log; returns its path."""
    records = checkpointing.read_metrics(run_dir)
    if not records:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    iterations = [r["iteration"] for r in records]
    panels = [
        ("loss", ["loss", "policy_loss", "value_loss"]),
        ("self-play outcomes", ["player0_win_rate", "draw_rate"]),
        ("game length (moves)", ["game_length"]),
        ("throughput (positions/s)", ["positions_per_second"]),
    ]
    evals = sorted({k for r in records for k in r if k.startswith("eval/")})
    if evals:
        panels.append(("evaluation score", evals))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4))
    for ax, (title, names) in zip(axes, panels, strict=True):
        for name in names:
            points = [(i, r[name]) for i, r in zip(iterations, records, strict=True) if name in r]
            if points:
                ax.plot(*zip(*points, strict=True), label=name)
        ax.set_title(title)
        ax.set_xlabel("iteration")
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = run_dir / "learning_curves.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
