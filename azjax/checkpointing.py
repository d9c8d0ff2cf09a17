"""Orbax checkpoints of a run, with the config as readable JSON beside them.

A run directory holds `config.json` and `checkpoints/<iteration>/` with two items: "model" (the network's
params and batch-norm statistics, all that inference needs) and "run" (the rest of the run state: optimizer,
replay buffer, games in progress, random key, iteration). Orbax writes each checkpoint to a temporary directory
and renames it when complete, so an interrupted save never replaces the previous checkpoint. Nothing is pickled:
loading a checkpoint cannot run code.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import orbax.checkpoint as ocp

from azjax import config as config_lib
from azjax.training import RunState, init_run_state

CONFIG_FILE = "config.json"
CHECKPOINT_DIR = "checkpoints"


class CheckpointError(RuntimeError):
    """A run directory or checkpoint cannot be used; the message says why and what to do."""


def write_config(run_dir: Path, config: config_lib.Config) -> None:
    """Writes `config.json` into the run directory (creating it)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / CONFIG_FILE).write_text(config_lib.to_json(config) + "\n")


def read_config(run_dir: Path) -> config_lib.Config:
    """The config of a run directory, validated; CheckpointError if missing or invalid."""
    path = Path(run_dir) / CONFIG_FILE
    if not Path(run_dir).is_dir():
        raise CheckpointError(f"{run_dir} is not a directory; pass the --out directory of a training run")
    if not path.is_file():
        raise CheckpointError(f"{run_dir} has no {CONFIG_FILE}; is it the directory of an azjax training run?")
    try:
        return config_lib.from_json(path.read_text())
    except config_lib.ConfigError as error:
        raise CheckpointError(f"{path} is not a valid azjax config: {error}") from None


def make_manager(run_dir: Path, *, max_to_keep: int = 3, read_only: bool = False) -> ocp.CheckpointManager:
    """The orbax manager of `run_dir/checkpoints`, keeping the last `max_to_keep` checkpoints."""
    options = ocp.CheckpointManagerOptions(
        max_to_keep=max_to_keep, create=not read_only, read_only=read_only, enable_async_checkpointing=False
    )
    return ocp.CheckpointManager(Path(run_dir).absolute() / CHECKPOINT_DIR, options=options, item_names=("model", "run"))


def _split(run_state: RunState) -> tuple[dict, dict]:
    model = {"params": run_state.train_state.params, "batch_stats": run_state.train_state.batch_stats}
    run = {
        "opt_state": run_state.train_state.opt_state,
        "step": run_state.train_state.step,
        "selfplay": run_state.selfplay,
        "replay": run_state.replay,
        "key": jax.random.key_data(run_state.key),
        "iteration": run_state.iteration,
    }
    return model, run


def save(manager: ocp.CheckpointManager, run_state: RunState) -> None:
    """Saves the run state under its iteration number and waits until it is on disk."""
    model, run = _split(run_state)
    step = int(run_state.iteration)
    manager.save(step, args=ocp.args.Composite(model=ocp.args.StandardSave(model), run=ocp.args.StandardSave(run)))
    manager.wait_until_finished()


def restore(manager: ocp.CheckpointManager, config: config_lib.Config, step: int | None = None) -> RunState:
    """Restores the run state of the latest checkpoint (or `step`) of a run made with `config`."""
    step = manager.latest_step() if step is None else step
    template = jax.eval_shape(lambda: init_run_state(config))
    model, run = jax.eval_shape(lambda: _split(init_run_state(config)))
    restored = manager.restore(
        step, args=ocp.args.Composite(model=ocp.args.StandardRestore(model), run=ocp.args.StandardRestore(run))
    )
    model, run = restored["model"], restored["run"]
    train_state = template.train_state.replace(
        params=model["params"], batch_stats=model["batch_stats"], opt_state=run["opt_state"], step=run["step"]
    )
    return RunState(
        train_state=train_state,
        selfplay=run["selfplay"],
        replay=run["replay"],
        key=jax.random.wrap_key_data(run["key"]),
        iteration=run["iteration"],
    )


def restore_model(run_dir: Path) -> tuple[config_lib.Config, dict]:
    """The config and network variables ({"params", "batch_stats"}) of a run's latest checkpoint."""
    config = read_config(run_dir)
    manager = make_manager(run_dir, read_only=True)
    step = manager.latest_step()
    if step is None:
        raise CheckpointError(f"{run_dir} has no checkpoint yet; train longer or pass another run directory")
    model, _ = jax.eval_shape(lambda: _split(init_run_state(config)))
    restored = manager.restore(step, args=ocp.args.Composite(model=ocp.args.StandardRestore(model)))
    return config, dict(restored["model"])


def latest_iteration(run_dir: Path) -> int | None:
    """The iteration of the newest checkpoint in `run_dir`, or None."""
    if not (Path(run_dir) / CHECKPOINT_DIR).is_dir():
        return None
    return make_manager(run_dir, read_only=True).latest_step()


def metrics_path(run_dir: Path) -> Path:
    """Where a run's per-iteration metrics go (JSON lines)."""
    return Path(run_dir) / "metrics.jsonl"


def read_metrics(run_dir: Path) -> list[dict]:
    """Every record of a run's metrics log."""
    path = metrics_path(run_dir)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
