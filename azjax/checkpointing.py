"""Orbax checkpoints of a run and of exported models, with the config as readable JSON beside them.

A run directory (`azjax train --out DIR`; its own files, config.json and metrics.jsonl, in `azjax.rundir`)::

    config.json                 the run's config, readable (and accepted by `azjax train --config`)
    metrics.jsonl               one JSON record per iteration
    checkpoints/<iteration>/
        model/                  the network's params and batch-norm statistics: all that inference needs (with
                                train.ema_decay, their moving average: the network that plays)
        run/                    the rest of the run state: optimizer, replay buffer, games in progress, key,
                                iteration (and with train.ema_decay the trained params and statistics)
        trees/                  with search.reuse_tree: each game's search tree (a cache: restored when the
                                search settings still fit it, otherwise the games go on with empty trees)
        meta/                   JSON: the config and that iteration's metrics
        manifest.json           the size and CRC-32 of every file above

An export directory (`azjax export RUN_DIR OUT`) holds `config.json`, `export.json` (where it came from and its
metrics), `model/` and `manifest.json`. `restore_model` loads either kind, as do `azjax.load_agent`, `azjax eval`
and `azjax play`.

Every write is atomic: a checkpoint or export is written under a temporary name and renamed into place once
complete (with its manifest), and JSON files likewise, so a process killed mid-write leaves the previous
checkpoint loadable. Reads check the files they need against the manifest before orbax opens them, so a truncated
or damaged file is a clear error, never silently wrong weights. Nothing is pickled: loading a checkpoint cannot
run code. Any problem with a directory, config or checkpoint raises `CheckpointError`, whose message says what is
wrong and what to do.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import zlib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from azjax import config as config_lib
from azjax import parallel, pretrained, tree_reuse
from azjax.rundir import CONFIG_FILE, CheckpointError, fsync_dir, game_unavailable, read_config, read_versioned_json
from azjax.rundir import fit_observation as fit_observation  # re-exported: where loaders set a saved version
from azjax.rundir import metrics_path as metrics_path  # re-exported: the run directory's files
from azjax.rundir import read_metrics as read_metrics
from azjax.rundir import truncate_metrics as truncate_metrics
from azjax.rundir import write_config as write_config
from azjax.training import RunState, init_run_state

CHECKPOINT_DIR = "checkpoints"
EXPORT_FILE = "export.json"
MANIFEST_FILE = "manifest.json"
CHECKPOINT_FORMAT = "azjax-checkpoint"
EXPORT_FORMAT = "azjax-export"
FORMAT_VERSION = 2  # 2: positions awaiting their game's end (replay readiness, pending), time progress, adamw
RESUMABLE_VERSION = 2  # older checkpoints still load their network (eval, play, export), but cannot resume
# The metric whose highest value marks the best checkpoint, kept beside the last k. A run that never logs it
# keeps the last k only.
DEFAULT_BEST_METRIC = "eval/score"
# Config fields that name a run: it resumes only with the same values. Any other field may change on resume as
# long as the checkpoint's arrays keep their layout (`compare_configs`).
IDENTITY_FIELDS = ("game", "seed", "network.module")

_TEMPORARY_MARKERS = (".orbax-checkpoint-tmp", ".deleting", ".tmp-", ".staging")
_REPLACED = ".replaced"  # a checkpoint set aside while a save replaces it (`CheckpointManager.save`)


# ------------------------------------------------------------------------------------------------------------
# Configs of checkpoints


def compare_configs(saved: config_lib.Config, requested: config_lib.Config) -> tuple[list[str], list[str]]:
    """The fields that differ between a checkpoint's config and a requested one, as "name: saved -> requested".

    Returns (structural, other). Structural differences make the checkpoint unusable with `requested`: a field
    that names the run (`IDENTITY_FIELDS`), or one that changes the layout of the checkpoint's arrays (tree
    structure, shapes or dtypes of `checkpoint_layout`: the network's architecture, the number of games, the
    replay capacity, the optimizer, the replay's reply targets and surprise, ...). Where the layouts differ, the
    fields that change it on their own are named, else every differing one. The others (learning rate, search
    settings, compute dtype, ...) only change how training goes on. The number of iterations is not reported: a
    run may always be extended. Traces both configs' initialisation (no compilation, no arrays).
    """
    old, new = _flatten(config_lib.to_dict(saved)), _flatten(config_lib.to_dict(requested))
    changed = [name for name in sorted(old.keys() | new.keys())
               if name != "num_iterations" and old.get(name) != new.get(name)]
    structural = {name for name in changed if name in IDENTITY_FIELDS}
    if changed and not structural and not _same_layout(saved, requested):
        structural = {name for name in changed if not _same_layout(saved, _with_field(saved, name, new[name]))}
        structural = structural or set(changed)  # no single field explains it: name them all
    lines = {name: f"{name}: {old.get(name)!r} -> {new.get(name)!r}" for name in changed}
    return ([lines[n] for n in changed if n in structural], [lines[n] for n in changed if n not in structural])


def check_resumable(saved: config_lib.Config, requested: config_lib.Config, run_dir: Path, step: int) -> list[str]:
    """Raises CheckpointError unless the checkpoint of iteration `step` in `run_dir`, saved with `saved`, can go
    on as `requested` (`compare_configs`); returns the other differences, as "name: saved -> requested"."""
    structural, other = compare_configs(saved, requested)
    if structural:
        raise CheckpointError(
            f"{Path(run_dir) / CHECKPOINT_DIR / str(step)} is a checkpoint of another game, seed or array layout "
            f"({'; '.join(structural)}, as checkpoint -> requested); resume the run with its own settings (`azjax "
            f"train --out {run_dir}` without --game, --preset or --config takes them from it), or pass a new --out "
            "directory"
        )
    return other


def checkpoint_layout(config: config_lib.Config):
    """The structure, shapes and dtypes of the arrays a checkpoint of `config` holds (its "model" and "run"
    items, as jax.ShapeDtypeStruct), without computing them. Kept search trees are not part of it: they are a
    cache, restored only where they fit."""
    return jax.eval_shape(lambda: _split(init_run_state(config)))


def _same_layout(a: config_lib.Config, b: config_lib.Config) -> bool:
    try:
        layouts = checkpoint_layout(a), checkpoint_layout(b)
    except config_lib.ConfigError:
        return False  # `b` is one field of a config swapped into another's, invalid on its own: not alike
    # The tree structures as text: jaxlib's type stubs leave PyTreeDef's own == untyped.
    left, right = ((str(treedef), [(x.shape, x.dtype) for x in leaves])
                   for leaves, treedef in map(jax.tree_util.tree_flatten, layouts))
    return left == right


def _with_field(config: config_lib.Config, name: str, value) -> config_lib.Config:
    """`config` with the dotted field `name` set to `value`, unvalidated."""
    section, _, field = name.rpartition(".")
    if not section:
        return dataclasses.replace(config, **{field: value})
    return dataclasses.replace(config, **{section: dataclasses.replace(getattr(config, section), **{field: value})})


# ------------------------------------------------------------------------------------------------------------
# The checkpoints of a run


class CheckpointManager:
    """The checkpoints of a run directory: save, restore, and keep the last `keep` plus the best.

    The best checkpoint is the one whose saved metrics have the highest `best_metric` (e.g. "eval/score"); if no
    checkpoint has that metric, only the last `keep` are kept. One process writes a run directory at a time.
    """

    def __init__(self, run_dir: str | Path, *, keep: int = 3, best_metric: str | None = DEFAULT_BEST_METRIC):
        if not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep must be a whole number >= 1, got {keep!r}")
        self.run_dir = Path(run_dir)
        self.directory = self.run_dir / CHECKPOINT_DIR
        self.keep = keep
        self.best_metric = best_metric
        self._meta: dict[int, dict] = {}

    def steps(self) -> list[int]:
        """The iterations with a complete checkpoint, oldest first."""
        if not self.directory.is_dir():
            return []
        return sorted(int(p.name) for p in self.directory.iterdir() if p.name.isdigit() and p.is_dir())

    def latest_step(self) -> int | None:
        """The newest checkpoint's iteration, or None."""
        steps = self.steps()
        return steps[-1] if steps else None

    def best_step(self) -> int | None:
        """The checkpoint with the highest `best_metric` (the newest of equals), or None if none has it."""
        scored = [(value, step) for step in self.steps() if (value := self._score(step)) is not None]
        return max(scored)[1] if scored else None

    def is_new_best(self, metrics: dict) -> bool:
        """Whether `metrics` (an iteration's record) beats every saved checkpoint on `best_metric`."""
        value = _finite_or_none(metrics.get(self.best_metric)) if self.best_metric else None
        if value is None:
            return False
        best = self.best_step()
        return best is None or value > self._score(best)  # type: ignore[operator]

    def meta(self, step: int) -> dict:
        """The JSON saved with a checkpoint: format, iteration, config and metrics ({} if absent)."""
        if step not in self._meta:
            path = self._step_dir(step) / "meta" / "metadata"
            _verify_files(self._step_dir(step), ("meta",), lambda why: self._unreadable(step, why), required=False)
            if not path.is_file():
                return {}  # a checkpoint written before checkpoints carried their config and a manifest
            try:
                meta = json.loads(path.read_text())
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
                raise self._unreadable(step, f"its meta/metadata file is damaged ({error})") from None
            if not isinstance(meta, dict) or meta.get("format") != CHECKPOINT_FORMAT:
                raise self._unreadable(step, "its meta/metadata file is not an azjax checkpoint's")
            if meta.get("version", 0) > FORMAT_VERSION:
                raise CheckpointError(
                    f"{self._step_dir(step)} was written by a newer azjax (format {meta['version']}); upgrade azjax"
                )
            self._meta[step] = meta
        return self._meta[step]

    def config(self, step: int) -> config_lib.Config:
        """The config a checkpoint was saved with (from the checkpoint itself, else the run's config.json), its
        `observation_version` the one its network was trained on (`fit_observation`)."""
        return fit_observation(self._step_dir(step), self._saved_config(step),
                               self.meta(step).get("observation_version", 1))

    def _saved_config(self, step: int) -> config_lib.Config:
        saved = self.meta(step).get("config")
        if saved is None:
            return read_config(self.run_dir)
        try:
            return config_lib.from_dict(saved)
        except config_lib.UnknownGameError as error:
            raise game_unavailable(self.run_dir, error) from None
        except config_lib.UnknownFieldError as error:
            # Its files passed their checksums: a newer azjax, with a field added since, wrote it. Keep it.
            raise CheckpointError(
                f"{self._step_dir(step)} was saved with a config field this azjax does not have ({error}), so a "
                "newer azjax wrote it; its files are untouched: upgrade azjax to read it"
            ) from None
        except config_lib.ConfigError as error:
            # Its files passed their checksums: an azjax whose checks allowed that value wrote it. Keep it.
            raise CheckpointError(
                f"{self._step_dir(step)} was saved with a config this azjax rejects ({error}), so another azjax "
                "version wrote it; its files are untouched: keep it, and read it with the azjax that wrote it"
            ) from None

    def save(self, run_state: RunState, config: config_lib.Config, metrics: dict | None = None, *,
             replace: bool = False) -> Path:
        """Saves the run state under its iteration number, then drops checkpoints no longer kept.

        With `replace`, a checkpoint of the same iteration (saved before its evaluation, say) is replaced by this
        one once this one is complete; a save killed midway leaves one of the two in place, never neither.

        Raises CheckpointError, writing nothing, if the network's parameters are not finite or that iteration is
        already saved (without `replace`). Returns the checkpoint's directory.
        """
        step = int(run_state.iteration)
        path = self._step_dir(step)
        if path.exists() and not replace:
            raise CheckpointError(f"{path} already exists; iteration {step} is already saved")
        model, run = _split(run_state)
        if not _all_finite((model, run.get("trained"))):  # the trained weights too, where the model is an average
            raise CheckpointError(
                f"not saving iteration {step}: the network's parameters are not finite (the last good checkpoint, "
                f"iteration {self.latest_step()}, is kept)"
            )
        meta = {
            "format": CHECKPOINT_FORMAT,
            "version": FORMAT_VERSION,
            "iteration": step,
            "config": config_lib.to_dict(config),
            "metrics": {k: v for k, v in (metrics or {}).items() if isinstance(v, int | float)},
            "key_impl": str(jax.random.key_impl(run_state.key)),
            "observation_version": observation_version(config),
        }
        primary = parallel.is_primary()  # over several processes, all write their shards, process 0 the rest
        if primary:
            self._remove_temporaries()
            self.directory.mkdir(parents=True, exist_ok=True)
        parallel.sync(f"azjax-checkpoint-{step}-start")
        items = dict(model=ocp.args.StandardSave(model), run=ocp.args.StandardSave(run), meta=ocp.args.JsonSave(meta))
        if run_state.selfplay.tree is not None:
            items["trees"] = ocp.args.StandardSave(_tree_item(run_state.selfplay.tree))
        args = ocp.args.Composite(**items)
        # orbax writes atomically into `staging`; the manifest joins it, and one rename publishes both.
        staging = self.directory / f".{step}.staging"
        with ocp.Checkpointer(ocp.CompositeCheckpointHandler()) as checkpointer:
            checkpointer.save(staging.absolute(), args=args)
        if primary:
            _write_manifest(staging)
            replaced = path.with_name(f".{step}{_REPLACED}")
            if path.exists():  # set aside, not deleted, until the new one is in place (`_remove_temporaries`)
                shutil.rmtree(replaced, ignore_errors=True)
                path.rename(replaced)
            staging.rename(path)
            fsync_dir(self.directory)
            shutil.rmtree(replaced, ignore_errors=True)
        self._meta[step] = meta
        if primary:
            self._prune()
        parallel.sync(f"azjax-checkpoint-{step}-done")  # nobody reads the checkpoint before it is in place
        return path

    def restore(self, config: config_lib.Config, step: int | None = None, *, network=None) -> RunState:
        """The run state of the latest checkpoint (or of `step`), checked against `config` and its manifest;
        `network`: the module it was trained with where it is not the config's (`init_run_state(network=...)`)."""
        step = self._resolve(step)
        saved = self.config(step)
        check_resumable(saved, config, self.run_dir, step)
        version = self.meta(step).get("version", 0)
        if version < RESUMABLE_VERSION:
            raise CheckpointError(
                f"{self._step_dir(step)} was written by an older azjax (format {version}), whose run state lacks the "
                "positions that wait in replay for their game to end: it cannot resume training, but its network "
                "still plays, evaluates and exports; start a new run in another directory (--out), optionally with "
                "this one's config (--config " + str(self.run_dir / CONFIG_FILE) + ")"
            )
        fresh, (model, run) = jax.eval_shape(
            lambda: (lambda s: (s, _split(s)))(init_run_state(config, network=network)))
        restored = self._restore_items(step, model=model, run=run)
        model, run = restored["model"], restored["run"]
        trained = run.get("trained", model)
        train_state = fresh.train_state.replace(
            params=trained["params"], batch_stats=trained["batch_stats"], opt_state=run["opt_state"], step=run["step"],
            average=model if "trained" in run else None,
        )
        key_impl = self.meta(step).get("key_impl")  # None for checkpoints older than this field: the default
        games = run["selfplay"]
        if not saved.selfplay.keep_unfinished:  # azjax before 934dcbe counted positions it never stored: none wait
            games = games.replace(pending=jnp.zeros_like(games.pending))
        if fresh.selfplay.tree is not None:
            num_actions = fresh.selfplay.tree.tree.children_index.shape[-1]
            games = games.replace(tree=self._restore_trees(step, saved, config, games, num_actions))
        return RunState(
            train_state=train_state,
            selfplay=games,
            replay=run["replay"],
            key=jax.random.wrap_key_data(run["key"], impl=key_impl),
            iteration=run["iteration"],
            time_progress=run["time_progress"],
        )

    def _restore_trees(self, step: int, saved: config_lib.Config, config: config_lib.Config, games,
                       num_actions: int) -> tree_reuse.KeptTree:
        """The games' kept search trees: the checkpoint's, if it has them in the shape `config` asks for; else
        empty ones (the trees are a cache of search results: the games go on, their next searches start fresh)."""
        empty = tree_reuse.empty(games.game_state, num_actions, config.search.capacity, config.search.num_simulations)
        if not ((self._step_dir(step) / "trees").is_dir() and saved.search.reuse_tree
                and saved.search.capacity == config.search.capacity):
            return empty
        item = self._restore_items(step, trees=jax.eval_shape(lambda: _tree_item(empty)))["trees"]
        return empty.replace(tree=empty.tree.replace(**item["tree"]), nodes=item["nodes"])

    def restore_model(self, step: int | None = None, *, network=None) -> tuple[config_lib.Config, dict]:
        """A checkpoint's config and network variables ({"params", "batch_stats"}: the moving average where the run
        keeps one, `train.ema_decay`) of `network` (default: the config's), checked against its manifest."""
        step = self._resolve(step)
        config = self.config(step)
        restored = self._restore_items(step, model=pretrained.model_template(config, network))
        return config, dict(restored["model"])

    # -- internals --------------------------------------------------------------------------------------------

    def _step_dir(self, step: int) -> Path:
        return self.directory / str(step)

    def _resolve(self, step: int | None) -> int:
        steps = self.steps()
        if not steps:
            raise CheckpointError(
                f"{self.run_dir} has no checkpoint yet; train longer (checkpoints are written every "
                "--checkpoint-every iterations and when training stops) or pass another run directory"
            )
        if step is None:
            return steps[-1]
        if step not in steps:
            raise CheckpointError(
                f"{self.run_dir} has no checkpoint of iteration {step}; it has {', '.join(map(str, steps))}"
            )
        return step

    def _score(self, step: int) -> float | None:
        if not self.best_metric:
            return None
        try:
            return _finite_or_none(self.meta(step).get("metrics", {}).get(self.best_metric))
        except CheckpointError:
            return None  # a damaged checkpoint is never the best

    def _restore_items(self, step: int, **templates) -> dict:
        """Restores the named items of a checkpoint into `templates`, once their files match the manifest."""
        path = self._step_dir(step)
        # Checkpoints that carry their config also carry a manifest; older ones have neither.
        required = (path / "meta").exists()
        _verify_files(path, tuple(templates), lambda why: self._unreadable(step, why), required=required)
        args = ocp.args.Composite(
            **{name: ocp.args.StandardRestore(_on_default_device(t)) for name, t in templates.items()}
        )
        try:
            with ocp.Checkpointer(ocp.CompositeCheckpointHandler()) as checkpointer:
                restored = checkpointer.restore(path.absolute(), args=args)
        except Exception as error:  # noqa: BLE001 - orbax and tensorstore raise many types: "cannot be read"
            if required and "not compatible with the stored shape" in str(error):  # orbax's words for it
                raise CheckpointError(
                    f"checkpoint {path} holds arrays of other shapes than its config gives today "
                    f"({_first_line(error).split('. ')[0]}): the game (its observation_shape or num_actions) or the "
                    "network's code changed since it was saved; its files are intact: keep it, and read it with the "
                    "code that trained it (for a game of your own, the game as it was then)"
                ) from None
            if required:  # its bytes are verified: not damaged, so never advise deleting it
                raise CheckpointError(
                    f"checkpoint {path} could not be read, though its files are intact (they match its manifest's "
                    f"checksums): {_first_line(error)}; keep it: read it with the azjax and orbax versions that "
                    "wrote it, or report this"
                ) from None
            raise self._unreadable(step, _first_line(error)) from None
        return {name: restored[name] for name in templates}

    def _unreadable(self, step: int, why: str) -> CheckpointError:
        """The error for a checkpoint whose bytes fail verification (or, older than manifests, cannot be read)."""
        older = [s for s in self.steps() if s < step]
        advice = (
            f"delete {self._step_dir(step)} to use the previous checkpoint (iteration {older[-1]})"
            if older
            else "restore it from a backup or train again"
        )
        return CheckpointError(f"checkpoint {self._step_dir(step)} is damaged or truncated: {why}; {advice}")

    def _prune(self) -> None:
        steps = self.steps()
        kept = set(steps[-self.keep :])
        best = self.best_step()
        if best is not None:
            kept.add(best)
        for step in steps:
            if step not in kept:
                _remove_dir(self._step_dir(step))
                self._meta.pop(step, None)

    def _remove_temporaries(self) -> None:
        """Removes what a killed save or delete left behind (never a complete checkpoint); a checkpoint set aside
        by a replacing save killed before the new one was in place goes back."""
        if self.directory.is_dir():
            for path in self.directory.iterdir():
                if path.name.endswith(_REPLACED):
                    original = self.directory / path.name[1:].removesuffix(_REPLACED)
                    if original.exists():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.rename(original)
                    continue
                if any(marker in path.name for marker in _TEMPORARY_MARKERS):
                    shutil.rmtree(path, ignore_errors=True)


