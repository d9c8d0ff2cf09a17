"""azjax: AlphaZero in functional JAX.

`azjax.core` holds the parts a training loop is made of (search, self-play, value targets, replay, the loss and
the SGD step); `azjax.games` the games. The application's entry points below (`train`, `load_agent`, the config)
are imported on first use, so that `import azjax` or `import azjax.core` loads the core alone.

Shape letters used in docstrings across the package: B batch, T time (moves), A actions, H/W board height and
width, C channels, N table or buffer rows.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from azjax import core, games

if TYPE_CHECKING:  # what type checkers and editors see; at run time, __getattr__ imports them on first use
    from azjax.agent import Agent as Agent
    from azjax.agent import load_agent as load_agent
    from azjax.config import Config as Config
    from azjax.config import ConfigError as ConfigError
    from azjax.presets import get_config as get_config
    from azjax.trainer import train as train
    from azjax.training import init_run_state as init_run_state
    from azjax.training import make_train_iteration as make_train_iteration

_APPLICATION = {
    "Agent": "azjax.agent",
    "load_agent": "azjax.agent",
    "Config": "azjax.config",
    "ConfigError": "azjax.config",
    "get_config": "azjax.presets",
    "train": "azjax.trainer",
    "init_run_state": "azjax.training",
    "make_train_iteration": "azjax.training",
}

__all__ = ["core", "games", *sorted(_APPLICATION)]


def __getattr__(name: str):
    """The application's entry points, imported when first asked for."""
    if name in _APPLICATION:
        value = getattr(importlib.import_module(_APPLICATION[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'azjax' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_APPLICATION))
