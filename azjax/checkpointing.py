"""Orbax checkpoints of a run, with the config as readable JSON beside them, and resuming from them.

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
        manifest.json           the size and CRC-32 of every file above (`azjax.manifest`)

A checkpoint resumes under a config that names the same run and keeps its arrays' layout (`check_resumable`;
`azjax.compatibility` says which fields do). Exports of one checkpoint, and loading a network from a run, an export
or a shipped agent, are `azjax.exports`.

Every write is atomic: a checkpoint is written under a temporary name and renamed into place once complete (with
its manifest), and JSON files likewise, so a process killed mid-write leaves the previous checkpoint loadable.
Reads check the files they need against the manifest before orbax opens them, so a truncated or damaged file is a
clear error, never silently wrong weights. Nothing is pickled: loading a checkpoint cannot run code. Any problem
with a directory, config or checkpoint raises `CheckpointError`, whose message says what is wrong and what to do.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from azjax import config as config_lib
from azjax import parallel, pretrained, tree_reuse
from azjax.compatibility import compare_configs, split_run_state
from azjax.manifest import verify_files, write_manifest
from azjax.rundir import CONFIG_FILE, CheckpointError, fit_observation, fsync_dir, game_unavailable, read_config
from azjax.text import first_line
from azjax.training import RunState, init_run_state

CHECKPOINT_DIR = "checkpoints"
CHECKPOINT_FORMAT = "azjax-checkpoint"
FORMAT_VERSION = 2  # 2: positions awaiting their game's end (replay readiness, pending), time progress, adamw
RESUMABLE_VERSION = 2  # older checkpoints still load their network (eval, play, export), but cannot resume
# The metric whose highest value marks the best checkpoint, kept beside the last k. A run that never logs it
# keeps the last k only.
DEFAULT_BEST_METRIC = "eval/score"

# What a killed save, delete or export leaves behind (never a complete checkpoint or export).
TEMPORARY_MARKERS = (".orbax-checkpoint-tmp", ".deleting", ".tmp-", ".staging")
_REPLACED = ".replaced"  # a checkpoint set aside while a save replaces it (`CheckpointManager.save`)


# ------------------------------------------------------------------------------------------------------------
# What a checkpoint records and resumes under


def check_resumable(saved: config_lib.Config, requested: config_lib.Config, run_dir: Path, step: int) -> list[str]:
    """Raises CheckpointError unless the checkpoint of iteration `step` in `run_dir`, saved with `saved`, can go
    on as `requested` (`compatibility.compare_configs`); returns the other differences, as "name: saved ->
    requested"."""
    structural, other = compare_configs(saved, requested)
    if structural:
        raise CheckpointError(
            f"{Path(run_dir) / CHECKPOINT_DIR / str(step)} is a checkpoint of another game, seed or array layout "
            f"({'; '.join(structural)}, as checkpoint -> requested); resume the run with its own settings (`azjax "
            f"train --out {run_dir}` without --game, --preset or --config takes them from it), or pass a new --out "
            "directory"
        )
    return other


def observation_version(config: config_lib.Config) -> int:
    """The observation version that `config`'s network reads (its `observation_version`, or its game's current
    one: `Game.observation_version`): what a checkpoint records beside it."""
    return config.make_game().observation_version


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

    def resolve(self, step: int | None) -> int:
        """The iteration `step` (None: the latest), once a checkpoint of it is there; else CheckpointError."""
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
            verify_files(self._step_dir(step), ("meta",), lambda why: self._unreadable(step, why), required=False)
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
        model, run = split_run_state(run_state)
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
            write_manifest(staging)
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
        step = self.resolve(step)
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
            lambda: (lambda s: (s, split_run_state(s)))(init_run_state(config, network=network)))
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
        step = self.resolve(step)
        config = self.config(step)
        restored = self._restore_items(step, model=pretrained.model_template(config, network))
        return config, dict(restored["model"])

    # -- internals --------------------------------------------------------------------------------------------

    def _step_dir(self, step: int) -> Path:
        return self.directory / str(step)

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
        verify_files(path, tuple(templates), lambda why: self._unreadable(step, why), required=required)
        args = ocp.args.Composite(
            **{name: ocp.args.StandardRestore(on_default_device(t)) for name, t in templates.items()}
        )
        try:
            with ocp.Checkpointer(ocp.CompositeCheckpointHandler()) as checkpointer:
                restored = checkpointer.restore(path.absolute(), args=args)
        except Exception as error:  # noqa: BLE001 - orbax and tensorstore raise many types: "cannot be read"
            if required and "not compatible with the stored shape" in str(error):  # orbax's words for it
                raise CheckpointError(
                    f"checkpoint {path} holds arrays of other shapes than its config gives today "
                    f"({first_line(error).split('. ')[0]}): the game (its observation_shape or num_actions) or the "
                    "network's code changed since it was saved; its files are intact: keep it, and read it with the "
                    "code that trained it (for a game of your own, the game as it was then)"
                ) from None
            if required:  # its bytes are verified: not damaged, so never advise deleting it
                raise CheckpointError(
                    f"checkpoint {path} could not be read, though its files are intact (they match its manifest's "
                    f"checksums): {first_line(error)}; keep it: read it with the azjax and orbax versions that "
                    "wrote it, or report this"
                ) from None
            raise self._unreadable(step, first_line(error)) from None
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
                if any(marker in path.name for marker in TEMPORARY_MARKERS):
                    shutil.rmtree(path, ignore_errors=True)


def latest_iteration(run_dir: Path) -> int | None:
    """The iteration of the newest checkpoint in `run_dir`, or None."""
    return CheckpointManager(run_dir).latest_step()


# ------------------------------------------------------------------------------------------------------------
# Helpers


def on_default_device(template):
    """Abstract arrays on the default device, so that a checkpoint saved sharded over several devices loads on
    any machine (callers reshard as they need)."""
    sharding = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
    return jax.tree_util.tree_map(lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding), template)


def _tree_item(kept: tree_reuse.KeptTree) -> dict:
    """The "trees" item of a checkpoint: kept search trees as a plain dict of arrays (and game states)."""
    tree = kept.tree
    fields = {name: getattr(tree, name) for name in (*tree_reuse.NODE_FIELDS, "embeddings")}
    return {"tree": fields, "nodes": kept.nodes}


def _all_finite(tree) -> bool:
    """Whether every floating-point array of `tree` is free of NaN and infinity (checked on the host)."""
    return all(
        bool(np.isfinite(x).all())
        for x in map(np.asarray, jax.tree_util.tree_leaves(tree))
        if np.issubdtype(x.dtype, np.floating)
    )


def _finite_or_none(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _remove_dir(path: Path) -> None:
    """Deletes a checkpoint: first renamed (atomic), so a killed delete never leaves a half checkpoint listed."""
    doomed = path.with_name(f"{path.name}.deleting")
    shutil.rmtree(doomed, ignore_errors=True)
    path.rename(doomed)
    shutil.rmtree(doomed, ignore_errors=True)
