"""Exported models, and loading a trained network from wherever it is kept.

An export directory (`azjax export RUN_DIR OUT`, `export_model`) is an inference-only copy of one checkpoint::

    config.json      the config, readable (and editable, like a run's)
    export.json      where it came from: the run, the iteration and its metrics, the observation version
    model/           the network's params and batch-norm statistics (orbax)
    manifest.json    the size and CRC-32 of every file under model/ (`azjax.manifest`)

`restore_model` loads a network from a run directory (`azjax.checkpointing`), one of its checkpoints, an export or a
shipped agent (`azjax.pretrained`), as do `azjax.load_agent`, `azjax eval` and `azjax play`; `restore_config` reads
the config alone. An export is written under a temporary name and renamed into place once complete.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import orbax.checkpoint as ocp

from azjax import config as config_lib
from azjax import pretrained
from azjax.checkpointing import (
    CHECKPOINT_DIR,
    FORMAT_VERSION,
    TEMPORARY_MARKERS,
    CheckpointManager,
    on_default_device,
)
from azjax.manifest import verify_files, write_manifest
from azjax.rundir import CONFIG_FILE, CheckpointError, fit_observation, read_config, read_versioned_json
from azjax.text import first_line

EXPORT_FILE = "export.json"
EXPORT_FORMAT = "azjax-export"


def restore_model(
    path: str | Path, *, iteration: int | None = None, best_metric: str | None = None, network=None
) -> tuple[config_lib.Config, dict]:
    """The config and network variables ({"params", "batch_stats"}) of a run directory, an export or a shipped agent
    (`restore_config`: the config alone).

    Args:
      path: a run directory (its latest checkpoint), one of its `checkpoints/<iteration>` directories, a
        directory written by `export_model` / `azjax export`, or "pretrained:GAME" (`azjax.pretrained`).
      iteration: a run directory's checkpoint to load instead of the latest.
      best_metric: load the run's checkpoint with the highest value of this metric instead of the latest.
      network: the module whose variables these are, where it is not the one the config names (a network given
        to `train` in Python; a network recorded as `network.module` is built from the config).
    Raises:
      CheckpointError: the path, its config or its checkpoint cannot be used (the message says which and what
        to do).
      networks.NetworkError: the config names a network of one's own that cannot be built here.
    """
    config, variables = _restore(path, iteration, best_metric, weights=True, network=network)
    assert variables is not None
    return config, variables


def restore_config(
    path: str | Path, *, iteration: int | None = None, best_metric: str | None = None
) -> config_lib.Config:
    """The config `restore_model` would give (fitted to the network's observation version, a shipped agent's play
    settings applied), read without loading the network's arrays: what a source's game, network shape or
    observation is, before anything is built (`azjax train --init-from` fits its config to it this way)."""
    return _restore(path, iteration, best_metric, weights=False)[0]


def export_model(
    run_dir: str | Path,
    out: str | Path,
    *,
    iteration: int | None = None,
    best_metric: str | None = None,
    overwrite: bool = False,
) -> dict:
    """Writes an inference-only copy of a run's checkpoint (parameters and config) to the directory `out`.

    Takes the latest checkpoint, or `iteration`, or the best by `best_metric`. `out` is written in a temporary
    directory and renamed into place; an existing `out` is replaced only with `overwrite`. Returns the
    contents of `out/export.json`.
    """
    run_dir, out = Path(run_dir), Path(out)
    if out.exists() and not out.is_dir():
        raise CheckpointError(f"{out} is a file; choose another output directory")
    if out.exists() and any(out.iterdir()):
        if not (out / EXPORT_FILE).is_file():
            raise CheckpointError(f"{out} is a non-empty directory that is not an azjax export; choose another")
        if not overwrite:
            raise CheckpointError(f"{out} already exists; choose another output directory or pass --force")
    if (run_dir / EXPORT_FILE).is_file():
        raise CheckpointError(f"{run_dir} is already an export; copy it, or export from its training run")
    if not run_dir.is_dir():
        raise CheckpointError(f"{run_dir} does not exist or is not a directory; pass the --out directory of a run")
    manager = CheckpointManager(run_dir, best_metric=best_metric)
    if best_metric is not None:
        iteration = _best_step(manager)
    step = manager.resolve(iteration)
    config, variables = manager.restore_model(step)
    info = {
        "format": EXPORT_FORMAT,
        "version": FORMAT_VERSION,
        "source": str(run_dir.absolute()),
        "iteration": step,
        "metrics": manager.meta(step).get("metrics", {}),
        "observation_version": manager.meta(step).get("observation_version", 1),
    }
    _write_export(out, config, variables, info)
    return info


def _write_export(out: Path, config: config_lib.Config, variables: dict, info: dict) -> None:
    """Writes the export directory `out` in a temporary directory beside it, then renames it into place."""
    out.parent.mkdir(parents=True, exist_ok=True)
    for leftover in out.parent.glob(f".{out.name}.*"):  # what a killed export left behind
        if any(marker in leftover.name for marker in TEMPORARY_MARKERS):
            shutil.rmtree(leftover, ignore_errors=True)
    staging = out.parent / f".{out.name}.tmp-{os.getpid()}"
    staging.mkdir()
    try:
        with ocp.Checkpointer(ocp.StandardCheckpointHandler()) as checkpointer:
            checkpointer.save((staging / "model").absolute(), args=ocp.args.StandardSave(variables))
        (staging / CONFIG_FILE).write_text(config_lib.to_json(config) + "\n")
        (staging / EXPORT_FILE).write_text(json.dumps(info, indent=2) + "\n")
        write_manifest(staging, items=("model",))  # config.json stays editable, like a run's
        if out.exists():
            old = out.parent / f".{out.name}.deleting-{os.getpid()}"
            out.rename(old)
            staging.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _restore(path: str | Path, iteration: int | None, best_metric: str | None, *, weights: bool, network=None
             ) -> tuple[config_lib.Config, dict | None]:
    """`restore_model` (`weights`) or `restore_config` (not): one resolution of the path for both."""
    if pretrained.is_pretrained(path):
        if iteration is not None or best_metric is not None:
            raise CheckpointError(f"{path} is one shipped network; it has no other iterations to choose from")
        if not weights:
            return pretrained.restore_config(str(path)), None
        config, variables, _ = pretrained.restore(str(path))  # its config fitted to its observation version
        return config, variables
    path = Path(path)
    if not path.exists():
        raise CheckpointError(
            f"{path} does not exist; pass a training run's directory (azjax train --out) or an export (azjax export)"
        )
    if not path.is_dir():
        raise CheckpointError(f"{path} is a file; pass a training run's directory or an export directory")
    if (path / EXPORT_FILE).is_file():
        if iteration is not None or best_metric is not None:
            raise CheckpointError(f"{path} is an export of one checkpoint; it has no other iterations to choose from")
        return _restore_export(path, weights=weights, network=network)
    if pretrained.is_agent_directory(path):  # an agent packaged for shipping (experiments/tools/pretrain.py --out)
        if not weights:
            return pretrained.directory_config(path), None
        config, variables, _ = pretrained.restore_directory(path)
        return config, variables
    if path.name.isdigit() and path.parent.name == CHECKPOINT_DIR:  # RUN/checkpoints/<iteration>
        path, iteration = path.parent.parent, int(path.name)
    if not (path / CONFIG_FILE).is_file() and not (path / CHECKPOINT_DIR).is_dir():
        raise CheckpointError(
            f"{path} is neither a training run directory (no {CONFIG_FILE}) nor an export (no {EXPORT_FILE}); "
            "pass the --out directory of `azjax train` or the output of `azjax export`"
        )
    manager = CheckpointManager(path, best_metric=best_metric)
    if best_metric is not None:
        iteration = _best_step(manager)
    if not weights:
        return manager.config(manager.resolve(iteration)), None
    return manager.restore_model(iteration, network=network)


def _best_step(manager: CheckpointManager) -> int:
    """The iteration of the manager's best checkpoint by its `best_metric`; CheckpointError if none has it."""
    step = manager.best_step()
    if step is None:
        raise CheckpointError(f"no checkpoint of {manager.run_dir} has the metric {manager.best_metric!r}; drop --best")
    return step


def _restore_export(path: Path, *, weights: bool = True, network=None) -> tuple[config_lib.Config, dict | None]:
    info = read_versioned_json(path / EXPORT_FILE, file_format=EXPORT_FORMAT, version=FORMAT_VERSION,
                               fix="export the model again")
    config = fit_observation(path, read_config(path), info.get("observation_version", 1))
    if not weights:
        return config, None

    def damaged(why: str) -> CheckpointError:
        return CheckpointError(f"export {path} is damaged or truncated: {why}; export it again")

    verify_files(path, ("model",), damaged, required=True)
    template = on_default_device(pretrained.model_template(config, network))  # a network that fails says so
    try:
        with ocp.Checkpointer(ocp.StandardCheckpointHandler()) as checkpointer:
            variables = checkpointer.restore((path / "model").absolute(), args=ocp.args.StandardRestore(template))
    except Exception as error:  # noqa: BLE001 - orbax and tensorstore raise many types: "cannot be read"
        raise damaged(first_line(error)) from None
    return config, dict(variables)
