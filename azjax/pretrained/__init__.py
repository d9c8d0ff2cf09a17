"""Trained agents shipped inside the package: `pretrained:GAME` wherever an agent or a run directory goes.

    agent = azjax.load_agent("pretrained:connect_four")     # the same Agent API as a run's
    azjax play connect_four                                  # play it in the terminal
    azjax eval pretrained:connect_four mcts:1600 --games 200
    azjax train --game connect_four --init-from pretrained:connect_four
    azjax pretrained                                         # the list, with each agent's measured strength

Each agent is a directory `azjax/pretrained/<game>/` of three files:

    config.json     the config that trained it (network shape, search settings), as a run's config.json
    model.msgpack   the network's variables ({"params", "batch_stats"}) as msgpack (flax.serialization): plain
                    arrays, so loading it runs no code (no pickle)
    card.json       its model card: how it was trained (command, commit, machine, wall time, iterations), how it
                    plays ("play": config overrides applied on loading, e.g. {"search.num_simulations": 128}: a
                    stronger search than self-play could afford; `az:pretrained:GAME:SIMS` chooses another), the
                    observation version of the game that trained it, the SHA-256 of model.msgpack, and its strength
                    as measured, each figure with the command that reproduces it

`experiments/tools/pretrain.py GAME` trains one, writes these files and measures it. Loading checks the checksum and
every array's shape against the config before a network sees them (`CheckpointError` otherwise).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jax
import numpy as np
from flax import serialization

from azjax import config as config_lib
from azjax.rundir import CheckpointError, fit_observation, read_versioned_json

PREFIX = "pretrained:"
CARD_FILE = "card.json"
MODEL_FILE = "model.msgpack"
CONFIG_FILE = "config.json"
CARD_FORMAT = "azjax-pretrained"
CARD_VERSION = 1
DIRECTORY = Path(__file__).parent


def is_pretrained(spec: str | Path) -> bool:
    """Whether `spec` names a shipped agent ("pretrained:GAME")."""
    return str(spec).startswith(PREFIX)


def names() -> list[str]:
    """The games with a shipped agent, sorted."""
    return sorted(p.name for p in DIRECTORY.iterdir() if (p / CARD_FILE).is_file())


def card(game: str) -> dict:
    """The model card of a game's shipped agent (see the module docstring); CheckpointError if there is none."""
    return read_card(_directory(game))


def is_agent_directory(path: Path) -> bool:
    """Whether `path` is a directory in the shipped agents' format (written by `write`), wherever it lies."""
    return (path / CARD_FILE).is_file() and (path / MODEL_FILE).is_file()


def read_card(directory: Path) -> dict:
    """The model card in `directory`, checked to be one."""
    return read_versioned_json(directory / CARD_FILE, file_format=CARD_FORMAT, version=CARD_VERSION,
                               fix="reinstall azjax")


def restore(spec: str) -> tuple[config_lib.Config, dict, int]:
    """The config, network variables ({"params", "batch_stats"}) and observation version of a shipped agent.

    Args:
      spec: "pretrained:GAME" (or just the game's name).
    Returns:
      The config, the variables and the observation version of the game that trained the network.
    Raises:
      CheckpointError: no agent is shipped for the game, or its files are damaged (the message says which).
    """
    return restore_directory(_directory(str(spec).removeprefix(PREFIX)))


def restore_config(spec: str) -> config_lib.Config:
    """The config `restore` gives, read without the network's weights."""
    return directory_config(_directory(str(spec).removeprefix(PREFIX)))


def directory_config(directory: Path) -> config_lib.Config:
    """The config of an agent directory (`restore_directory`'s, without reading the weights): it observes the
    version the network was trained on (`rundir.fit_observation`) and plays with the card's "play" settings."""
    return _directory_config(directory, read_card(directory))


def _directory_config(directory: Path, info: dict) -> config_lib.Config:
    config = config_lib.from_json((directory / CONFIG_FILE).read_text())
    config = fit_observation(directory, config, int(info["observation_version"]))
    return config_lib.with_overrides(config, info.get("play", {}))  # e.g. more simulations than in training


