"""Starting a new run from another network's weights (`train(init_from=...)`, `azjax train --init-from`): the
settings that fit the source, and its weights checked against the new run's network."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp

from azjax import checkpointing, exports, pretrained
from azjax.config import Config


def warm_start_config(config: Config, source: Config, keep: frozenset[str] = frozenset()) -> tuple[Config, list[str]]:
    """The settings a new run that starts from `source`'s network (`train(init_from=...)`) should train with, and a
    line for each change; fields named in `keep` ("network.num_channels", ...: those a user set) stay as they are.
    `azjax train --init-from` applies this to the preset with the command line's options.

    - The network's shape is the source's (blocks, channels, heads), its precision (`compute_dtype`) `config`'s: the
      weights fit without a --network option.
    - The learning rate warms up until the replay buffer first fills (`replay_capacity` / (num_games x num_steps)
      iterations of `num_sgd_steps`), not over `warmup_steps` only: a fresh replay holds one iteration's positions,
      and the preset's peak rate on them undoes a trained network at once (measured:
      experiments/studies/presets/results/).
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
    saved, variables = exports.restore_model(source)
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

