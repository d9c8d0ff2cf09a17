"""Which configs a run's checkpoint can go on under: the arrays it holds (`split_run_state`, `checkpoint_layout`)
and the config fields that name a run or change those arrays (`compare_configs`). Any other field may change on
resume; `checkpointing.check_resumable` turns the differences into the error a resume raises.
"""

from __future__ import annotations

import dataclasses

import jax

from azjax import config as config_lib
from azjax.training import RunState, init_run_state

# Config fields that name a run: it resumes only with the same values. Any other field may change on resume as
# long as the checkpoint's arrays keep their layout (`compare_configs`).
IDENTITY_FIELDS = ("game", "seed", "network.module")


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


def checkpoint_layout(config: config_lib.Config):
    """The structure, shapes and dtypes of the arrays a checkpoint of `config` holds (its "model" and "run"
    items, as jax.ShapeDtypeStruct), without computing them. Kept search trees are not part of it: they are a
    cache, restored only where they fit."""
    return jax.eval_shape(lambda: split_run_state(init_run_state(config)))


def split_run_state(run_state: RunState) -> tuple[dict, dict]:
    """The run state as the "model" and "run" items of a checkpoint (plain trees of arrays); kept search trees go
    to their own item (`checkpointing.CheckpointManager.save`)."""
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


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