def restore_directory(directory: Path) -> tuple[config_lib.Config, dict, int]:
    """`restore` of an agent directory anywhere (as `write` leaves it, e.g. before it is copied into the package);
    the config as `directory_config` gives it."""
    info = read_card(directory)
    game = info.get("game", directory.name)
    data = (directory / MODEL_FILE).read_bytes()
    if hashlib.sha256(data).hexdigest() != info.get("sha256"):
        raise CheckpointError(f"{directory / MODEL_FILE} does not match its model card's checksum; reinstall azjax")
    variables = serialization.msgpack_restore(data)
    config = _directory_config(directory, info)
    mismatch = first_mismatch(model_template(config), variables)
    if mismatch is not None:
        raise CheckpointError(f"the shipped agent of {game} does not fit its config: {mismatch}; reinstall azjax")
    return config, {name: variables[name] for name in ("params", "batch_stats")}, int(info["observation_version"])


def write(directory: str | Path, config: config_lib.Config, variables: dict, info: dict) -> dict:
    """Writes a shipped agent's three files into `directory` (created); returns the card as written.

    `info` is the card's content apart from what this adds: format, version, game, the checksum and sizes.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    host = jax.tree.map(np.asarray, {name: variables[name] for name in ("params", "batch_stats")})
    data = serialization.msgpack_serialize(host)
    (directory / MODEL_FILE).write_bytes(data)
    (directory / CONFIG_FILE).write_text(config_lib.to_json(config) + "\n")
    full = {
        "format": CARD_FORMAT,
        "version": CARD_VERSION,
        "game": config.game,
        **info,
        "sha256": hashlib.sha256(data).hexdigest(),
        "model_bytes": len(data),
        "parameters": int(sum(np.size(x) for x in jax.tree.leaves(host["params"]))),
    }
    (directory / CARD_FILE).write_text(json.dumps(full, indent=2) + "\n")
    return full


def model_template(config: config_lib.Config, network=None) -> dict:
    """The shapes and dtypes of the network variables ({"params", "batch_stats"}) of `network` (default: the
    config's, `networks.network_of`), computed abstractly.

    Raises:
      networks.NetworkError: the config names a network of one's own that cannot be built here.
    """
    from azjax.networks import init_variables, network_of

    game = config.make_game()
    network = network if network is not None else network_of(config, game)
    return jax.eval_shape(lambda: init_variables(network, jax.random.key(0), game.observation_shape))


def first_mismatch(template: dict, variables: dict) -> str | None:
    """Where `variables` do not fit `template` (the first parameter missing, extra or of another shape), in words,
    or None if every array is there with its shape."""
    want, have = _named_leaves(template), _named_leaves(variables)
    for name, leaf in want.items():
        if name not in have:
            return f"it has no parameter {name} (shape {tuple(leaf.shape)} here)"
        if tuple(np.shape(have[name])) != tuple(leaf.shape):
            return f"parameter {name} has shape {tuple(np.shape(have[name]))} there and {tuple(leaf.shape)} here"
    extra = sorted(set(have) - set(want))
    if extra:
        return f"it has a parameter {extra[0]} that this network does not"
    return None


def _named_leaves(variables: dict) -> dict:
    """{"params/Conv_0/kernel": array, ...}: the params first, then the batch statistics (and anything else)."""
    leaves = jax.tree_util.tree_flatten_with_path(variables)[0]
    named = {"/".join(str(getattr(k, "key", k)) for k in path): leaf for path, leaf in leaves}
    return dict(sorted(named.items(), key=lambda item: not item[0].startswith("params/")))


def describe(game: str) -> str:
    """A few lines on a shipped agent: how it was trained and its measured strength."""
    info = card(game)
    training = info.get("training", {})
    play = ", ".join(f"{name} {value}" for name, value in info.get("play", {}).items())
    lines = [
        (f"pretrained:{game} (plays with {play}): " if play else f"pretrained:{game}: ") +
        f"{info.get('parameters', 0):,} parameters ({info.get('model_bytes', 0) / 1e6:.1f} MB), "
        f"trained {training.get('wall_seconds', 0) / 60:.0f} min ({training.get('iterations', '?')} iterations) on "
        f"{training.get('machine', 'an unrecorded machine')}, {training.get('date', '')}"
    ]
    for figure in info.get("strength", []):
        lines.append(f"    {figure['summary']}")
    if not info.get("strength"):
        lines.append("    strength not measured yet")
    return "\n".join(lines)


def missing_message(game: str) -> str:
    """What to say when `game` has no shipped agent: which games have one and how to train one."""
    shipped = ", ".join(names()) or "none"
    return (f"no trained agent ships with azjax for {game} (shipped: {shipped}); train one with "
            f"`azjax train --game {game}` and pass its run directory instead")


def _directory(game: str) -> Path:
    directory = DIRECTORY / game
    if not game or "/" in game or game.startswith(".") or not (directory / CARD_FILE).is_file():
        raise CheckpointError(missing_message(game))
    return directory
