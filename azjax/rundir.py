"""A run directory's own files, apart from its checkpoints (azjax.checkpointing):

    config.json      the run's config, readable JSON (and accepted by `azjax train --config`)
    metrics.jsonl    one JSON record per iteration

Writes are atomic (a temporary file renamed into place), so a process killed mid-write leaves the previous
version. `CheckpointError` is the one error of run directories, checkpoints and exports: its message says what is
wrong and what to do.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from azjax import config as config_lib

CONFIG_FILE = "config.json"


class CheckpointError(RuntimeError):
    """A run directory, export or checkpoint cannot be used; the message says why and what to do."""


def write_config(run_dir: Path, config: config_lib.Config) -> None:
    """Writes `config.json` into the run directory (creating it), atomically."""
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    write_text_atomic(Path(run_dir) / CONFIG_FILE, config_lib.to_json(config) + "\n")


def read_config(run_dir: Path) -> config_lib.Config:
    """The config of a run (or export) directory, validated; CheckpointError if missing or invalid."""
    run_dir = Path(run_dir)
    path = run_dir / CONFIG_FILE
    if not run_dir.is_dir():
        raise CheckpointError(f"{run_dir} is not a directory; pass the --out directory of a training run")
    if not path.is_file():
        raise CheckpointError(f"{run_dir} has no {CONFIG_FILE}; is it the directory of an azjax training run?")
    try:
        return config_lib.from_json(path.read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise CheckpointError(f"cannot read {path}: {error}") from None
    except config_lib.UnknownGameError as error:
        raise game_unavailable(run_dir, error) from None
    except config_lib.ConfigError as error:
        unknown_field = isinstance(error, config_lib.UnknownFieldError)  # a typo, or a field a newer azjax added
        fix = "fix that file, or upgrade azjax if a newer one wrote it" if unknown_field else "fix or restore that file"
        raise CheckpointError(f"{path} is not a valid azjax config: {error}; {fix}") from None


def read_versioned_json(path: Path, *, file_format: str, version: int, fix: str) -> dict:
    """A JSON file that names its format and version (an export's export.json, a model card): its content.

    Raises:
      CheckpointError: the file cannot be read or parsed, or is not of `file_format` ("...; {fix}"), or a newer
        azjax wrote it (a version above `version`).
    """
    try:
        info = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path} is damaged ({error}); {fix}") from None
    if not isinstance(info, dict) or info.get("format") != file_format:
        raise CheckpointError(f"{path} is not an {file_format} file; {fix}")
    if info.get("version", 0) > version:
        raise CheckpointError(f"{path} was written by a newer azjax (format {info['version']}); upgrade azjax")
    return info


def game_unavailable(run_dir: Path, error: config_lib.UnknownGameError) -> CheckpointError:
    """The error for a run (or export) whose files are fine but whose game cannot be loaded in this process. The
    game's error says why and what to do (for a missing module: where to run, PYTHONPATH), so this adds no advice of
    its own."""
    return CheckpointError(
        f"{run_dir} holds a run of a game that cannot be loaded here ({str(error).removeprefix('game: ')}); its "
        "files are untouched: try again once the game loads"
    )


def metrics_path(run_dir: Path) -> Path:
    """Where a run's per-iteration metrics go (JSON lines)."""
    return Path(run_dir) / "metrics.jsonl"


def read_metrics(run_dir: Path) -> list[dict]:
    """Every record of a run's metrics log (a line cut short by a killed process is skipped)."""
    path = metrics_path(run_dir)
    if not path.is_file():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def truncate_metrics(run_dir: Path, last_iteration: int) -> None:
    """Drops the metrics records after `last_iteration` (iterations a resumed run will redo)."""
    path = metrics_path(run_dir)
    if not path.is_file():
        return
    kept = [r for r in read_metrics(run_dir) if 0 < r.get("iteration", 0) <= last_iteration]
    write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in kept))


def write_text_atomic(path: Path, text: str) -> None:
    """Writes a file so that readers see the old or the new content, never a part."""
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(temporary, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    """Makes a rename inside `path` durable (where the platform allows it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fit_observation(source: str | Path, config: config_lib.Config, version: int) -> config_lib.Config:
    """`config`, saved in `source` with a network trained on observation `version` of its game, set to observe that
    version where the game's current one is another (`Config.observation_version`; as it was otherwise): a network
    keeps reading the planes it was trained on, where the game still builds them (`azjax.games.make_observing`).
    CheckpointError where it does not, or where the game cannot be built in this process."""
    import dataclasses

    from azjax import games  # late: the registry imports the games' modules

    try:
        current = games.make(config.game).observation_version
    except (ValueError, ImportError) as error:  # the game cannot be built in this process (a module, pgx missing)
        raise game_unavailable(Path(source), config_lib.UnknownGameError(str(error))) from None
    if version == current:
        return config if config.observation_version in (None, version) else dataclasses.replace(
            config, observation_version=None)
    try:
        games.make_observing(config.game, version)
    except games.ObservationVersionError:
        raise CheckpointError(
            f"{source} was trained on observation version {version} of {config.game}, but {config.game} observes "
            f"version {current} today and cannot build version {version}: its network would read input planes it "
            "never saw; use it with the azjax (or the game's code) that trained it, or train a new network"
        ) from None
    return dataclasses.replace(config, observation_version=version)