def latest_iteration(run_dir: Path) -> int | None:
    """The iteration of the newest checkpoint in `run_dir`, or None."""
    return CheckpointManager(run_dir).latest_step()


# ------------------------------------------------------------------------------------------------------------
# Loading models (run directories and exports) and exporting


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
    if pretrained.is_agent_directory(path):  # an agent packaged for shipping (experiments/pretrain.py --out)
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
        return manager.config(manager._resolve(iteration)), None
    return manager.restore_model(iteration, network=network)


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
    step = manager._resolve(iteration)
    config, variables = manager.restore_model(step)
    info = {
        "format": EXPORT_FORMAT,
        "version": FORMAT_VERSION,
        "source": str(run_dir.absolute()),
        "iteration": step,
        "metrics": manager.meta(step).get("metrics", {}),
        "observation_version": manager.meta(step).get("observation_version", 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    for leftover in out.parent.glob(f".{out.name}.*"):  # what a killed export left behind
        if any(marker in leftover.name for marker in _TEMPORARY_MARKERS):
            shutil.rmtree(leftover, ignore_errors=True)
    staging = out.parent / f".{out.name}.tmp-{os.getpid()}"
    staging.mkdir()
    try:
        with ocp.Checkpointer(ocp.StandardCheckpointHandler()) as checkpointer:
            checkpointer.save((staging / "model").absolute(), args=ocp.args.StandardSave(variables))
        (staging / CONFIG_FILE).write_text(config_lib.to_json(config) + "\n")
        (staging / EXPORT_FILE).write_text(json.dumps(info, indent=2) + "\n")
        _write_manifest(staging, items=("model",))  # config.json stays editable, like a run's
        if out.exists():
            old = out.parent / f".{out.name}.deleting-{os.getpid()}"
            out.rename(old)
            staging.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return info


def observation_version(config: config_lib.Config) -> int:
    """The observation version that `config`'s network reads (its `observation_version`, or its game's current
    one: `Game.observation_version`)."""
    return config.make_game().observation_version


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

    _verify_files(path, ("model",), damaged, required=True)
    template = _on_default_device(pretrained.model_template(config, network))  # a network that fails says so
    try:
        with ocp.Checkpointer(ocp.StandardCheckpointHandler()) as checkpointer:
            variables = checkpointer.restore((path / "model").absolute(), args=ocp.args.StandardRestore(template))
    except Exception as error:  # noqa: BLE001 - orbax and tensorstore raise many types: "cannot be read"
        raise damaged(_first_line(error)) from None
    return config, dict(variables)


# ------------------------------------------------------------------------------------------------------------
# Helpers


def _tree_item(kept: tree_reuse.KeptTree) -> dict:
    """The "trees" item of a checkpoint: kept search trees as a plain dict of arrays (and game states)."""
    tree = kept.tree
    fields = {name: getattr(tree, name) for name in (*tree_reuse.NODE_FIELDS, "embeddings")}
    return {"tree": fields, "nodes": kept.nodes}


def _split(run_state: RunState) -> tuple[dict, dict]:
    """The run state as the "model" and "run" items of a checkpoint (plain trees of arrays); kept search trees go
    to their own item (`_tree_item`)."""
    model = dict(run_state.train_state.play_variables)  # the network that plays: an agent's, an export's
    run = {
        # With a moving average (train.ema_decay) the model is the average, and the trained variables go on here.
        **({"trained": run_state.train_state.variables} if run_state.train_state.average is not None else {}),
        "opt_state": run_state.train_state.opt_state,
        "step": run_state.train_state.step,
        "selfplay": run_state.selfplay.replace(tree=None),
        "replay": run_state.replay,
        "key": jax.random.key_data(run_state.key),
        "iteration": run_state.iteration,
        "time_progress": run_state.time_progress,
    }
    return model, run


def _on_default_device(template):
    """Abstract arrays on the default device, so that a checkpoint saved sharded over several devices loads on
    any machine (callers reshard as they need)."""
    sharding = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
    return jax.tree_util.tree_map(lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding), template)


def _all_finite(tree) -> bool:
    """Whether every floating-point array of `tree` is free of NaN and infinity (checked on the host)."""
    return all(
        bool(np.isfinite(x).all())
        for x in map(np.asarray, jax.tree_util.tree_leaves(tree))
        if np.issubdtype(x.dtype, np.floating)
    )


def _crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    return crc


def _write_manifest(directory: Path, items: tuple[str, ...] | None = None) -> None:
    """Writes `manifest.json`: the size and CRC-32 of every file (under `items` only, if given), fsynced."""
    files = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        name = path.relative_to(directory).as_posix()
        if name != MANIFEST_FILE and (items is None or name.split("/")[0] in items):
            files[name] = {"size": path.stat().st_size, "crc32": _crc32(path)}
    with open(directory / MANIFEST_FILE, "w") as f:
        json.dump({"files": files}, f, indent=1)
        f.flush()
        os.fsync(f.fileno())


def _verify_files(directory: Path, items: tuple[str, ...], error, *, required: bool) -> None:
    """Raises `error(why)` unless every file the manifest lists under `items` is there, whole and unchanged.

    Without a manifest, raises if one is `required`, else checks nothing (a checkpoint older than manifests).
    """
    manifest = directory / MANIFEST_FILE
    if not manifest.is_file():
        if required:
            raise error(f"its {MANIFEST_FILE} is missing")
        return
    try:
        files = json.loads(manifest.read_text())["files"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as caught:
        raise error(f"its {MANIFEST_FILE} is damaged ({caught})") from None
    listed = [name for name in files if name.split("/")[0] in items]
    if not listed:
        raise error(f"its {MANIFEST_FILE} lists no files of {', '.join(items)}")
    for name in listed:
        path, expected = directory / name, files[name]
        if not path.is_file():
            raise error(f"{name} is missing")
        size = path.stat().st_size
        if size != expected["size"]:
            raise error(f"{name} has {size} bytes instead of {expected['size']}")
        if _crc32(path) != expected["crc32"]:
            raise error(f"{name} does not match its checksum")


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _finite_or_none(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    line = text[0] if text else type(error).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def _remove_dir(path: Path) -> None:
    """Deletes a checkpoint: first renamed (atomic), so a killed delete never leaves a half checkpoint listed."""
    doomed = path.with_name(f"{path.name}.deleting")
    shutil.rmtree(doomed, ignore_errors=True)
    path.rename(doomed)
    shutil.rmtree(doomed, ignore_errors=True)

